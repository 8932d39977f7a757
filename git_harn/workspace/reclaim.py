"""Reclaim: give a preserved workspace a way out [W5] [W8] [P1] [P2] [P6].

Salvage (default) or discard brings the workspace to a state cleanup
accepts, then hands off to cleanup, the only path that removes a worktree.
In order, under the run lock:

1. freeze the intent if cleanup never did (the workspace ref at reclaim time);
2. salvage: the work and any commit at risk go to harnery/salvage/<run-id>
   (discard: only commits at risk do; uncommitted changes are dropped);
3. record the salvage, with a ``reclaiming`` mark, before anything is reset,
   so a rerun after a crash knows the work is safe and only finishes the job;
4. restore: the workspace ref back to the frozen OID, and the tree made
   clean: a salvage commit whose tree is the work becomes the worktree's
   detached HEAD, with the index the salvage wrote (no file is rewritten
   only for the removal to delete it); otherwise (a discard, a rerun after
   a crash) ``reset --hard`` and ``clean -fd``;
5. cleanup, which releases the clean workspace; then clear the mark.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from git_harn.clock import now_iso
from git_harn.errors import Refused
from git_harn.failpoints import failpoint
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.workdir import (
    Fingerprint,
    KeptIndex,
    drop_scratch_index,
    fingerprint,
    nested_git_paths,
    reset_hard_and_clean,
    stand_on,
)
from git_harn.git.worktrees import admin_locks, head_of, linked_problem, point_head
from git_harn.notices import info, progress, warn
from git_harn.store import runs as store
from git_harn.store.locks import broken_owner, git_processes_in, hold_run, holder_gone, holder_mark, run_lock_path
from git_harn.store.procs import dead_ran_out
from git_harn.store.record import ALREADY_GONE, RunRecord, already
from git_harn.text import printable_path
from git_harn.workspace.cleanup import CleanupResult, cleanup_locked, read_known
from git_harn.workspace.kept import settle_kept_branch
from git_harn.workspace.reconcile import GONE, MISSING, presence, refuse_out_of_reach, settle_vanished
from git_harn.workspace.salvage import Salvaged, capture, contains, salvage_ref, save
from git_harn.workspace.snapshot import Snapshot, take

SALVAGE = "salvage"
DISCARD = "discard"


@dataclass
class ReclaimResult(CleanupResult):
    """The cleanup result, plus what reclaim did before handing off."""

    SCHEMA: ClassVar[str] = "reclaim-result"

    mode: str = SALVAGE
    salvage: dict[str, Any] | None = None


def reclaim(repo: Repo, run_id: str, mode: str) -> ReclaimResult:
    """``git harn reclaim``, under the run lock."""
    with hold_run(repo, run_id, "reclaim"):
        return reclaim_locked(repo, run_id, mode)


def reclaim_locked(repo: Repo, run_id: str, mode: str) -> ReclaimResult:
    """Reclaim ``run_id``'s workspace; the caller holds the run lock."""
    stored = read_known(repo, run_id)
    record = stored.record
    if record.terminal:
        # [W5]: reclaiming a released workspace is already_gone, not an error.
        kept = settle_kept_branch(repo, stored)
        if kept is not None:
            _clear_mark(repo, store.read(repo, run_id))
            return _ended(kept, mode, ALREADY_GONE, kept.reason or "")
        _clear_mark(repo, stored)
        return _ended(record, mode, ALREADY_GONE, f"workspace is {already(record.state)}; nothing to reclaim")
    refuse_out_of_reach(repo, record)
    if presence(repo, record) in (GONE, MISSING):  # MISSING: settled only when asked, as here
        record = settle_vanished(repo, stored)
        if not record.terminal:  # moved by hand: reclaim it where it is now
            return reclaim_locked(repo, run_id, mode)
        _clear_mark(repo, store.read(repo, run_id))
        return _ended(record, mode, record.state, record.reason or "")
    if record.releasing is not None:
        # Judged clean and merged, and killed while it was being removed: only
        # the removal is left, never a salvage of what the removal deleted.
        return _with(cleanup_locked(repo, run_id), mode, record.salvage)
    path = Path(record.path)
    if linked_problem(repo, path) is not None:
        # Not the worktree git-harn made: no git runs in it; cleanup keeps it, with the reason [P1].
        return _with(cleanup_locked(repo, run_id), mode, None)
    snap = take(repo, stored)
    _recreate_missing_branch(repo, snap)
    _clear_dead_locks(repo, snap)
    _refuse_nested(snap, mode)
    _refuse_moving_callers_branch(repo, snap.record)
    _begin(repo, snap, mode)
    before = fingerprint(path)  # what the salvage is about to hold
    salvage, in_place = _secure(repo, snap, mode)
    if in_place is None or not _stand_on_salvage(repo, snap, in_place, before):
        _restore(repo, snap, before)
    cleaned = cleanup_locked(repo, run_id, snap)
    return _with(cleaned, mode, salvage)


