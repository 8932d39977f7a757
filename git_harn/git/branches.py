"""Git plumbing for branches and the files at a commit: a remote and a
branch name checked, a branch fetched, the regular files of a commit read,
a commit kept under a ref that never moves, and the branch a worktree has
checked out (detached from it and put back on it)."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import pygit2

from git_harn.errors import BadInput, GitFailure, HarnError, RaceLost
from git_harn.git import remote as remote_door
from git_harn.git.objects import REGULAR_MODES, Oid
from git_harn.git.refnames import branch_name
from git_harn.git.repo import Repo
from git_harn.git.run import run_git
from git_harn.git.workdir import dirty_paths
from git_harn.git.worktrees import branch_tip, detach_head, head_of, point_head


def tracking_ref(remote: str, branch: str) -> str:
    return f"refs/remotes/{remote}/{branch}"


def check_remote(repo: Repo, remote: str) -> None:
    if remote.startswith("-"):
        raise BadInput(f"invalid remote name: {remote!r}")
    if not repo.has_remote(remote):
        raise BadInput(f"unknown remote: {remote}")


def check_branch_name(name: str, what: str) -> str:
    try:
        return branch_name(name)
    except BadInput:
        raise BadInput(f"{what}: invalid branch name {name!r}") from None


def fetch_branch(repo: Repo, remote: str, branch: str, write_ref: bool = True) -> Oid:
    """Fetch ``<remote>/<branch>`` and return its commit. With ``write_ref``
    False no ref changes at all (the objects arrive, FETCH_HEAD names the tip)."""
    return remote_door.fetch_branch(repo, remote, branch, tracking_ref(remote, branch) if write_ref else None)


def file_at(repo: Repo, commit: Oid, path: str, limit: int = 1 << 20) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path`` in ``commit`` (None: absent)."""
    return repo.read_file(commit, path, limit=limit, regular_only=True)


def names_in(repo: Repo, commit: Oid, folder: str) -> list[str]:
    """Names of the regular files directly inside ``folder`` at ``commit``."""
    return [name for name, mode in repo.list_folder(commit, folder) if mode in REGULAR_MODES]


def ahead(repo: Repo, tip: Oid, base: Oid) -> int:
    return repo.ahead_behind(tip, base)[0]


def commit_time(repo: Repo, oid: Oid) -> int:
    return repo.commit_info(oid).time


def keep_ref(repo: Repo, name: str, oid: Oid, message: str) -> str:
    """Point ``name`` at ``oid``: created, or left if already there; a ref
    that holds something else is never moved, ``name-<n>`` is made instead [P1]."""
    for n in range(0, 100):
        candidate = name if n == 0 else f"{name}-{n}"
        current = repo.ref_oid(candidate)
        if current == oid:
            return candidate
        if current is None:
            try:
                repo.create_ref(candidate, oid, message)
                return candidate
            except RaceLost:
                continue
    raise GitFailure(f"cannot keep {oid} under {name}: too many refs of that name")


# --- a task worktree ----------------------------------------------------------


def worktree_branch(worktree: Path) -> str | None:
    """The branch ref the worktree has checked out (None: detached or unreadable).
    Read with libgit2, as ``git symbolic-ref -q HEAD`` answers it: asked
    after every stage, a git process each time was most of its cost."""
    try:
        head = pygit2.Repository(str(worktree)).references.get("HEAD")
    except (pygit2.GitError, KeyError, ValueError):
        return None
    target = head.target if head is not None else None
    return target if isinstance(target, str) and target.startswith("refs/") else None


def detach(worktree: Path) -> None:
    """Detach the worktree's HEAD at the same commit, so the branch may be
    moved by someone else. No file changes, so HEAD is rewritten here, as
    ``git switch --detach`` would, without a process."""
    head = head_of(worktree)
    if head is None:
        raise GitFailure(f"cannot detach {worktree}: HEAD names no commit")
    detach_head(worktree, head)


def attach(worktree: Path, branch: str) -> None:
    """Check the branch out again in a clean worktree: when the branch is
    still at the detached commit only HEAD changes (rewritten here); when it
    moved, ``git switch`` updates the files."""
    ref = f"refs/heads/{branch}"
    head = head_of(worktree)
    if head is not None and head == branch_tip(worktree, ref) and not _checked_out_elsewhere(worktree, branch):
        point_head(worktree, ref)
        return
    run_git(["switch", "--quiet", branch], worktree)  # which refuses a branch checked out elsewhere


def _checked_out_elsewhere(worktree: Path, branch: str) -> bool:
    """Whether another worktree has the branch checked out: libgit2's set_head
    checks that only from a symbolic HEAD, and this one is detached. Unsure
    counts as yes, so that git decides."""
    try:
        found = pygit2.Repository(str(worktree)).lookup_branch(branch)
        return found is None or bool(found.is_checked_out())
    except (pygit2.GitError, ValueError):
        return True


def reattach(worktree: Path, branch: str) -> bool:
    """Put a worktree left on a detached HEAD (mid-integration) back on its
    branch; only a clean one, so no file changes under uncommitted work.
    True when it is on the branch now."""
    if worktree_branch(worktree) == f"refs/heads/{branch}":
        return True
    if dirty_paths(worktree):
        return False
    with suppress(HarnError):
        attach(worktree, branch)
    return worktree_branch(worktree) == f"refs/heads/{branch}"
