"""git run inside one of git-harn's own checkouts (the integration worktree,
the gates' checkouts): clean, switch, rebase, commit, reset. No user hook
runs there: ``run_git`` turns hooks off for every git git-harn runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from git_harn.errors import GitFailure
from git_harn.git.objects import Oid, to_oid
from git_harn.git.run import error_line, run_git
from git_harn.git.worktrees import head_of, linked_admin


def wt_git(worktree: Path, *args: str, input_bytes: bytes | None = None) -> str:
    done = run_git(list(args), worktree, input_bytes=input_bytes, check=False)
    if done.returncode != 0:  # name the subcommand, not the ``-c`` before it
        raise GitFailure(f"git {args[0]} failed: {error_line(done.stderr or done.stdout)}")
    return done.stdout.decode("utf-8", "surrogateescape")


def clean_untracked(worktree: Path) -> None:
    wt_git(worktree, "clean", "-ffdq")


def switch_detached(worktree: Path, commit: Oid) -> None:
    wt_git(worktree, "switch", "--quiet", "--discard-changes", "--detach", str(commit))


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


def conflict_paths(worktree: Path) -> list[str]:
    out = wt_git(worktree, "diff", "--name-only", "--diff-filter=U", "-z")
    return [p for p in out.split("\0") if p]


def commit_tree(worktree: Path, tree: Oid, parent: Oid, message: str, sign: bool) -> Oid:
    """``git commit-tree``: the commit ``git commit`` would make of ``tree``
    (the same identity; ``sign``: signed with user.signingKey, as git commit
    signs under commit.gpgSign, which commit-tree itself does not read),
    with no index to stage into and no hook; no ref moves."""
    out = wt_git(worktree, "commit-tree", *(["-S"] if sign else []), str(tree), "-p", str(parent), "-F", "-",
                 input_bytes=message.encode("utf-8"))
    return to_oid(out.strip())


# What a command run in a scratch checkout may leave in its admin folder
# that would shape the next checkout there: the index (skip-worktree and
# assume-unchanged bits hide files from a checkout), worktree config and a
# sparse-checkout pattern file.
SCRATCH_STATE = ("index", "config.worktree", "info")


def reset_scratch(worktree: Path, commit: Oid) -> None:
    """One of git-harn's own scratch checkouts made again an exact, detached
    checkout of ``commit``: the state listed above dropped, every tracked file
    written from ``commit`` (``checkout --force`` with no index), and
    everything else, ignored files and nested repositories included, removed.
    No branch moves, whatever the last command run there switched to. Only
    for checkouts of committed content, which are nobody's work."""
    admin = linked_admin(worktree)
    for name in SCRATCH_STATE:
        path = admin / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    wt_git(worktree, "checkout", "--quiet", "--force", "--detach", str(commit))
    wt_git(worktree, "clean", "-ffdxq")
