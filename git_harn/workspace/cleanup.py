"""Cleanup, the only path that removes a worktree [W3] [P2].

Order of judgement: vanished folder (already_gone), moved ref (blocked),
uncommitted changes (preserved_dirty), commits nowhere else
(preserved_unmerged), else release. Never a forced removal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from git_harn.clock import now_iso
from git_harn.errors import BadInput, HarnError, Refused
from git_harn.failpoints import failpoint
from git_harn.files import atomic_write
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.workdir import DirtyPath, dirty_paths, hidden_changes, nested_git_paths, restore_deleted
from git_harn.git.worktrees import admin_dir, detached_head, head_of, linked_problem, remove_worktree
from git_harn.results import Result
from git_harn.store import runs as store
from git_harn.store.bookkeeping import history_tips
from git_harn.store.locks import hold_run, hold_worktrees, holder_mark
from git_harn.store.record import (
    ALREADY_GONE,
    PRESERVED_DIRTY,
    PRESERVED_UNMERGED,
    RELEASED,
    TERMINAL,
    RunRecord,
    already,
)
from git_harn.text import printable_path
from git_harn.workspace.gc import archive_if_due
from git_harn.workspace.reconcile import (
    GONE,
    MISSING,
    let_go_of_branch,
    presence,
    reach,
    refuse_out_of_reach,
    settle_vanished,
)
from git_harn.workspace.snapshot import Snapshot

BLOCKED = "blocked"
DRY_RUN = "dry-run"
SHOWN_DIRTY = 5


@dataclass
class CleanupResult(Result):
    SCHEMA: ClassVar[str] = "cleanup-result"

    runId: str
    workspaceId: str
    outcome: str
    state: str
    attempts: int
    reason: str
    branch: str
    path: str
    wouldBe: str | None = None
    dirtyPaths: list[DirtyPath] = field(default_factory=list)


@dataclass
class Verdict:
    outcome: str
    reason: str
    dirty: list[DirtyPath] = field(default_factory=list)
    tips: dict[str, Oid] | None = None  # the refs judged by (Repo.ref_tips), once read


def describe_dirty(dirty: list[DirtyPath]) -> str:
    shown = ", ".join(printable_path(d.path) for d in dirty[:SHOWN_DIRTY])
    more = f" … and {len(dirty) - SHOWN_DIRTY} more" if len(dirty) > SHOWN_DIRTY else ""
    return f"{len(dirty)} dirty path(s): {shown}{more}"


def not_linked(record: RunRecord, problem: str) -> str:
    """Why a workspace that is no longer git-harn's linked worktree is kept,
    and the way out."""
    return (f"workspace {record.path} is no longer the linked worktree git-harn made: {problem}; "
            "git-harn runs no git in it and changed nothing there. Keep what you need from the "
            f"folder (it may hold a repository of its own), remove it, then run 'git harn cleanup "
            f"{record.runId} --yes': it records the workspace already_gone and keeps its branch "
            "while no other ref holds its commits")


def judge(repo: Repo, record: RunRecord, frozen_oid: str, snap: Snapshot | None = None) -> Verdict:
    """What cleanup would do to this workspace now (changes nothing). With
    ``snap``, what reclaim read and checked already is not read again."""
    where = presence(repo, record)
    if where == GONE:
        return Verdict(ALREADY_GONE, "worktree folder is missing")
    if where == MISSING:
        return Verdict(ALREADY_GONE, (
            "worktree folder is missing; its registration, which 'git worktree repair <new path>' needs "
            "to reconnect the preserved uncommitted work, goes too"
        ))
    if snap is None:
        problem = linked_problem(repo, Path(record.path))
        if problem is not None:  # git run there would act on another repository [P1]
            return Verdict(PRESERVED_DIRTY, not_linked(record, problem))
    now = snap.tip if snap is not None else repo.ref_oid(record.branch_ref)
    if now is None and gone_branch(record):
        now = where_it_stood(repo, record)  # frozen while the branch was gone: its HEAD is judged
    if now is None or str(now) != frozen_oid:
        return Verdict(BLOCKED, (
            "cleanup blocked: workspace ref changed from the frozen intent "
            f"(frozen {frozen_oid}, now {now if now is not None else '(deleted)'})"
        ))
    dirty = dirty_paths(Path(record.path)) + hidden_changes(Path(record.path))
    if dirty:
        nested = nested_git_paths(Path(record.path))
        if nested:
            # Neither salvage (a commit cannot hold a repository) nor discard
            # (git clean leaves one) resolves these: say so first.
            return Verdict(PRESERVED_DIRTY, (
                f"workspace holds {len(nested)} nested repository or '.git' path(s) that neither reclaim "
                f"nor --discard can resolve: {', '.join(printable_path(p) for p in nested[:SHOWN_DIRTY])}; "
                f"move them out of the workspace, then clean up again; also {describe_dirty(dirty)}"
            ), dirty)
        return Verdict(PRESERVED_DIRTY, f"dirty workspace was preserved: {describe_dirty(dirty)}", dirty)
    tips = snap.tips if snap is not None else history_tips(repo)
    admin = snap.admin if snap is not None else admin_dir(repo, Path(record.path))
    head = snap.detached if snap is not None else detached_head(admin)
    if head is not None and repo.has(head) and repo.unique_commits(head, set(), tips=tips):
        return Verdict(PRESERVED_UNMERGED, (
            f"unmerged workspace was preserved: its detached HEAD {str(head)[:12]} holds "
            "commits reachable from no ref"
        ), tips=tips)
    # A branch git-harn did not create outlives the workspace: its commits stay reachable.
    unique = repo.unique_commits(now, {record.branch_ref}, tips=tips) if record.owns_branch else []
    if unique:
        return Verdict(PRESERVED_UNMERGED, (
            f"unmerged workspace was preserved: {len(unique)} commit(s) on {record.branch} "
            "are reachable from no other ref"
        ), tips=tips)
    nested = snap.nested if snap is not None and snap.nested is not None else nested_git_paths(Path(record.path))
    if nested:
        return Verdict(PRESERVED_DIRTY, (
            f"workspace holds {len(nested)} nested repository or '.git' path(s) no commit can hold "
            f"and removing it would delete: {', '.join(printable_path(p) for p in nested[:SHOWN_DIRTY])}; "
            "move them out of the workspace, then clean up again"
        ), tips=tips)
    if admin is not None and (admin / "modules").is_dir():
        # git refuses to remove such a worktree without --force, which
        # git-harn never uses: the submodules' own repositories live there.
        return Verdict(PRESERVED_DIRTY, (
            f"workspace has submodule repositories in {admin / 'modules'}, which git will not remove "
            "without --force (git-harn never forces); check them for unpushed commits, then remove "
            f"the worktree yourself ('git worktree remove --force {record.path}'); the next cleanup "
            "records it already_gone"
        ), tips=tips)
    return Verdict(RELEASED, "clean and merged: worktree and branch can go", tips=tips)


def _result(record: RunRecord, outcome: str, reason: str, **extra: object) -> CleanupResult:
    return CleanupResult(
        runId=record.runId, workspaceId=record.workspaceId, outcome=outcome,
        state=record.state, attempts=record.attempts, reason=reason,
        branch=record.branch, path=record.path, **extra,  # type: ignore[arg-type]
    )


def read_known(repo: Repo, run_id: str) -> store.Stored:
    stored = store.read(repo, run_id)
    if stored is None:
        raise BadInput(f"unknown run id: {run_id}")
    return stored


def preview(repo: Repo, run_id: str) -> CleanupResult:
    """The dry run: the verdict cleanup would reach, with nothing changed."""
    read_known(repo, run_id)
    repo = reach(repo, run_id, f"git harn cleanup {run_id}")
    record = read_known(repo, run_id).record
    if record.terminal:
        return _result(record, DRY_RUN, f"workspace is {already(record.state)}; nothing to do",
                       wouldBe=record.state)
    refuse_out_of_reach(repo, record)
    frozen = record.frozenIntent["oid"] if record.frozenIntent else None
    if frozen is None:
        tip, source = intent_tip(repo, record)
        frozen = str(tip) if tip is not None else "(none)"
        if source is not None:  # judged as the real run will, once it froze on where the workspace stood
            record.frozenIntent = {"ref": record.branch_ref, "oid": frozen, "frozenAt": "", "source": source}
    verdict = judge(repo, record, frozen)
    return _result(record, DRY_RUN, verdict.reason, wouldBe=verdict.outcome, dirtyPaths=verdict.dirty)


def cleanup(repo: Repo, run_id: str) -> CleanupResult:
    """``git harn cleanup --yes``: an unknown run is bad input before any lock is made."""
    read_known(repo, run_id)
    repo = reach(repo, run_id, f"git harn cleanup {run_id} --yes")
    with hold_run(repo, run_id, "cleanup"):
        result = cleanup_locked(repo, run_id)
    if result.state in TERMINAL:  # a run ended: past harn.archiveThreshold the old ones are archived
        archive_if_due(repo)
    return result


def cleanup_locked(repo: Repo, run_id: str, snap: Snapshot | None = None) -> CleanupResult:
    """Cleanup with ``--yes``; the caller holds the run lock. ``snap``: reclaim
    hands off what it read (the record among it) and has its ``reclaiming``
    mark cleared in cleanup's own record write."""
    stored = snap.stored if snap is not None else read_known(repo, run_id)
    record = stored.record
    if record.terminal:
        return _result(record, record.state, f"workspace is {already(record.state)}")
    refuse_out_of_reach(repo, record)
    if presence(repo, record) in (GONE, MISSING):  # MISSING: settled only when asked, as here
        record = settle_vanished(repo, stored)
        if not record.terminal:  # moved by hand: judge it where it is now
            return cleanup_locked(repo, run_id)
        return _result(record, record.state, record.reason or "")
    if record.releasing is not None:
        _undo_partial_removal(repo, record)
    freezing = freeze_intent(repo, record)
    assert record.frozenIntent is not None
    try:
        verdict = judge(repo, record, record.frozenIntent["oid"], snap)
    except HarnError:
        _write_freeze(repo, stored, freezing)  # frozen on this first attempt, whatever stopped it [W8]
        raise
    if verdict.outcome != RELEASED:  # a release writes the freeze with its releasing mark
        stored, freezing = _write_freeze(repo, stored, freezing), None
    if verdict.outcome == BLOCKED:
        return _result(record, BLOCKED, verdict.reason)
    event = None
    if snap is not None:
        record.reclaiming = None  # judged: the reclaim is over, whatever the verdict
        event = "reclaimed"
    if verdict.outcome in (PRESERVED_DIRTY, PRESERVED_UNMERGED):
        return _preserve(repo, stored, verdict, event)
    return _release(repo, stored, event, verdict.tips, freezing)


