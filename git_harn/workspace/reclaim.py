"""Reclaim: give a preserved workspace a way out [W5] [W8] [P1] [P2] [P6].

Salvage (default) or discard brings the workspace to a state cleanup
accepts, then hands off to cleanup, the only path that removes a worktree.
In order, under the run lock:

1. freeze the intent if cleanup never did (the workspace ref at reclaim time);
2. salvage: the work and any commit at risk go to harnery/salvage/<run-id>
   (discard: only commits at risk do; uncommitted changes are dropped);
3. record the salvage, with a ``reclaiming`` mark, before anything is reset,
   so a rerun after a crash knows the work is safe and only finishes the job;
4. restore: the workspace ref back to the frozen OID, ``reset --hard``,
   ``clean -fd``;
5. cleanup, which releases the clean workspace; then clear the mark.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from git_harn.clock import now_iso
from git_harn.errors import Refused
from git_harn.failpoints import failpoint
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.workdir import Fingerprint, fingerprint, nested_git_paths, reset_hard_and_clean
from git_harn.git.worktrees import head_of, head_ref_of, point_head
from git_harn.notices import info, progress
from git_harn.store import runs as store
from git_harn.store.locks import hold_run
from git_harn.store.record import ALREADY_GONE, RunRecord, already
from git_harn.text import printable_path
from git_harn.workspace.cleanup import CleanupResult, cleanup_locked, freeze_intent, read_known, refuse_remote
from git_harn.workspace.reconcile import GONE, presence, settle_vanished
from git_harn.workspace.salvage import Salvaged, capture, contains, save

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
        # The seed: reclaiming a released workspace is already_gone, not an error.
        _clear_mark(repo, run_id)
        return _ended(record, mode, ALREADY_GONE, f"workspace is {already(record.state)}; nothing to reclaim")
    refuse_remote(repo, record)
    if presence(repo, record) == GONE:
        record = settle_vanished(repo, stored)
        if not record.terminal:  # moved by hand: reclaim it where it is now
            return reclaim_locked(repo, run_id, mode)
        _clear_mark(repo, run_id)
        return _ended(record, mode, record.state, record.reason or "")
    _recreate_missing_branch(repo, record)
    stored = freeze_intent(repo, stored)
    before = fingerprint(Path(record.path))  # what the salvage is about to hold
    stored, salvage = _secure(repo, stored, mode)
    _restore(repo, stored.record, before)
    cleaned = cleanup_locked(repo, run_id)
    _clear_mark(repo, run_id)
    return _with(cleaned, mode, salvage)


def _recreate_missing_branch(repo: Repo, record: RunRecord) -> None:
    """A workspace branch deleted by hand while its worktree lives on: put it
    back where the intent was frozen (else at the base), so the work has a
    HEAD to be salvaged on and cleanup a ref to judge."""
    if repo.ref_oid(record.branch_ref) is not None:
        return
    where = (record.frozenIntent or record.base)["oid"]
    repo.create_ref(record.branch_ref, to_oid(where),
                    f"git-harn: reclaim {record.runId} restores the deleted workspace branch")
    info(f"workspace branch {record.branch} was missing; recreated at {where[:12]}")


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


def _secure(repo: Repo, stored: store.Stored, mode: str) -> tuple[store.Stored, dict[str, Any] | None]:
    """Make everything at risk safe, and record it before anything is reset."""
    record = stored.record
    assert record.frozenIntent is not None
    if _salvage_interrupted(repo, record):
        # The work is safe already; never salvage a half-reset tree as if it
        # were the work. Only the restore and the cleanup are left.
        assert record.reclaiming is not None
        return stored, record.salvage if record.reclaiming.get("salvageOid") else None
    protected_tip = repo.ref_oid(record.branch_ref)  # read before the capture: the salvage holds it
    progress(f"reclaim {record.runId}: reading {record.path}")
    nested = nested_git_paths(Path(record.path)) if mode == SALVAGE else []
    if nested:
        shown = ", ".join(printable_path(p) for p in nested[:5])
        raise Refused(f"cannot salvage {shown}: a nested repository or a path named .git cannot be held "
                      f"by a commit; move it out of {record.path}, then run 'git harn reclaim "
                      f"{record.runId}' again")
    cap = capture(repo, Path(record.path), with_tree=mode == SALVAGE)
    salvaged = save(repo, record, cap, to_oid(record.frozenIntent["oid"]))
    record.reclaiming = {"mode": mode, "at": now_iso(), "salvageOid": salvaged.oid if salvaged else "",
                         "attempts": str(record.attempts),
                         "tip": str(protected_tip) if protected_tip else "",
                         "head": str(cap.head) if cap.head else ""}
    if salvaged is not None:
        record.salvage = salvaged.as_record()
    new_tip = store.write(repo, record, mode, _summary(mode, salvaged), stored.tip)
    failpoint("reclaim-after-salvage-record")
    return store.Stored(record, new_tip), salvaged.as_record() if salvaged else None


def _salvage_interrupted(repo: Repo, record: RunRecord) -> bool:
    """Whether a salvage of this workspace was recorded and its restore may
    not have finished. The mark is trusted only while nothing happened since:
    no cleanup attempt, and no commit on the branch or HEAD that the salvage
    does not hold (else the workspace is salvaged afresh, losing nothing)."""
    mark = record.reclaiming
    if mark is None or mark.get("mode") != SALVAGE or mark.get("attempts") != str(record.attempts):
        return False
    assert record.frozenIntent is not None
    frozen = record.frozenIntent["oid"]
    saved = mark.get("salvageOid") or None
    for oid in (repo.ref_oid(record.branch_ref), head_of(Path(record.path))):
        if oid is None or str(oid) == frozen:
            continue
        if saved is None or not contains(repo, to_oid(saved), oid):
            return False
    # The salvage's parents include the staged versions it kept.
    parents = [str(p) for p in repo.commit_info(to_oid(saved)).parents] if saved else []
    known = [saved, *parents, frozen, mark.get("tip") or None, mark.get("head") or None]
    return _nothing_new(repo, record, [to_oid(c) for c in dict.fromkeys(known) if c])


def _nothing_new(repo: Repo, record: RunRecord, known: list[Oid]) -> bool:
    """Whether every path of the working tree (and index) holds a version one
    of the ``known`` commits has (the salvage, the frozen intent, the tip and
    HEAD it protected): a tree half-way through the restore. Any other
    content was written after the salvage and must be salvaged too."""
    cap = capture(repo, Path(record.path), with_tree=True)
    keep = [repo.flatten(repo.tree_id(commit)) for commit in known]
    for tree in (cap.work_tree, cap.index_tree):
        if tree is None:
            continue
        found = repo.flatten(tree)
        for name in set(found).union(*keep):
            if all(found.get(name) != known.get(name) for known in keep):
                return False
    return True


def _summary(mode: str, salvaged: Salvaged | None) -> str:
    if salvaged is None:
        return "nothing at risk to salvage" if mode == SALVAGE else "discarding uncommitted changes"
    kept = f"{salvaged.pathCount} path(s) to {salvaged.ref.removeprefix('refs/heads/')} at {salvaged.oid[:12]}"
    return f"salvaged {kept}" if mode == SALVAGE else f"discarding uncommitted changes; commits kept: {kept}"


def _restore(repo: Repo, record: RunRecord, before: Fingerprint | None = None) -> None:
    """The workspace ref back at the frozen OID [W8], checked out, clean."""
    assert record.frozenIntent is not None
    frozen = to_oid(record.frozenIntent["oid"])
    now = repo.ref_oid(record.branch_ref)
    _refuse_newer_commits(repo, record, now)
    if before is not None and fingerprint(Path(record.path)) != before:
        # Something (an agent still running?) wrote to the workspace after the
        # salvage read it: a reset now would destroy that [P1].
        raise Refused(f"run {record.runId}: the workspace changed while it was being reclaimed "
                      "(is something still running in it?); nothing was reset; stop it, then run "
                      f"'git harn reclaim {record.runId}' again")
    if now != frozen:
        repo.move_ref(record.branch_ref, frozen, now, f"git-harn: reclaim {record.runId} restores the frozen intent")
    failpoint("reclaim-after-ref-restored")
    path = Path(record.path)
    _check_out_branch(repo, record, path)
    progress(f"reclaim {record.runId}: resetting {path} to {str(frozen)[:12]}")
    # Hidden (skip-worktree) changes are salvaged, or discarded on purpose, by now.
    reset_hard_and_clean(path)
    failpoint("reclaim-after-clean")


def _refuse_newer_commits(repo: Repo, record: RunRecord, now: Oid | None) -> None:
    """A commit made on the branch or HEAD after the salvage was taken is not
    in it: moving the branch back over it would orphan it [P1] [P3]."""
    mark = record.reclaiming or {}
    saved = mark.get("salvageOid") or None
    head = head_of(Path(record.path))
    for seen, current in ((mark.get("tip") or None, now), (mark.get("head") or None, head)):
        if current is None or str(current) in (seen, record.frozenIntent and record.frozenIntent["oid"]):
            continue
        if saved is not None and contains(repo, to_oid(saved), current):
            continue
        raise Refused(f"run {record.runId}: a commit ({str(current)[:12]}) landed in the workspace while it "
                      f"was being reclaimed; nothing was reset; run 'git harn reclaim {record.runId}' again")


def _check_out_branch(repo: Repo, record: RunRecord, path: Path) -> None:
    """Point the worktree's HEAD back at the workspace branch if the run moved it
    (a detached HEAD, another branch); what HEAD held is salvaged already."""
    if head_ref_of(path) != record.branch_ref:
        point_head(path, record.branch_ref)


def _clear_mark(repo: Repo, run_id: str) -> None:
    """Cleanup has judged the restored workspace: the reclaim is over."""

    def mutate(record: RunRecord | None) -> tuple[RunRecord, str, str] | None:
        if record is None or record.reclaiming is None:
            return None
        record.reclaiming = None
        return record, "reclaimed", f"reclaim finished; workspace {record.state}"

    store.update(repo, run_id, mutate)
