"""The branch under judgement: its ref, the base it is judged against, its worktree."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pygit2

from git_harn.errors import BadInput
from git_harn.git import Repo
from git_harn.workspace.paths import registered_worktrees

DEFAULT_BASE = "main"


@dataclass(frozen=True)
class Branch:
    name: str  # short name, e.g. roadmap-1.2
    ref: str  # refs/heads/roadmap-1.2
    tip: pygit2.Oid


@dataclass(frozen=True)
class Base:
    rev: str  # as given or configured, e.g. main
    oid: pygit2.Oid


def resolve_branch(repo: Repo, name: str) -> Branch:
    """The local branch ``name`` (short or ``refs/heads/…``); BadInput if missing."""
    short = name.removeprefix("refs/heads/")
    if not short or short.startswith("-"):
        raise BadInput(f"not a branch name: {name!r}")
    ref = f"refs/heads/{short}"
    tip = repo.ref_oid(ref)
    if tip is None:
        raise BadInput(f"no such branch: {short}")
    return Branch(short, ref, tip)


def resolve_base(repo: Repo, rev: str | None) -> Base:
    """``rev``, else git config ``harn.base``, else ``main``; BadInput if unknown."""
    chosen = rev or repo.config("harn.base") or DEFAULT_BASE
    return Base(chosen, repo.resolve_commit(chosen))


def worktree_of(repo: Repo, branch: Branch) -> Path | None:
    """The registered worktree that has ``branch`` checked out, if any."""
    for path, checked_out in registered_worktrees(repo).items():
        if checked_out == branch.ref:
            return path
    return None


def worktree_present(path: Path) -> bool:
    return os.path.isdir(path)