# In the worktree's admin folder (git deletes it last) while git removes the
# worktree: what is missing from the folder then is git's doing, not anyone's work.
REMOVING = "harn-removing"


def _remove(repo: Repo, path: Path) -> None:
    """``git worktree remove``, with the mark that git is at it; the caller
    holds the worktrees lock. A refusal takes the mark away again."""
    admin = admin_dir(repo, path)
    mark = admin / REMOVING if admin is not None else None
    if mark is not None:
        atomic_write(mark, b"", 0o644)
    try:
        remove_worktree(repo, path)
    except HarnError:
        if mark is not None:
            mark.unlink(missing_ok=True)
        raise


def _undo_partial_removal(repo: Repo, record: RunRecord) -> None:
    """A release killed inside ``git worktree remove`` leaves part of a folder
    that was judged clean: put back its ``.git`` file and every tracked file
    git deleted (from the index, which git removes only after the folder),
    so the ordinary judgement finishes the release. git was at it when the
    ``REMOVING`` mark is in the admin folder, or when the ``.git`` file is
    gone; it deletes in directory order, so a kill can come before or after
    it reached ``.git``. What git deleted is never work: the frozen intent
    holds it, and a salvage of it would be a broken tree (issue 45). A
    deletion with no sign that git ran (killed before it started) is judged
    as usual, as is anything else in the folder [P1] [P6]."""
    path = Path(record.path)
    admin = admin_dir(repo, path)
    if admin is None:
        return
    git_file = os.path.lexists(path / ".git")
    if git_file and not (admin / REMOVING).exists():
        return
    if not git_file:
        atomic_write(path / ".git", f"gitdir: {admin}\n".encode(), 0o644)
    if not (admin / "index").is_file():
        return  # nothing to restore from: judged as usual
    missing = [entry.path for entry in dirty_paths(path) if entry.status == " D"]
    if missing:
        restore_deleted(path, missing)
    (admin / REMOVING).unlink(missing_ok=True)