def _recreate_missing_branch(repo: Repo, snap: Snapshot) -> None:
    """A workspace branch deleted by hand while its worktree lives on: put it
    back where the intent was frozen (else at the base), so the work has a
    HEAD to be salvaged on and cleanup a ref to judge."""
    record = snap.record
    if snap.tip is not None:
        return
    where = (record.frozenIntent or record.base)["oid"]
    repo.create_ref(record.branch_ref, to_oid(where),
                    f"git-harn: reclaim {record.runId} restores the deleted workspace branch")
    record.branchCreated = True  # made by reclaim: cleanup deletes it again, never leaves it behind
    snap.moved(record.branch_ref, to_oid(where))
    if snap.head is None and snap.head_ref == record.branch_ref:
        snap.head = to_oid(where)
    info(f"workspace branch {record.branch} was missing; recreated at {where[:12]}")


def _refuse_moving_callers_branch(repo: Repo, record: RunRecord) -> None:
    """The restore puts the workspace branch back at the frozen intent [W8];
    a branch git-harn did not create is never moved: refuse before anything changes.
    (No intent frozen yet: it is frozen where the branch is, so nothing would move.)"""
    if record.frozenIntent is None:
        return
    now, frozen = repo.ref_oid(record.branch_ref), record.frozenIntent["oid"]
    if record.owns_branch or now is None or str(now) == frozen:
        return
    raise Refused(f"run {record.runId}: branch {record.branch}, which git-harn did not create, moved from the "
                  f"frozen intent {frozen[:12]} to {str(now)[:12]}, and reclaim would have to move it back; "
                  f"keep its new commits on another branch, move it back yourself, then run "
                  f"'git harn reclaim {record.runId}' again; nothing was changed")


def _clear_dead_locks(repo: Repo, snap: Snapshot) -> None:
    """Lock files a git left in the workspace's admin folder when it was
    killed together with the git-harn that ran it [P6]. git writes no pid,
    so a lock is judged by git-harn's own marks: it is stale when the run
    that was at work there (its ``reclaiming`` or ``releasing`` mark) is
    provably dead, with its whole process group, and no git process works
    in the workspace; or when the run lock this reclaim broke names a dead
    process whose commands (an agent's ``git commit``) and their process
    groups are all dead. Otherwise nothing is touched and the reason is given."""
    if snap.admin is None:
        return
    found = admin_locks(snap.admin)
    if not found:
        return
    record = snap.record
    marks = [m for m in (record.reclaiming, record.releasing) if m and m.get("pid")]
    dead_run = broken_owner(run_lock_path(repo, record.runId))  # the run lock this reclaim broke
    busy = git_processes_in(snap.path)
    if (marks or dead_run) and all(holder_gone(m) for m in marks) and dead_ran_out(dead_run) and not busy:
        who = marks[0].get("pid") if marks else (dead_run or {}).get("pid")
        for lock in found:
            lock.unlink(missing_ok=True)
            warn(f"removed {lock}: left by git-harn pid {who} (run {record.runId}) or a command it ran, "
                 "which died together with the git it ran")
        return
    who = f"git process(es) {', '.join(map(str, busy[:5]))} work in {record.path}" if busy else (
        "no dead run of git-harn left it")
    raise Refused(f"run {record.runId}: {found[0]} exists and {who}: a git may be at work in the workspace; "
                  f"nothing was changed. Once no git runs there, remove the lock and run "
                  f"'git harn reclaim {record.runId}' again")


