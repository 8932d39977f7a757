"""Workspaces: where they live, how dirty they are, and how they start [W1]."""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pygit2

from git_harn.errors import BadInput, GitFailure
from git_harn.git import Repo
from git_harn.git.run import run_git

WS_BRANCH_PREFIX = "harnery/ws/"

# Where a workspace is, seen from this machine.
HERE = "here"
GONE = "gone"
REMOTE = "remote"


@dataclass(frozen=True)
class DirtyPath:
    status: str  # git's two-letter porcelain code, e.g. " M", "??", "D "
    path: str


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


def dirty_paths(path: Path) -> list[DirtyPath]:
    """Uncommitted changes in the worktree at ``path``: modified, staged,
    deleted and untracked files (not ignored), one entry per path."""
    done = run_git(
        ["--no-optional-locks", "status", "--porcelain=v1", "-z",
         "--untracked-files=all", "--no-renames", "--ignore-submodules=none"],
        path, check=False,
    )
    if done.returncode != 0:
        raise GitFailure(f"git status failed in {path}: {done.stderr.decode(errors='replace').strip()}")
    return parse_porcelain(done.stdout)


def parse_porcelain(raw: bytes) -> list[DirtyPath]:
    entries = []
    for item in raw.split(b"\0"):
        if len(item) < 4:
            continue
        code = item[:2].decode("ascii", "replace")
        entries.append(DirtyPath(code, item[3:].decode("utf-8", "surrogateescape")))
    return entries


def hidden_changes(path: Path) -> list[DirtyPath]:
    """Files marked skip-worktree or assume-unchanged that exist and differ
    from the index: git status does not show them, but they are work."""
    done = run_git(["ls-files", "-v", "-s", "-z"], path, check=False)
    found = []
    for entry in done.stdout.split(b"\0"):
        meta, _, raw_name = entry.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4 or not (fields[0] == b"S" or fields[0].islower()):
            continue
        name = raw_name.decode("utf-8", "surrogateescape")
        target = path / name
        if not os.path.lexists(target):
            continue  # sparse checkout: absent on purpose
        on_disk = (pygit2.hash(os.readlink(target).encode("utf-8", "surrogateescape"))
                   if target.is_symlink() else pygit2.hashfile(str(target)))
        if str(on_disk) != fields[2].decode():
            found.append(DirtyPath("SM", name))
    return found


def dirty_paths_many(paths: list[Path]) -> dict[Path, list[DirtyPath] | str]:
    """Dirty paths of many worktrees at once (git status runs in parallel).
    A worktree whose status fails maps to the error text."""

    def one(path: Path) -> list[DirtyPath] | str:
        try:
            return dirty_paths(path)
        except GitFailure as exc:
            return exc.message

    if len(paths) <= 1:
        return {path: one(path) for path in paths}
    # git status waits on stat() as much as on the CPU: more threads than cores pay off.
    workers = min(len(paths), 4 * (os.cpu_count() or 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(paths, pool.map(one, paths), strict=False))


def registered_worktrees(repo: Repo) -> dict[Path, str | None]:
    """Registered worktree paths and the branch ref each has checked out."""
    out: dict[Path, str | None] = {}
    current: Path | None = None
    for line in repo.git("worktree", "list", "--porcelain", "-z").split("\0"):
        if line.startswith("worktree "):
            current = Path(line[len("worktree "):])
            out[current] = None
        elif line.startswith("branch ") and current is not None:
            out[current] = line[len("branch "):]
    return out


def admin_dir(repo: Repo, path: Path) -> Path | None:
    """The worktree's folder in the common git dir (``worktrees/<name>``)."""
    admin_root = repo.common_dir / "worktrees"
    if not admin_root.is_dir():
        return None
    wanted = os.path.normpath(os.path.realpath(os.path.join(path, ".git")))
    for admin in admin_root.iterdir():
        try:
            gitdir = (admin / "gitdir").read_text().strip()
        except OSError:
            continue
        if os.path.normpath(os.path.realpath(gitdir)) == wanted:
            return admin
    return None


def detached_head(admin: Path | None) -> pygit2.Oid | None:
    """The commit a worktree's HEAD holds when it is detached (None otherwise).
    A detached HEAD is not a ref: commits only it reaches die with the worktree."""
    if admin is None:
        return None
    try:
        head = (admin / "HEAD").read_text().strip()
    except OSError:
        return None
    if head.startswith("ref:") or len(head) not in (40, 64):
        return None
    try:
        return pygit2.Oid(hex=head)
    except ValueError:
        return None


def validate_branch_name(repo: Repo, name: str) -> str:
    done = run_git(["check-ref-format", "--branch", name], repo.cli_cwd, check=False)
    if done.returncode != 0 or name.startswith("-"):
        raise BadInput(f"invalid branch name: {name!r}")
    return name