# Where the intent was frozen when the workspace branch was already gone.
FROM_HEAD, FROM_BASE = "head", "base"


def intent_tip(repo: Repo, record: RunRecord) -> tuple[Oid | None, str | None]:
    """What cleanup freezes: the branch tip; when the branch is gone (a
    workflow's integration leaves the worktree detached at the task's tip,
    an operator deleted it), the worktree's HEAD, else the recorded base.
    The second value says which, None for the branch itself."""
    tip = repo.ref_oid(record.branch_ref)
    if tip is not None:
        return tip, None
    head = head_of(Path(record.path))
    if head is not None:
        return head, FROM_HEAD
    return to_oid(record.base["oid"]), FROM_BASE


def gone_branch(record: RunRecord) -> bool:
    return bool(record.frozenIntent and record.frozenIntent.get("source"))


def where_it_stood(repo: Repo, record: RunRecord) -> Oid | None:
    """A workspace frozen on a gone branch is judged where its HEAD is now (the
    frozen commit itself when HEAD names no commit)."""
    head = head_of(Path(record.path))
    if head is not None:
        return head
    return to_oid(record.frozenIntent["oid"]) if record.frozenIntent else None


def freeze_intent(repo: Repo, record: RunRecord) -> str | None:
    """Pin the workspace ref and its OID in ``record`` on the first attempt
    [W8]; what was frozen, for the caller to write (None: frozen by an
    earlier attempt). A release writes it with its ``releasing`` mark, one
    event; any other verdict writes it first (``_write_freeze``)."""
    if record.frozenIntent is not None:
        return None
    tip, source = intent_tip(repo, record)
    if tip is None:
        raise Refused(f"workspace branch {record.branch} is missing; cannot freeze the intent")
    record.frozenIntent = {"ref": record.branch_ref, "oid": str(tip), "frozenAt": now_iso()}
    if source is None:
        return f"froze {record.branch} at {tip}"
    record.frozenIntent["source"] = source
    return f"froze the workspace at its {'HEAD' if source == FROM_HEAD else 'base'} {tip}: {record.branch} is gone"


