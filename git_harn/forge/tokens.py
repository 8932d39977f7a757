"""Forge tokens: the operator's, never anyone else's [T5].

A token is read from the operator's environment (or, for GitHub, from
``gh auth token`` when gh is installed: gh is run for that and nothing
else), held in a ``Token`` whose ``str`` and ``repr`` never show it, sent
only in an HTTP header to the forge, and scrubbed from every text that
leaves this package (an error message, the forge's own words). It is never
put into the argv or the config of a git, nor written to a record or a log.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from git_harn.git.env import GITHUB_ENTERPRISE_VARS, GITHUB_VARS, LOCATION_VARS
from git_harn.proc import run_bounded

HIDDEN = "***"
GH_SECONDS = 10  # gh reads a file and answers: a gh that hangs gives no token
GITHUB_HOSTS = ("github.com", "api.github.com")
# The variables each forge's token is read from, first found wins, are
# git.env's (GITHUB_VARS …): the one list, which no child of git-harn gets.


class Token:
    """A secret that never prints itself."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str) -> None:
        self._value = value
        self.source = source  # where it was read (a variable's name, or "gh auth token"): no secret

    def reveal(self) -> str:
        """The token itself: for an HTTP header, nowhere else."""
        return self._value

    def __repr__(self) -> str:
        return f"Token(from {self.source})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a token is not pickled")


def scrub(text: str, tokens: Iterable[Token | None]) -> str:
    """``text`` with every token written ``***``."""
    for token in tokens:
        if token is not None and token.reveal():
            text = text.replace(token.reveal(), HIDDEN)
    return text


def from_env(names: Iterable[str], env: Mapping[str, str]) -> Token | None:
    """The first of ``names`` set (non-blank) in ``env``."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return Token(value, name)
    return None


def github_token(host: str, env: Mapping[str, str]) -> Token | None:
    """GitHub's token for ``host``: the environment's, else ``gh auth token``."""
    enterprise = host not in GITHUB_HOSTS and not host.endswith(".ghe.com")
    names = (*GITHUB_ENTERPRISE_VARS, *GITHUB_VARS) if enterprise else GITHUB_VARS
    return from_env(names, env) or gh_token(host, env)


def gh_token(host: str, env: Mapping[str, str]) -> Token | None:
    """What ``gh auth token --hostname <host>`` prints (None: no gh, or it has none).
    gh is run for this alone, with no shell and a time limit; its words are dropped."""
    gh = shutil.which("gh", path=env.get("PATH"))
    if gh is None:
        return None
    hostname = "github.com" if host in GITHUB_HOSTS else host
    # gh would print a variable's token back: it is asked for the one it keeps itself
    child = {k: v for k, v in env.items()
             if k not in (*LOCATION_VARS, *GITHUB_VARS, *GITHUB_ENTERPRISE_VARS)}
    done = run_bounded([gh, "auth", "token", "--hostname", hostname], Path.home() if Path.home().is_dir()
                       else Path("/"), timeout=GH_SECONDS, env=child)
    value = done.stdout.decode("utf-8", "replace").strip() if done.exit_code == 0 else ""
    return Token(value, "gh auth token") if value and value.isprintable() and " " not in value else None
