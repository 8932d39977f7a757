"""Where workspaces live: the worktree root, folder and branch names [W1]."""

from __future__ import annotations

import os
from pathlib import Path

from git_harn.errors import BadInput
from git_harn.files import atomic_write
from git_harn.git import Repo
from git_harn.git.worktrees import main_worktree

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
    import hashlib  # only where a workspace's folder is made

    digest = hashlib.sha256(str(common).encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return f"{name or 'repo'}-{digest}"


def worktree_root(repo: Repo) -> Path:
    """``harn.worktreeRoot`` (a relative one from the main worktree, the
    same folder from every worktree), else the user data dir. BadInput when
    it is inside a workspace: the next workspace would nest in that one."""
    configured = repo.config("harn.worktreeRoot")
    if not configured:
        import platformdirs  # only needed when a workspace is made

        return Path(platformdirs.user_data_dir("git-harn")) / "worktrees"
    main, linked = main_worktree(repo)
    root = Path(os.path.expanduser(configured))
    root = Path(os.path.realpath((main or repo.common_dir) / root))
    for workspace in linked:
        if root.is_relative_to(os.path.realpath(workspace)):
            raise BadInput(f"harn.worktreeRoot {root} is inside the workspace {workspace}; "
                           "set it to a folder outside every worktree but the main one")
    return root


def ignore_root(repo: Repo, root: Path) -> None:
    """A root inside the main worktree holds a ``.gitignore`` of ``*``, as a
    virtualenv does, so the main checkout's ``git status`` stays clean."""
    main, _ = main_worktree(repo)
    if main is None or not root.is_relative_to(os.path.realpath(main)):
        return
    marker = root / ".gitignore"
    if not os.path.lexists(marker):
        root.mkdir(parents=True, exist_ok=True)
        atomic_write(marker, b"# git-harn workspaces: nothing here belongs in the repository\n*\n", 0o644)


def default_path(repo: Repo, run_id: str) -> Path:
    return worktree_root(repo) / repo_key(repo) / run_id


def default_branch(run_id: str) -> str:
    return WS_BRANCH_PREFIX + run_id