def _refuse_nested(snap: Snapshot, mode: str) -> None:
    """Before anything is written: what no commit can hold stops a salvage."""
    if mode != SALVAGE:
        return
    snap.nested = nested_git_paths(snap.path)
    if snap.nested:
        shown = ", ".join(printable_path(p) for p in snap.nested[:5])
        raise Refused(f"cannot salvage {shown}: a nested repository or a path named .git cannot be held "
                      f"by a commit; move it out of {snap.record.path}, then run 'git harn reclaim "
                      f"{snap.record.runId}' again")


def _begin(repo: Repo, snap: Snapshot, mode: str) -> None:
    """One record write before anything else: the intent frozen if cleanup
    never did [W8], and the mark that this process is at work on the
    workspace (kept from a killed reclaim, whose salvage it may name)."""
    record = snap.record
    if record.frozenIntent is None:
        if snap.tip is None:
            raise Refused(f"workspace branch {record.branch} is missing; cannot freeze the intent")
        record.frozenIntent = {"ref": record.branch_ref, "oid": str(snap.tip), "frozenAt": now_iso()}
    mark = dict(record.reclaiming or {"mode": mode, "at": now_iso()})
    mark.update(holder_mark())
    record.reclaiming = mark
    tip = store.write(repo, record, "reclaiming", f"{mode} of {record.path} begins", snap.stored.tip)
    snap.stored = store.Stored(record, tip)


def _ended(record: RunRecord, mode: str, outcome: str, reason: str) -> ReclaimResult:
    """A workspace with nothing left to reclaim; its salvage (if any) is named."""
    return ReclaimResult(
        runId=record.runId, workspaceId=record.workspaceId, outcome=outcome, state=record.state,
        attempts=record.attempts, reason=reason, branch=record.branch, path=record.path,
        mode=mode, salvage=record.salvage,
    )


def _with(cleaned: CleanupResult, mode: str, salvage: dict[str, Any] | None) -> ReclaimResult:
    fields = {f.name: getattr(cleaned, f.name) for f in dataclasses.fields(cleaned)}
    return ReclaimResult(**fields, mode=mode, salvage=salvage)


class InPlace(NamedTuple):
    """A salvage commit whose tree is the whole work tree as captured, and
    the capture's index, kept for ``_stand_on_salvage``."""

    commit: Oid
    kept: KeptIndex


def _secure(repo: Repo, snap: Snapshot, mode: str) -> tuple[dict[str, Any] | None, InPlace | None]:
    """Make everything at risk safe, and record it before anything is reset.
    Second: what the workspace can be made clean on where it stands, if anything."""
    record = snap.record
    assert record.frozenIntent is not None
    if _salvage_interrupted(repo, snap):
        # The work is safe already; never salvage a half-reset tree as if it
        # were the work. Only the restore and the cleanup are left.
        assert record.reclaiming is not None
        return (record.salvage if record.reclaiming.get("salvageOid") else None), None
    protected_tip = snap.tip  # read before the capture: the salvage holds it
    progress(f"reclaim {record.runId}: reading {record.path}")
    cap = capture(repo, snap.path, with_tree=mode == SALVAGE, head=snap.head, keep_index=mode == SALVAGE)
    try:
        salvaged = save(repo, record, cap, to_oid(record.frozenIntent["oid"]), snap)
        work = _holds_the_tree(repo, salvaged, cap.work_tree)
        in_place = InPlace(work, cap.kept) if work is not None and cap.kept is not None else None
        if in_place is None and cap.work_tree is not None:
            drop_scratch_index(snap.path)
    except BaseException:
        if cap.work_tree is not None:
            drop_scratch_index(snap.path)
        raise
    assert record.reclaiming is not None
    record.reclaiming.update({"mode": mode, "salvageOid": salvaged.oid if salvaged else "",
                              "attempts": str(record.attempts),
                              "tip": str(protected_tip) if protected_tip else "",
                              "head": str(cap.head) if cap.head else ""})
    if salvaged is not None:
        record.salvage = salvaged.as_record()
    new_tip = store.write(repo, record, mode, _summary(mode, salvaged), snap.stored.tip)
    snap.stored = store.Stored(record, new_tip)
    failpoint("reclaim-after-salvage-record")
    return (salvaged.as_record() if salvaged else None), in_place


