"""The kept branch of a terminal workspace: the way out the branch guard names [H1] [W5] [P1].

A workspace that ended (already_gone, mostly) keeps its branch when commits
on it are reachable from no other ref. The guard refuses ``git branch -D``
of such a branch and sends the operator to ``git harn reclaim``; reclaim
puts those commits on ``harnery/salvage/<run-id>`` and then lets the
branch go, as cleanup would have.
"""

from __future__ import annotations

from git_harn.git import Repo
from git_harn.git.workdir import Capture
from git_harn.git.worktrees import worktree_with_branch
from git_harn.store import runs as store
from git_harn.store.bookkeeping import history_tips
from git_harn.store.record import RunRecord
from git_harn.workspace.reconcile import let_go_of_branch, refuse_out_of_reach
from git_harn.workspace.salvage import at_risk, save
from git_harn.workspace.snapshot import Snapshot


def settle_kept_branch(repo: Repo, stored: store.Stored) -> RunRecord | None:
    """Salvage what only the terminal workspace's branch holds, then delete
    the branch (reachable now); the record names the salvage. None when
    there is no such branch for git-harn to settle: gone already, not
    created by git-harn, or checked out in a worktree. The caller holds the
    run lock."""
    record = stored.record
    tip = repo.ref_oid(record.branch_ref)
    if tip is None or not record.owns_branch or worktree_with_branch(repo, record.branch_ref) is not None:
        return None
    refuse_out_of_reach(repo, record)
    # No worktree is left: only commits can be at risk, never a working tree.
    snap = Snapshot(stored, None, tip, None, None, history_tips(repo))
    salvaged = save(repo, record, Capture(None, None, None), tip, snap) if at_risk(repo, record, [tip]) else None
    branch_note = let_go_of_branch(repo, record, snap.tips)
    if salvaged is not None:
        record.salvage = salvaged.as_record()
        branch_note = (f"its kept branch's {salvaged.pathCount} path(s) salvaged to "
                       f"{salvaged.ref.removeprefix('refs/heads/')} at {salvaged.oid[:12]}; {branch_note}")
    record.reason = f"workspace is {record.state}; {branch_note}"
    store.write(repo, record, "salvage" if salvaged else "branch", branch_note, stored.tip)
    return record