def _write_freeze(repo: Repo, stored: store.Stored, freezing: str | None) -> store.Stored:
    """The ``freeze`` event of an intent this attempt froze (none: as it was)."""
    if freezing is None:
        return stored
    return store.Stored(stored.record, store.write(repo, stored.record, "freeze", freezing, stored.tip))


def _preserve(repo: Repo, stored: store.Stored, verdict: Verdict, event: str | None = None) -> CleanupResult:
    record = stored.record
    record.state = verdict.outcome
    record.attempts += 1
    record.lastOutcome = verdict.outcome
    record.reason = verdict.reason
    record.releasing = None
    store.write(repo, record, event or verdict.outcome, verdict.reason, stored.tip)
    return _result(record, verdict.outcome, verdict.reason, dirtyPaths=verdict.dirty)


def _release(repo: Repo, stored: store.Stored, event: str | None = None,
             tips: dict[str, Oid] | None = None, freezing: str | None = None) -> CleanupResult:
    """Remove the worktree (never forced), then delete the branch with CAS,
    judged by the refs the verdict was (``tips``): git-harn reads them once.

    The ``releasing`` mark comes first, so a crash in between is finished as
    a release by the next run rather than mistaken for a vanished folder;
    ``freezing`` (an intent frozen by this attempt) is written with it."""
    record = stored.record
    assert record.frozenIntent is not None
    # Who removes it: a rerun tells from this whether a lock git left was a dead run's.
    record.releasing = {"oid": record.frozenIntent["oid"], "at": now_iso(), **holder_mark()}
    said = f"removing {record.path}" if freezing is None else f"{freezing}; removing {record.path}"
    tip = store.write(repo, record, "releasing", said, stored.tip)
    failpoint("cleanup-before-remove")
    with hold_worktrees(repo):
        _remove(repo, Path(record.path))
    failpoint("cleanup-after-remove")
    try:
        branch_note = let_go_of_branch(repo, record, tips)
    except HarnError as exc:  # the worktree is gone: the release happened, only the branch is left [P6]
        branch_note = f"branch {record.branch} kept for now ({exc.message})"
    record.state = RELEASED
    record.lastOutcome = RELEASED
    record.releasing = None
    record.reason = f"worktree removed; {branch_note}"
    store.write(repo, record, event or RELEASED, record.reason, tip)
    return _result(record, RELEASED, record.reason)