def _holds_the_tree(repo: Repo, salvaged: Salvaged | None, work_tree: Oid | None) -> Oid | None:
    """The salvage commit, when its tree is exactly the captured work tree."""
    if salvaged is None or work_tree is None:
        return None
    commit = to_oid(salvaged.oid)
    return commit if repo.commit_info(commit).tree == work_tree else None


def _salvage_interrupted(repo: Repo, snap: Snapshot) -> bool:
    """Whether a salvage of this workspace was recorded and its restore may
    not have finished. The mark is trusted only while nothing happened since:
    no commit on the branch or HEAD that the salvage does not hold, and no
    content in the tree but the salvage's, the intent's and what the reset
    was writing (else the workspace is salvaged afresh, losing nothing)."""
    record = snap.record
    mark = record.reclaiming
    if mark is None or mark.get("mode") != SALVAGE or "salvageOid" not in mark:
        return False
    assert record.frozenIntent is not None
    frozen = to_oid(record.frozenIntent["oid"])
    saved = to_oid(mark["salvageOid"]) if mark["salvageOid"] else None
    for oid in (snap.tip, snap.head):
        if oid is None or oid == frozen:
            continue
        if saved is None or not contains(repo, saved, oid):
            return False
    current = snap.tips.get(salvage_ref(record.runId))
    if saved is not None and (current is None or not contains(repo, current, saved)):
        return False  # the salvage branch no longer holds it: salvage afresh
    return _only_reset_writes(repo, snap, saved, frozen)


def _only_reset_writes(repo: Repo, snap: Snapshot, saved: Oid | None, frozen: Oid) -> bool:
    """Whether the worktree holds nothing but the recorded salvage, the
    frozen intent, and what the killed ``reset --hard`` was writing: each
    path as the salvage's tree or the frozen tree has it, or (a path the
    reset had to write) absent or a prefix of the frozen version. The index,
    which git replaces whole, must be one the salvage knew. Anything else
    was written after the salvage, and is salvaged too."""
    cap = capture(repo, snap.path, with_tree=True, head=snap.head)
    frozen_files = repo.flatten(repo.tree_id(frozen))
    if saved is None:
        # Nothing was at risk when the salvage looked: the tree must be the intent.
        return cap.index_tree is None and cap.work_tree == repo.tree_id(frozen)
    commit = repo.commit_info(saved)
    saved_files = repo.flatten(commit.tree)
    assert cap.work_tree is not None
    found = repo.flatten(cap.work_tree)
    for name in set(found) | set(saved_files) | set(frozen_files):
        now, kept, want = found.get(name), saved_files.get(name), frozen_files.get(name)
        if now in (kept, want):
            continue
        if kept == want or want is None:
            return False  # the reset does not write this path: new work
        if now is not None and not repo.read_blob(to_oid(want[0])).startswith(repo.read_blob(to_oid(now[0]))):
            return False
    if cap.index_tree is not None:
        known = {repo.tree_id(p) for p in commit.parents} | {commit.tree, repo.tree_id(frozen)}
        if cap.index_tree not in known:
            return False
    return True


def _summary(mode: str, salvaged: Salvaged | None) -> str:
    if salvaged is None:
        return "nothing at risk to salvage" if mode == SALVAGE else "discarding uncommitted changes"
    kept = f"{salvaged.pathCount} path(s) to {salvaged.ref.removeprefix('refs/heads/')} at {salvaged.oid[:12]}"
    return f"salvaged {kept}" if mode == SALVAGE else f"discarding uncommitted changes; commits kept: {kept}"


