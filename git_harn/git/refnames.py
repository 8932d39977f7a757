"""Branch names: the one rule every command applies to a name it is given."""

from __future__ import annotations

import pygit2

from git_harn.errors import BadInput


def branch_name(name: str) -> str:
    """The short name of the branch ``name`` (``refs/heads/`` optional);
    BadInput unless git would accept it as a branch and it cannot pose as an option."""
    short = name.removeprefix("refs/heads/")
    if not short or short.startswith("-") or short == "HEAD" or not pygit2.reference_is_valid_name(
            f"refs/heads/{short}"):
        raise BadInput(f"invalid branch name: {name!r}")
    return short
