"""git run inside one of git-harn's own checkouts (the integration worktree):
switch, rebase, squash, stage, commit. No user hook runs there: ``run_git``
turns hooks off for every git git-harn runs.
"""

from __future__ import annotations

from pathlib import Path

from git_harn.errors import GitFailure
from git_harn.git.objects import Oid, from_pygit2
from git_harn.git.run import error_line, run_git
from git_harn.git.worktrees import head_of, linked_admin, open_worktree


def wt_git(worktree: Path, *args: str, input_bytes: bytes | None = None) -> str:
    done = run_git(list(args), worktree, input_bytes=input_bytes, check=False)
    if done.returncode != 0:  # name the subcommand, not the ``-c`` before it
        raise GitFailure(f"git {args[0]} failed: {error_line(done.stderr or done.stdout)}")
    return done.stdout.decode("utf-8", "surrogateescape")


def clean_untracked(worktree: Path) -> None:
    wt_git(worktree, "clean", "-ffdq")


def switch_detached(worktree: Path, commit: Oid) -> None:
    wt_git(worktree, "switch", "--quiet", "--discard-changes", "--detach", str(commit))


def switch_reset(worktree: Path, branch: str, start: Oid) -> None:
    """``git switch --discard-changes -C <branch> <start>`` [I1]: the branch is
    force-reset onto ``start`` whether or not it exists, and whatever an
    earlier attempt left staged is thrown away."""
    wt_git(worktree, "switch", "--quiet", "--discard-changes", "--no-track", "-C", branch, str(start))


def rebase_onto(worktree: Path, base: Oid) -> list[str] | None:
    """Rebase the checked-out commit onto ``base``. None when done; the
    conflicting paths (the rebase aborted) on a conflict."""
    done = run_git(["-c", "rebase.autoStash=false", "-c", "rebase.updateRefs=false",
                    "rebase", "--quiet", "--no-autosquash", str(base)], worktree, check=False)
    if done.returncode == 0:
        return None
    paths = conflict_paths(worktree)
    run_git(["rebase", "--abort"], worktree, check=False)
    if not paths:
        raise GitFailure(f"git rebase failed: {error_line(done.stderr or done.stdout)}")
    return paths


# What a git killed mid-operation leaves in a worktree's admin folder, besides
# the locks it held: a rebase in progress (a switch clears a merge's state,
# never a rebase's).
IN_PROGRESS = ("rebase-merge", "rebase-apply", "sequencer")


def leftovers(worktree: Path) -> list[str]:
    """Why the checkout is not in a state the next attempt can start from:
    lock files and operations in progress in its admin folder, or a HEAD
    that names no commit. Empty when it is usable."""
    try:
        admin = linked_admin(worktree)
        names = sorted(entry.name for entry in admin.iterdir())
    except OSError as exc:
        return [f"unreadable admin folder ({exc.strerror or exc})"]
    found = [name for name in names if name.endswith(".lock") or name in IN_PROGRESS]
    if not found and head_of(worktree) is None:
        found.append("HEAD names no commit")
    return found


def merge_squash(worktree: Path, tip: Oid) -> list[str] | None:
    """``git merge --squash <tip>``: None when staged, else the conflicting paths."""
    done = run_git(["merge", "--squash", "--quiet", str(tip)], worktree, check=False)
    if done.returncode == 0:
        return None
    paths = conflict_paths(worktree)
    if not paths:
        raise GitFailure(f"git merge --squash failed: {error_line(done.stderr or done.stdout)}")
    return paths


def nothing_staged(worktree: Path) -> bool:
    done = run_git(["diff", "--cached", "--quiet"], worktree, check=False)
    if done.returncode not in (0, 1):
        raise GitFailure(f"git diff --cached failed: {error_line(done.stderr)}")
    return done.returncode == 0


def conflict_paths(worktree: Path) -> list[str]:
    out = wt_git(worktree, "diff", "--name-only", "--diff-filter=U", "-z")
    return [p for p in out.split("\0") if p]


def staged_entry(worktree: Path, path: str) -> tuple[int, Oid] | None:
    """(mode, blob id) of ``path`` in the worktree's index, stage 0."""
    index = open_worktree(worktree).index
    try:
        entry = index[path]
    except KeyError:
        return None
    return entry.mode, from_pygit2(entry.id)


def stage_blob(worktree: Path, path: str, blob: Oid, mode: int) -> None:
    wt_git(worktree, "update-index", "--cacheinfo", f"{mode:o},{blob},{path}")


def commit_index(worktree: Path, message: str) -> Oid:
    """Commit the index alone (no hook), return the new HEAD."""
    wt_git(worktree, "commit", "--quiet", "--no-verify", "-F", "-", input_bytes=message.encode("utf-8"))
    head = head_of(worktree)
    if head is None:
        raise GitFailure(f"cannot read HEAD of {worktree}")
    return head