def _stand_on_salvage(repo: Repo, snap: Snapshot, in_place: InPlace, before: Fingerprint) -> bool:
    """The workspace ref back at the frozen OID [W8], and the tree made clean
    where it stands: HEAD detached at the salvage commit, whose tree is the
    work tree as captured, with the index that capture wrote (``stand_on``).
    Nothing is reset, so nothing is rewritten only for the removal to delete
    it. As before a reset, the tree must be as it was before the salvage read
    it; a write after this check shows in cleanup's ``git status`` against
    that commit, and the workspace is kept with it. False when a git holds
    the worktree's index or HEAD, or staged something since the capture (the
    reset path then judges it)."""
    _refuse_newer_commits(repo, snap)
    _refuse_changed(snap, before)
    _put_branch_back(repo, snap)
    if snap.admin is None or not stand_on(snap.admin, in_place.commit, in_place.kept):
        return False
    snap.detached_at(in_place.commit)
    failpoint("reclaim-after-clean")
    return True


def _refuse_changed(snap: Snapshot, before: Fingerprint | None) -> None:
    """Something (an agent still running?) wrote to the workspace after the
    salvage read it: a reset, or a removal, now would destroy that [P1]."""
    if before is None or fingerprint(snap.path) == before:
        return
    run_id = snap.record.runId
    raise Refused(f"run {run_id}: the workspace changed while it was being reclaimed "
                  "(is something still running in it?); nothing was reset; stop it, then run "
                  f"'git harn reclaim {run_id}' again")


def _restore(repo: Repo, snap: Snapshot, before: Fingerprint | None = None) -> None:
    """The workspace ref back at the frozen OID [W8], checked out, clean."""
    record = snap.record
    assert record.frozenIntent is not None
    frozen = to_oid(record.frozenIntent["oid"])
    _refuse_newer_commits(repo, snap)
    _refuse_changed(snap, before)
    _put_branch_back(repo, snap)
    if snap.head_ref != record.branch_ref:
        # A detached HEAD or another branch: what it held is salvaged already.
        point_head(snap.path, record.branch_ref)
    progress(f"reclaim {record.runId}: resetting {snap.path} to {str(frozen)[:12]}")
    # Hidden (skip-worktree) changes are salvaged, or discarded on purpose, by now.
    reset_hard_and_clean(snap.path)
    snap.restored(frozen)
    failpoint("reclaim-after-clean")


def _put_branch_back(repo: Repo, snap: Snapshot) -> None:
    """The workspace ref back at the frozen OID [W8]; the caller refused
    first if a commit the salvage does not hold landed since."""
    record = snap.record
    assert record.frozenIntent is not None
    frozen = to_oid(record.frozenIntent["oid"])
    if snap.tip != frozen:
        repo.move_ref(record.branch_ref, frozen, snap.tip,
                      f"git-harn: reclaim {record.runId} restores the frozen intent")
        snap.moved(record.branch_ref, frozen)
    failpoint("reclaim-after-ref-restored")


def _refuse_newer_commits(repo: Repo, snap: Snapshot) -> None:
    """A commit made on the branch or HEAD after the salvage was taken is not
    in it: moving the branch back over it would orphan it [P1] [P3]."""
    record = snap.record
    mark = record.reclaiming or {}
    saved = mark.get("salvageOid") or None
    head = head_of(snap.path)  # read again: a commit since the snapshot is what this looks for
    now = repo.ref_oid(record.branch_ref)
    for seen, current in ((mark.get("tip") or None, now), (mark.get("head") or None, head)):
        if current is None or str(current) in (seen, record.frozenIntent and record.frozenIntent["oid"]):
            continue
        if saved is not None and contains(repo, to_oid(saved), current):
            continue
        raise Refused(f"run {record.runId}: a commit ({str(current)[:12]}) landed in the workspace while it "
                      f"was being reclaimed; nothing was reset; run 'git harn reclaim {record.runId}' again")
    if now != snap.tip:
        raise Refused(f"run {record.runId}: workspace branch {record.branch} moved while it was being "
                      f"reclaimed; nothing was reset; run 'git harn reclaim {record.runId}' again")


def _clear_mark(repo: Repo, stored: store.Stored | None) -> None:
    """A terminal workspace: whatever reclaim was under way is over."""
    if stored is None or stored.record.reclaiming is None:
        return
    record = stored.record
    record.reclaiming = None
    store.write(repo, record, "reclaimed", f"reclaim finished; workspace {record.state}", stored.tip)
