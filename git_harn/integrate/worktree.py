"""The integration worktree: git-harn's own checkout, never the user's [I1]."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from git_harn.errors import Refused
from git_harn.git import Oid, Repo
from git_harn.git.checkout import leftovers
from git_harn.git.worktrees import add_detached, discard_scratch, prune_registration, registered_here
from git_harn.notices import info
from git_harn.store.locks import hold_worktrees
from git_harn.workspace.paths import ignore_root, repo_key, worktree_root


def integration_worktree(repo: Repo) -> Path:
    """Beside the workspaces, under a name no run id can take."""
    return worktree_root(repo) / repo_key(repo) / ".integrate"


def ensure_worktree(repo: Repo, start: Oid) -> Path:
    """The integration worktree, made (detached) on first use and reused
    while it is still this repository's [P6]."""
    path = integration_worktree(repo)
    if registered_here(repo, path):
        left = leftovers(path)
        if not left:
            return path
        # Killed together with git: its locks or a half-begun rebase stay and
        # would stop every later task. The checkout only ever holds committed
        # content, so it is made afresh rather than repaired [P6].
        info(f"the integration worktree {path} was left mid-operation ({', '.join(left[:5])}); "
             "making it afresh")
        with hold_worktrees(repo):
            discard_scratch(repo, path)
    _clear_stale_checkout(path)
    with hold_worktrees(repo):
        prune_registration(repo, path)
    if os.path.lexists(path) and (not path.is_dir() or any(path.iterdir())):
        raise Refused(f"{path} is in the way of the integration worktree; move it aside")
    ignore_root(repo, path.parent.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    with hold_worktrees(repo):
        add_detached(repo, path, start)
    return path


def _clear_stale_checkout(path: Path) -> None:
    """A checkout whose git dir is gone (the repository was cloned afresh,
    its registration pruned) or belongs elsewhere. It is git-harn's own
    scratch copy of committed content, never anyone's work, so it goes."""
    if path.is_symlink() or not (path / ".git").is_file():
        return
    info(f"the integration worktree {path} no longer belongs to this repository; making it afresh")
    shutil.rmtree(path)
