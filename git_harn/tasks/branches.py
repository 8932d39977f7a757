"""The branch under judgement: its ref, the base it is judged against, its worktree."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from git_harn.errors import BadInput
from git_harn.git import Oid, Repo
from git_harn.git.refnames import branch_name
from git_harn.git.worktrees import worktree_with_branch

DEFAULT_BASE = "main"


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
    """``rev``, else git config ``harn.base``, else ``main``; BadInput if unknown."""
    chosen = rev or repo.config("harn.base") or DEFAULT_BASE
    return Base(chosen, repo.resolve_commit(chosen))


def worktree_of(repo: Repo, branch: Branch) -> Path | None:
    """The registered worktree that has ``branch`` checked out, if any."""
    return worktree_with_branch(repo, branch.ref)


def worktree_present(path: Path) -> bool:
    return os.path.isdir(path)
