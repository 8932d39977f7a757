"""Locks left behind: git-harn's own (run locks, the merge, worktrees,
sync and settle locks) whose holder is provably dead, and the lock files
git leaves when it is killed (``index.lock``, ``HEAD.lock``,
``packed-refs.lock``, ``config.lock``, and in each worktree's admin folder
``index.lock``, ``HEAD.lock``, ``harn-salvage-index.lock``) [P6].

git writes no owner into its lock files: one is judged left behind when it
is older than ``GIT_LOCK_AGE`` and no git process works in the repository
or that worktree (a ``git commit`` waiting for its editor is such a
process). Runner leases are the workflow checks'.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from git_harn.doctor.findings import LOCK, Finding, command
from git_harn.git import Repo
from git_harn.git.worktrees import ADMIN_LOCKS, admin_dir, admin_locks, registered_worktrees
from git_harn.integrate.worktree import integration_worktree
from git_harn.store import lease, runs
from git_harn.store.locks import git_processes_in, locks_dir, read_owner, run_of_lock
from git_harn.store.procs import dead_ran_out

GIT_LOCK_AGE = 60.0  # seconds: no git holds a lock this long without being at work in the repository
UNREADABLE_AGE = 5.0  # a lock file is written in one go: one unreadable this long is garbage
COMMON_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock")


def remove_command(path: Path) -> str:
    return command("rm -f --", str(path))


def check_locks(repo: Repo, skip: set[str]) -> list[Finding]:
    """``skip``: lock file names another finding's command clears already."""
    own = _harn_locks(repo, skip)
    cleared = {lock for finding in own for lock in finding.subject.get("gitLocks", [])}
    return own + [f for f in _git_locks(repo) if f.what not in cleared]


def dead_run_git_locks(repo: Repo, lock: Path) -> list[Path]:
    """git's lock files in the admin folder of the workspace whose run lock
    is ``lock`` (its holder is dead: the caller judged that), while no git
    works in that workspace or its admin folder. The gits the dead run ran
    died with it, or finished: the locks are provably left (issue 45), with
    no wait for their age."""
    run_id = run_of_lock(lock.name)
    if run_id is None:
        return []
    stored = runs.read(repo, run_id)
    if stored is None or stored.record.terminal:
        return []
    workspace = Path(stored.record.path)
    admin = admin_dir(repo, workspace)  # None for another clone's or host's workspace
    found = admin_locks(admin) if admin is not None else []
    if not found or any(git_processes_in(f) for f in (workspace, admin) if f is not None and f.exists()):
        return []
    return found


def _age(path: Path) -> float | None:
    try:
        return time.time() - path.lstat().st_mtime
    except OSError:
        return None


def _harn_locks(repo: Repo, skip: set[str]) -> list[Finding]:
    try:
        paths = sorted(locks_dir(repo).glob("*.lock"))
    except OSError:
        return []
    found = []
    for path in paths:
        if path.name.startswith(lease.PREFIX) or path.name in skip:
            continue
        owner = read_owner(path)
        age = _age(path)
        if owner is None or age is None:
            continue
        if (owner == {} and age > UNREADABLE_AGE) or (owner and dead_ran_out(owner)):
            holder = f"pid {owner.get('pid', '?')} ({owner.get('purpose', '?')}), dead" if owner else "unreadable"
            git_locks = [str(p) for p in dead_run_git_locks(repo, path)]
            left = (f"; git's lock file(s) {', '.join(git_locks)} in its workspace's admin folder were left by "
                    "the gits it ran, which died with it (no git works there): they go with it, or every git "
                    "in that workspace fails" if git_locks else "")
            found.append(Finding(LOCK, "lock-dead", str(path),
                                 f"git-harn lock whose holder is provably gone ({holder}) and every command it "
                                 f"named with it; the next command would break it with a warning{left}",
                                 command("rm -f --", str(path), *git_locks), fixable=True, ageSeconds=int(age),
                                 subject={"path": str(path), "owner": owner,
                                          **({"gitLocks": git_locks} if git_locks else {})}))
    return found


def _git_locks(repo: Repo) -> list[Finding]:
    candidates = [repo.common_dir / name for name in COMMON_LOCKS]
    folders = {repo.common_dir: [repo.common_dir, *([repo.workdir] if repo.workdir else [])]}
    admin_root = repo.common_dir / "worktrees"
    worktree_of = {os.path.realpath(p): p for p in registered_worktrees(repo)}
    integration = os.path.realpath(integration_worktree(repo))
    try:
        admins = sorted(p for p in admin_root.iterdir() if p.is_dir())
    except OSError:
        admins = []
    for admin in admins:
        folder = _worktree_of(admin, worktree_of)
        if any(os.path.realpath(f) == integration for f in folder):
            continue  # the integration worktree left mid-operation is a leftover's, made afresh whole
        candidates += [admin / name for name in ADMIN_LOCKS]
        folders[admin] = [admin, *folder]
    found = []
    for path in candidates:
        age = _age(path)
        if age is None or age < GIT_LOCK_AGE:
            continue
        busy = sorted({pid for folder in [repo.common_dir, *folders.get(path.parent, [])]
                       if folder.exists() for pid in git_processes_in(folder)})
        if busy:
            continue
        found.append(Finding(LOCK, "git-lock-left", str(path),
                             f"git's lock file, {int(age)} s old, and no git works in the repository: a killed "
                             "git left it, and every git command that needs it fails until it goes",
                             remove_command(path), fixable=True, ageSeconds=int(age), subject={"path": str(path)}))
    return found


def _worktree_of(admin: Path, worktree_of: dict[str, Path]) -> list[Path]:
    """The worktree folder an admin folder belongs to (its ``gitdir`` file)."""
    try:
        gitfile = Path((admin / "gitdir").read_text().strip())
    except OSError:
        return []
    folder = worktree_of.get(os.path.realpath(gitfile.parent))
    return [folder] if folder is not None else []
