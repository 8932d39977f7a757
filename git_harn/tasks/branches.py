"""The branch under judgement: its ref, the base it is judged against, its worktree."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from git_harn.errors import BadInput
from git_harn.git import Oid, Repo
from git_harn.git.refnames import branch_name
from git_harn.git.remote import DEFAULT_REMOTE
from git_harn.git.worktrees import worktree_with_branch
from git_harn.notices import warn

DEFAULT_BASE = "main"  # the branch work starts from and lands on when none is named


@dataclass(frozen=True)
class Branch:
    name: str  # short name, e.g. roadmap-1.2
    ref: str  # refs/heads/roadmap-1.2
    tip: Oid


@dataclass(frozen=True)
class Base:
    rev: str  # as given or configured, e.g. main
    oid: Oid


def resolve_branch(repo: Repo, name: str) -> Branch:
    """The local branch ``name`` (short or ``refs/heads/…``); BadInput if missing."""
    short = branch_name(name)
    ref = f"refs/heads/{short}"
    tip = repo.ref_oid(ref)
    if tip is None:
        raise BadInput(f"no such branch: {short}")
    return Branch(short, ref, tip)


def resolve_base(repo: Repo, rev: str | None) -> Base:
    """``rev``, else git config ``harn.base``, else ``main``; BadInput if unknown.

    The one rule for a base: a branch name means that branch on the remote
    (``harn.remote``, else origin) when the repository has the remote and
    its tracking ref: where ``integrate`` lands work, and local ``main``
    never moves there. Anything else (a commit, ``refs/…``, ``origin/main``)
    is used as written."""
    chosen = rev or repo.config("harn.base") or DEFAULT_BASE
    tracking = remote_tracking(repo, chosen)
    if tracking is None:
        return Base(chosen, repo.resolve_commit(chosen))
    name, oid = tracking
    _warn_if_behind(repo, chosen, name, oid)
    return Base(name, oid)


def default_remote(repo: Repo) -> str:
    return repo.config("harn.remote") or DEFAULT_REMOTE


def remote_tracking(repo: Repo, branch: str) -> tuple[str, Oid] | None:
    """(``<remote>/<branch>``, its tip) when the default remote has ``branch``."""
    remote = default_remote(repo)
    if branch.startswith(("-", "refs/")) or not repo.has_remote(remote):
        return None
    oid = repo.ref_oid(f"refs/remotes/{remote}/{branch}")
    return (f"{remote}/{branch}", oid) if oid is not None else None


def _warn_if_behind(repo: Repo, branch: str, tracking: str, oid: Oid) -> None:
    local = repo.ref_oid(f"refs/heads/{branch}")
    if local is None or local == oid:
        return
    _, behind = repo.ahead_behind(local, oid)
    if behind:
        warn(f"local {branch} is {behind} commit(s) behind {tracking}; using {tracking} as the base "
             f"(git switch {branch} && git merge --ff-only {tracking} brings it up to date)")


def worktree_of(repo: Repo, branch: Branch) -> Path | None:
    """The registered worktree that has ``branch`` checked out, if any."""
    return worktree_with_branch(repo, branch.ref)


def worktree_present(path: Path) -> bool:
    return os.path.isdir(path)
