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


Fingerprint = frozenset[tuple[str, str, int, int]]


def fingerprint(path: Path) -> Fingerprint:
    """What is uncommitted in the worktree, with each path's size and mtime:
    two equal fingerprints mean nothing was written in between."""
    entries = []
    for entry in dirty_paths(path):
        try:
            stat = os.lstat(path / entry.path)
            entries.append((entry.status, entry.path, stat.st_size, stat.st_mtime_ns))
        except OSError:
            entries.append((entry.status, entry.path, -1, -1))
    return frozenset(entries)


def hidden_changes(path: Path) -> list[DirtyPath]:
    """Files marked skip-worktree or assume-unchanged that exist and differ
    from the index: git status does not show them, but they are work."""
    done = run_git(["ls-files", "-v", "-s", "-z"], path, check=False)
    candidates: dict[str, str] = {}  # name -> object id in the index
    for entry in done.stdout.split(b"\0"):
        meta, _, raw_name = entry.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4 or not (fields[0] == b"S" or fields[0].islower()) or fields[1] == b"160000":
            continue
        name = raw_name.decode("utf-8", "surrogateescape")
        target = path / name
        if os.path.lexists(target) and not (target.is_dir() and not target.is_symlink()):
            candidates[name] = fields[2].decode()  # absent: a sparse checkout, on purpose
    return [DirtyPath("SM", name) for name in _differ_from_index(path, candidates)]


def _differ_from_index(path: Path, candidates: dict[str, str]) -> list[str]:
    """Names whose content, hashed as git would add it (filters applied),
    is not the object the index holds. One git call for all of them."""
    plain = [n for n in candidates if "\n" not in n and not n.startswith('"')]
    odd = [n for n in candidates if n not in plain]  # cannot pass --stdin-paths: count as changed
    if not plain:
        return sorted(odd)
    done = run_git(["hash-object", "--stdin-paths"], path, check=False,
                   input_bytes="\n".join(plain).encode("utf-8", "surrogateescape") + b"\n")
    hashes = done.stdout.decode().split()
    if done.returncode != 0 or len(hashes) != len(plain):
        return sorted(candidates)  # cannot tell: keep them all as work
    return sorted(odd + [n for n, h in zip(plain, hashes, strict=True) if h != candidates[n]])


def nested_git_paths(path: Path) -> list[str]:
    """Entries named ``.git`` below the top of the worktree, outside ignored
    folders: nested repositories, submodule checkouts, stray ``.git`` files.
    git status never shows them, no commit can hold them, and removing the
    worktree would delete them."""
    done = run_git(["ls-files", "-o", "-i", "--exclude-standard", "--directory", "-z"], path, check=False)
    ignored = {os.path.normpath(path / p.decode("utf-8", "surrogateescape"))
               for p in done.stdout.split(b"\0") if p}
    found: list[str] = []
    pending = [os.fsencode(path)]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            full = os.fsdecode(entry.path)
            if entry.name == b".git":
                if folder != os.fsencode(path):
                    found.append(os.path.relpath(full, path))
            elif entry.is_dir(follow_symlinks=False) and os.path.normpath(full) not in ignored:
                pending.append(entry.path)
    return sorted(found)


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
