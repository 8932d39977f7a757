"""One ``git harn sync``: rounds of read the remote, fetch into the tracking
namespace, merge, push what is ahead. A push the remote moved under goes back
to the fetch, after a jittered pause, a bounded number of rounds; a refusal
(a hook, a permission) is reported and not retried [P3] [P4]."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, ClassVar

from git_harn.errors import BadInput, CorruptRecord, GitFailure, RaceLost
from git_harn.failpoints import failpoint
from git_harn.git import Repo, to_oid
from git_harn.git import remote as door
from git_harn.git.remote import DEFAULT_REMOTE
from git_harn.git.worktrees import registered_worktrees
from git_harn.notices import info, progress, warn
from git_harn.results import Result
from git_harn.store import bookkeeping, chain
from git_harn.store.archive import ARCHIVE_REF
from git_harn.store.armed import armed as armed_seals
from git_harn.store.locks import hold, sync_lock_path
from git_harn.store.notes import NOTES_REF, show_notes_in_log
from git_harn.sync import archive, notes, records, summary
from git_harn.sync.push import STAGING_ROOT, push_all, sweep_staging
from git_harn.sync.steps import (
    AHEAD,
    DIVERGED,
    FAST_FORWARD,
    NEW,
    QUARANTINED,
    RANK,
    SAME,
    WAITING,
    BadRemoteData,
    Step,
)
from git_harn.text import one_line

DEFAULT_ROUNDS = 5
SALVAGE_PREFIX = "refs/heads/harnery/salvage/"
TRACKING_ROOT = bookkeeping.TRACKING_ROOT
HARNERY_PREFIX = "refs/harnery/"
LOCK_WAIT_SECONDS = 60.0
FETCH_BUDGET = 256  # fetches spent isolating refs the remote cannot send
_REMOTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")

RefEdit = tuple[str, Any, Any]  # (name, new, old) as Repo.update_refs takes them

SYNCED, DRY_RUN, CONFIGURED = "synced", "dry-run", "configured"
PUSH_REFUSED, RETRIES_EXHAUSTED = "push-refused", "retries-exhausted"
SYNC_QUARANTINED, SYNC_DIVERGED = "quarantined", "salvage-diverged"


@dataclass
class RefSync:
    ref: str
    action: str
    pushed: bool
    local: str | None
    remote: str | None
    detail: str | None = None


@dataclass
class SyncResult(Result):
    """What ``git harn sync`` did, per ref."""

    SCHEMA: ClassVar[str] = "sync-result"

    remote: str
    outcome: str
    summary: str
    dryRun: bool = False
    salvage: bool = False
    rounds: int = 0
    atomic: bool | None = None
    counts: dict[str, int] = field(default_factory=dict)
    pushedCount: int = 0
    refs: list[RefSync] = field(default_factory=list)
    refused: str | None = None
    remoteSaid: list[str] = field(default_factory=list)
    refspec: str | None = None
    unchanged: bool = False


def fetch_refspec(remote: str) -> str:
    return f"+{HARNERY_PREFIX}*:{TRACKING_ROOT}{remote}/*"


def tracking_name(remote: str, ref: str) -> str:
    if ref.startswith(SALVAGE_PREFIX):
        return f"refs/remotes/{remote}/" + ref.removeprefix("refs/heads/")
    return f"{TRACKING_ROOT}{remote}/" + ref.removeprefix(HARNERY_PREFIX)


def choose_remote(repo: Repo, remote: str | None) -> str:
    name = remote or repo.config("harn.syncRemote") or DEFAULT_REMOTE
    if not _REMOTE_NAME.fullmatch(name) or ".." in name or name.endswith(".lock"):
        raise BadInput(f"not a remote name: {name!r}")
    if not repo.has_remote(name):
        raise BadInput(f"no remote named {name!r} (git remote add {name} <url>)")
    return name


def configure(repo: Repo, remote: str | None) -> SyncResult:
    """Add the tracking refspec to ``remote.<r>.fetch`` (never ``remote.<r>.push``)."""
    name = choose_remote(repo, remote)
    armed = armed_seals(repo.common_dir)
    if armed:  # the config is what a run's seal compares byte for byte [T2]
        raise BadInput(f"{', '.join(armed)} runs in this clone and its stages are checked against its config: "
                       "sync --configure once it ended")
    spec = fetch_refspec(name)
    already = spec in repo.config_all(f"remote.{name}.fetch")
    repo.ensure_config_value(f"remote.{name}.fetch", spec)
    said = "already" if already else "now"
    return SyncResult(remote=name, outcome=CONFIGURED, refspec=spec,
                      summary=f"git fetch {name} {said} updates {TRACKING_ROOT}{name}/*; "
                              "git harn sync still merges and pushes")


# --- one round --------------------------------------------------------------------


def _patterns(salvage: bool) -> list[str]:
    found = [f"{prefix}*" for prefix in records.PREFIXES] + [NOTES_REF, ARCHIVE_REF, summary.SUMMARY_REF]
    return found + ([f"{SALVAGE_PREFIX}*"] if salvage else [])


def _ours(ref: str, salvage: bool) -> bool:
    return (records.kind_of(ref) is not None or ref in (NOTES_REF, ARCHIVE_REF)
            or (salvage and ref.startswith(SALVAGE_PREFIX)))


def _fetch(repo: Repo, remote: str, wanted: list[str]) -> dict[str, str]:
    """Fetch the objects of ``wanted`` remote refs (no ref is written by git:
    the tracking refs move afterwards, compare-and-swap). A set that fails is
    split in halves until the refs the remote cannot send stand alone: those
    are returned (ref -> git's error) and the rest is fetched."""
    failed: dict[str, str] = {}
    budget = [FETCH_BUDGET]

    def attempt(refs: list[str]) -> None:
        budget[0] -= 1
        fetched = door.fetch(repo, remote, refs)
        if fetched.ok:
            return
        error = fetched.words
        if len(refs) == 1 or budget[0] <= 0:
            for ref in refs:
                failed[ref] = _shown(f"cannot be fetched: {error}")
            return
        middle = len(refs) // 2
        attempt(refs[:middle])
        attempt(refs[middle:])

    if wanted:
        attempt(wanted)
    return failed


def _plan(repo: Repo, ref: str, local: str | None, remote: str | None, dry_run: bool,
          checked_out: set[str], archive_tip: str | None) -> Step:
    kind = records.kind_of(ref)
    if kind is not None:
        return records.plan(repo, kind, ref, local, remote, dry_run, to_oid(archive_tip) if archive_tip else None)
    if ref == NOTES_REF:
        return notes.plan(repo, local, remote, dry_run)
    if ref == ARCHIVE_REF:
        return archive.plan(repo, local, remote, dry_run)
    return _plan_branch(repo, ref, local, remote, checked_out)


def _plan_branch(repo: Repo, ref: str, local: str | None, remote: str | None,
                 checked_out: set[str]) -> Step:
    """A salvage branch: fast-forward only (the five cases, never merged)."""
    step = Step(ref, SAME, local, remote)
    try:
        case = chain.case(repo, to_oid(local) if local else None, to_oid(remote) if remote else None,
                          unrelated_ok=True)
    except CorruptRecord as exc:
        raise BadRemoteData(exc.message) from exc
    step.action = case.action
    if case.action == AHEAD:
        step.push = local
    elif case.action == NEW or (case.action == FAST_FORWARD and ref not in checked_out):
        step.local = remote
    elif case.action != SAME:
        step.action = DIVERGED
        step.detail = ("checked out in a worktree; not moved" if ref in checked_out
                       else "diverged from the remote's; both kept, nothing pushed")
    return step


@dataclass
class _Round:
    steps: dict[str, Step]
    local_updates: list[tuple[str, str | None, str | None]]  # new None: an archived run's ref deleted
    pushes: list[tuple[str, str]]
    drops: list[tuple[str, str]]  # (ref, oid) to delete on the remote, leased: archived runs
    remote_after: dict[str, str]  # the summarized refs as the remote holds them once the pushes went
    summary_oid: str | None = None  # the summary of remote_after (None in a dry run)
    summary_push: door.Update | None = None  # when the remote's summary is not that one


def _summarize(repo: Repo, remote: str, this: _Round, theirs: dict[str, str], advertised: str | None,
               dry_run: bool) -> None:
    """What the remote will hold of the summarized refs after this round's
    pushes, and the summary update it needs (leased on what was read): a
    child of the summary read, so the ref only moves forward [S1]."""
    this.remote_after = {ref: oid for ref, oid in theirs.items() if summary.covers(ref)}
    this.remote_after.update((ref, oid) for oid, ref in this.pushes if summary.covers(ref))
    for ref, _ in this.drops:
        this.remote_after.pop(ref, None)
    if dry_run:
        return
    if advertised is None:
        this.summary_oid = summary.write(repo, this.remote_after, None)
        this.summary_push = door.Update(summary.SUMMARY_REF, this.summary_oid, None, leased=True)
        return
    found = summary.read(repo, advertised)
    if found is None:
        # Not fetched, or not a commit (none can descend from it): left as it
        # is, never forced or deleted [S1]; nothing is kept, the next sync lists.
        if repo.has(to_oid(advertised)):
            warn(f"{remote}'s {summary.SUMMARY_REF} is not a summary git-harn wrote, and a sync never forces "
                 f"or deletes a remote ref: every sync lists every ref until it is gone "
                 f"(git push {remote} :{summary.SUMMARY_REF})")
        return
    if found == summary.content(this.remote_after):
        this.summary_oid = advertised
        return
    this.summary_oid = summary.write(repo, this.remote_after, advertised)
    this.summary_push = door.Update(summary.SUMMARY_REF, this.summary_oid, advertised, leased=True)


def _tracking_prefixes(remote: str) -> list[str]:
    return [f"{TRACKING_ROOT}{remote}/", f"refs/remotes/{remote}/harnery/salvage/"]


def _waits(step: Step, local: str | None) -> bool:
    """Whether ``step`` would write a ref of this clone's (or delete one on
    the remote because of what this clone's archive will hold)."""
    return (step.local is not None and step.local != local) or step.drop_local or step.drop_remote


def _waiting(step: Step, armed: list[str]) -> Step:
    """Left for a sync once the runs whose seal watches this clone's refs ended [T2]."""
    return Step(step.ref, WAITING, step.local_old, step.remote,
                detail=f"{step.action}: left for a sync after the run ({', '.join(armed)}) whose stages are "
                       "checked against this clone's refs")


def _one_round(repo: Repo, remote: str, salvage: bool, dry_run: bool, armed: list[str]) -> _Round:
    progress(f"reading what {remote} holds")
    advertised = door.ls_remote(repo, remote, _patterns(salvage))
    theirs = {ref: oid for ref, oid in advertised.items() if _ours(ref, salvage)}
    prefixes = [*records.PREFIXES, NOTES_REF, ARCHIVE_REF] + ([SALVAGE_PREFIX] if salvage else [])
    # One pass over the refs: with thousands of records, listing them is a cost.
    listed = repo.ref_ids([*prefixes, *_tracking_prefixes(remote)])
    ours = {ref: oid for ref, oid in listed.items() if _ours(ref, salvage)}
    tracked = {ref: oid for ref, oid in listed.items() if ref.startswith(tuple(_tracking_prefixes(remote)))}
    # A tracking ref already at the remote's value means its objects are here.
    wanted = [ref for ref, oid in sorted(theirs.items()) if tracked.get(tracking_name(remote, ref)) != oid]
    if wanted:
        progress(f"fetching {len(wanted)} ref(s) from {remote}")
    # The remote's summary, in the same fetch: a new one is its child.
    summary_tip, summary_name = advertised.get(summary.SUMMARY_REF), tracking_name(remote, summary.SUMMARY_REF)
    new_summary = summary_tip is not None and tracked.get(summary_name) != summary_tip
    unfetchable = _fetch(repo, remote, wanted + ([summary.SUMMARY_REF] if new_summary else []))
    moves = []
    for ref in wanted:
        name, oid = tracking_name(remote, ref), theirs[ref]
        if ref in unfetchable:
            continue
        if not repo.has(to_oid(oid)):
            raise RaceLost(f"{ref} moved on {remote} since it was read")
        moves.append((name, oid, tracked.get(name)))
        tracked[name] = oid
    if summary_tip is not None and new_summary and repo.has(to_oid(summary_tip)):
        moves.append((summary_name, summary_tip, tracked.get(summary_name)))  # kept from gc
    _move(repo, moves)  # RaceLost: another fetch moved them; the round starts again
    checked_out = set(filter(None, registered_worktrees(repo).values())) if salvage else set()
    steps: dict[str, Step] = {}
    updates: list[tuple[str, str | None, str | None]] = []
    pushes: list[tuple[str, str]] = []
    drops: list[tuple[str, str]] = []
    archive_tip = ours.get(ARCHIVE_REF)
    # The archive first: the run records are judged against the archive both sides will hold.
    for ref in sorted(set(theirs) | set(ours), key=lambda name: (name != ARCHIVE_REF, name)):
        local = ours.get(ref)
        remote_oid = tracked.get(tracking_name(remote, ref)) if ref in theirs else None
        if ref in unfetchable or (ref in theirs and remote_oid is None):
            steps[ref] = Step(ref, QUARANTINED, local, theirs[ref],
                              detail=unfetchable.get(ref, "its tracking ref is missing after the fetch"))
            continue
        if local is not None and local == remote_oid:
            steps[ref] = Step(ref, SAME, local, remote_oid)
            continue
        try:
            step = _plan(repo, ref, local, remote_oid, dry_run, checked_out, archive_tip)
        except BadRemoteData as exc:
            step = Step(ref, QUARANTINED, local, remote_oid, detail=_shown(exc.message))
        except GitFailure as exc:
            step = Step(ref, QUARANTINED, local, remote_oid, detail=_shown(exc.message))
        if armed and _waits(step, local):
            step = _waiting(step, armed)
        steps[ref] = step
        if ref == ARCHIVE_REF and step.action != QUARANTINED:
            archive_tip = step.local or local
        if step.local is not None and step.local != local:
            updates.append((ref, step.local, local))
        if step.drop_local and not dry_run:
            updates.append((ref, None, local))
        if step.push is not None:
            pushes.append((step.push, ref))
        if step.drop_remote and remote_oid is not None:
            drops.append((ref, remote_oid))
    this = _Round(steps, updates, pushes, drops, {})
    _summarize(repo, remote, this, theirs, advertised.get(summary.SUMMARY_REF), dry_run)
    return this


def _shown(text: str) -> str:
    """Remote data in a message: printable, one bounded line [P5]."""
    return one_line("".join(ch if ch.isprintable() else "?" for ch in text[:2000]), 300)


def _settle_tracking(repo: Repo, remote: str, pushed: dict[str, str | None]) -> None:
    """Point the tracking refs at what was pushed, or delete those of the
    refs the push deleted (git may have done so already)."""
    moves: list[tuple[str, str | None, str | None]] = []
    for ref, oid in pushed.items():
        name = tracking_name(remote, ref)
        found = repo.ref_oid(name)
        current = str(found) if found is not None else None
        if current != oid:
            moves.append((name, oid, current))
    with suppress(RaceLost):  # a concurrent fetch moved them; the next sync reads them again
        _move(repo, moves)


def _move(repo: Repo, moves: Sequence[tuple[str, str | None, str | None]], index: Sequence[RefEdit] = ()) -> None:
    """(name, new, old) in one compare-and-swap transaction [P3], with the
    live index entries the moved records need (``index``); RaceLost on a
    lost race. ``old`` None: the ref must not exist yet; ``new`` None
    deletes it, which a sync does only to a tracking ref or to the ref of a
    run the archive holds at that state (``records._archived``)."""
    if moves:  # the entries first: git commits updates in order (see chain.publish)
        repo.update_refs([*index, *((name, to_oid(new) if new else None, to_oid(old) if old else None)
                                    for name, new, old in moves)])


def _pause(round_number: int) -> None:
    time.sleep(random.uniform(0.05, min(2.0, 0.1 * 2 ** round_number)))  # noqa: S311 (jitter)


# --- the whole sync --------------------------------------------------------------


def sync(repo: Repo, remote: str | None = None, salvage: bool = False,
         dry_run: bool = False, full: bool = False) -> SyncResult:
    if repo.is_shallow:
        raise BadInput("a shallow clone cannot sync: its history is cut, so merges cannot be "
                       "checked (git fetch --unshallow first)")
    name = choose_remote(repo, remote)
    rounds = max(1, repo.config_int("harn.syncRounds", DEFAULT_ROUNDS))
    with hold(sync_lock_path(repo), "sync", f"sync with {name}", LOCK_WAIT_SECONDS):
        # A run's seal here compares this clone's refs around each stage: only the
        # tracking copies move (rule 10 of store/seal), the merges wait for later.
        # Read under the lock: a seal is marked before it waits for this lock (Seal.installed).
        armed = armed_seals(repo.common_dir)
        if armed and salvage:
            raise BadInput(f"{', '.join(armed)} runs in this clone and its stages are checked against its "
                           "branches: sync --salvage once it ended (a sync without --salvage is fine)")
        swept = sweep_staging(repo)  # whatever this sync has to push [P6]
        if swept:
            info(f"removed {swept} staging ref(s) a killed sync left under {STAGING_ROOT}")
        if not (salvage or dry_run or full):
            progress(f"comparing summaries with {name}")
            last = summary.unchanged(repo, name)
            if last is not None:
                return _unchanged(name, last)
        result, final = _sync_locked(repo, name, salvage, dry_run, rounds, armed)
        if not dry_run:
            _settle_summary(repo, result, final)
        return result


def _unchanged(remote: str, last: summary.Kept) -> SyncResult:
    """Neither side changed since the last sync: what a full one would say."""
    result = SyncResult(remote=remote, outcome=SYNCED, summary="", rounds=1, unchanged=True)
    _conclude(result, True, {SAME: last.count} if last.count else {})
    return result


def _settle_summary(repo: Repo, result: SyncResult, final: _Round | None) -> None:
    """Keep what the next sync compares, only when this one left both sides
    holding the same summarized refs; else forget it (the next one lists)."""
    if result.outcome == SYNCED and final is not None and final.summary_oid is not None:
        summary.settle(repo, result.remote, final.remote_after, final.summary_oid)
    else:
        summary.forget(repo, result.remote)


def _sync_locked(repo: Repo, remote: str, salvage: bool, dry_run: bool,
                 rounds: int, armed: list[str]) -> tuple[SyncResult, _Round | None]:
    """The rounds, and the last one read (what the remote holds after it)."""
    result = SyncResult(remote=remote, outcome=SYNCED, summary="", dryRun=dry_run, salvage=salvage)
    seen: dict[str, RefSync] = {}
    this: _Round | None = None
    atomic = repo.config_bool("harn.syncAtomic", True)
    finished = False
    for number in range(1, rounds + 1):
        result.rounds = number
        try:
            this = _one_round(repo, remote, salvage, dry_run, armed)
        except RaceLost as exc:
            info(f"fetching raced with another writer ({exc.message}); reading again")
            _pause(number)
            continue
        _remember(seen, this.steps)
        if dry_run:
            finished = True
            break
        try:
            _move(repo, this.local_updates, records.index_edits(repo, this.local_updates))
        except RaceLost as exc:
            info(f"a local ref moved while merging ({exc.message}); reading again")
            _pause(number)
            continue
        if any(ref == NOTES_REF for ref, _, _ in this.local_updates):
            show_notes_in_log(repo)
        if not this.pushes and not this.drops and this.summary_push is None:
            finished = True
            break
        progress(f"pushing {len(this.pushes) + len(this.drops)} ref(s) to {remote}")
        pushed = push_all(repo, remote, this.pushes, atomic, this.summary_push, this.drops)
        failpoint("sync-pushed")  # the remote moved, nothing kept yet: the next sync must list
        atomic = pushed.atomic
        result.atomic = atomic
        result.remoteSaid = pushed.said
        done: dict[str, str | None] = {ref: oid for oid, ref in this.pushes if ref in pushed.pushed}
        done.update((ref, None) for ref, _ in this.drops if ref in pushed.pushed)
        _settle_tracking(repo, remote, done)
        for ref in done:
            seen[ref].pushed = True
        if this.summary_push is not None and summary.SUMMARY_REF in pushed.pushed:
            _settle_tracking(repo, remote, {summary.SUMMARY_REF: this.summary_push.new})
        if pushed.failure is not None or pushed.refused:
            why = pushed.failure or "; ".join(f"{ref}: {text}" for ref, text in sorted(pushed.refused.items()))
            result.refused = why
            result.outcome = PUSH_REFUSED
            warn(f"{remote} refused the push ({why}); not retried")
            for line in pushed.said:
                warn(f"{remote} said: {line}")
            finished = True
            break
        if not pushed.moved:
            finished = True
            break
        info(f"{remote} moved while we pushed ({len(pushed.moved)} ref(s): "
             f"{next(iter(pushed.moved.values()))}); fetching and merging again")
        _pause(number)
    result.refs = [seen[ref] for ref in sorted(seen)]
    _conclude(result, finished)
    return result, this


def _remember(seen: dict[str, RefSync], steps: dict[str, Step]) -> None:
    for ref, step in steps.items():
        before = seen.get(ref)
        local = None if step.drop_local else step.local or step.local_old
        entry = RefSync(ref, step.action, False, local, step.remote, step.detail)
        if before is not None:
            entry.pushed = before.pushed
            if RANK[before.action] > RANK[step.action] and step.action not in (QUARANTINED, DIVERGED):
                entry.action = before.action
                entry.detail = entry.detail or before.detail
        seen[ref] = entry


def _conclude(result: SyncResult, finished: bool, counted: dict[str, int] | None = None) -> None:
    """The outcome and the summary line, from the refs (or ``counted``, when none were listed)."""
    counts: dict[str, int] = dict(counted or {})
    for entry in result.refs:
        counts[entry.action] = counts.get(entry.action, 0) + 1
        if entry.action == QUARANTINED:
            warn(f"quarantined {entry.ref} from {result.remote}: {entry.detail}; the local ref is "
                 "untouched and nothing is pushed over it")
    if counts.get(WAITING):
        info(f"{counts[WAITING]} ref(s) {result.remote} changed are left for a sync after the run: a run here "
             "checks its stages against this clone's refs [T2]; the tracking copies are fetched")
    result.counts = counts
    result.pushedCount = sum(1 for entry in result.refs if entry.pushed)
    if result.outcome == SYNCED:
        if not finished:
            result.outcome = RETRIES_EXHAUSTED
        elif counts.get(QUARANTINED):
            result.outcome = SYNC_QUARANTINED
        elif counts.get(DIVERGED):
            result.outcome = SYNC_DIVERGED
        elif result.dryRun:
            result.outcome = DRY_RUN
    parts = [f"{counts[action]} {action}" for action in sorted(counts, key=lambda a: RANK[a], reverse=True)
             if action != SAME]
    parts.append(f"{result.pushedCount} pushed")
    parts.append(f"{counts.get(SAME, 0)} same")
    lead = {
        SYNCED: f"synced with {result.remote}",
        DRY_RUN: f"dry run against {result.remote} (nothing merged or pushed)",
        PUSH_REFUSED: f"{result.remote} refused the push",
        RETRIES_EXHAUSTED: f"{result.remote} kept moving: gave up after {result.rounds} round(s)",
        SYNC_QUARANTINED: f"synced with {result.remote}, but {counts.get(QUARANTINED, 0)} ref(s) quarantined",
        SYNC_DIVERGED: f"synced with {result.remote}, but salvage branches diverged",
    }[result.outcome]
    result.summary = f"{lead}: {', '.join(parts)} ({result.rounds} round(s))"


__all__ = ["FAST_FORWARD", "SyncResult", "configure", "sync"]
