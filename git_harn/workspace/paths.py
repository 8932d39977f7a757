"""Where workspaces live: the worktree root, folder and branch names [W1]."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from git_harn.git import Repo

WS_BRANCH_PREFIX = "harnery/ws/"

# Where a workspace is, seen from this clone.
HERE = "here"
GONE = "gone"  # its folder vanished: settled as already_gone [W7]
REMOTE = "remote"  # another host's
FOREIGN = "foreign"  # another clone's on this host [P1]
UNAVAILABLE = "unavailable"  # folder absent, registration locked (a disk away)
MISSING = "missing"  # folder absent, preserved work, registration kept for a repair


def repo_key(repo: Repo) -> str:
    """Folder name of the repository plus a short hash of its common git dir."""
    common = repo.common_dir
    name = common.parent.name if common.name == ".git" else common.name.removesuffix(".git")
    digest = hashlib.sha256(str(common).encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return f"{name or 'repo'}-{digest}"


def worktree_root(repo: Repo) -> Path:
    configured = repo.config("harn.worktreeRoot")
    if configured:
        root = Path(os.path.expanduser(configured))
        if not root.is_absolute():
            root = (repo.workdir or repo.common_dir) / root
        return root
    import platformdirs  # only needed when a workspace is made

    return Path(platformdirs.user_data_dir("git-harn")) / "worktrees"


def default_path(repo: Repo, run_id: str) -> Path:
    return worktree_root(repo) / repo_key(repo) / run_id


def default_branch(run_id: str) -> str:
    return WS_BRANCH_PREFIX + run_id
