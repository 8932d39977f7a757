"""``git harn gc``: old ended run records folded into the archive, their refs
deleted, and the notes of deleted salvage branches pruned [P3] (issue 25).

The order is what makes a kill safe at any point: a batch is first written
into the archive (one commit, compare-and-swap), and only then are its refs
deleted, in one ``git update-ref --stdin`` transaction that checks each ref
still points where it was read. A kill between the two leaves a run both
archived and a ref; the ref wins on read, and the next gc finds the same
blob already archived and deletes the ref. A record that moved since it was
read is not deleted: it stays a ref, and its stale archive entry is never
read while the ref exists.

Never archived: a live record, a preserved one (neither is ended), one
that cannot be read, and one whose workspace folder still exists.
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from git_harn.clock import epoch_of, parse_age
from git_harn.errors import HarnError, RaceLost
from git_harn.failpoints import failpoint
from git_harn.files import atomic_write
from git_harn.git import Oid, Repo, to_oid
from git_harn.notices import warn
from git_harn.results import Result
from git_harn.store import archive, chain
from git_harn.store.notes import prune_salvage_notes, salvage_notes_to_prune
from git_harn.store.runs import LIVE, RUNS

# Settings (docs/archive.md).
AFTER_SETTING = "harn.archiveAfter"  # how long an ended record stays a ref
DEFAULT_AFTER = "30d"
THRESHOLD_SETTING = "harn.archiveThreshold"  # ended record refs past which cleanup archives
DEFAULT_THRESHOLD = 1000
BATCH_SETTING = "harn.archiveBatch"  # runs per archive commit
DEFAULT_BATCH = 1000
# How often at most a cleanup past the threshold tries when its last pass
# found less than a batch: records younger than harn.archiveAfter cannot
# go, and must not be read again by every cleanup.
AUTO_EVERY = 3600.0
# Runs one automatic pass folds at most (fewer if harn.archiveBatch says
# so): one archive commit, well under a second, so that a cleanup never
# waits on a backlog (issue 45: 100,000 ended records folded at once took
# 255 s); the next cleanup folds the next batch, 'git harn gc' all of them.
AUTO_BATCH = 200
# Record refs read past a pass's batch, for those it must leave (live,
# unreadable, a workspace folder still there).
AUTO_MARGIN = 64

ARCHIVED = "archived"
NOTHING = "ok"
DRY_RUN = "dry-run"


@dataclass
class GcResult(Result):
    SCHEMA: ClassVar[str] = "gc-result"

    dryRun: bool
    olderThan: str
    archived: list[str] = field(default_factory=list)  # run ids archived (with --dry-run: would be)
    kept: list[str] = field(default_factory=list)  # archived, but the ref moved meanwhile: it stays
    batches: int = 0
    notesPruned: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # why ended records were left as refs

    @property
    def outcome(self) -> str:
        if self.dryRun:
            return DRY_RUN
        return ARCHIVED if self.archived or self.notesPruned else NOTHING

    def document(self) -> dict[str, Any]:
        return {**super().document(), "outcome": self.outcome}


@dataclass(frozen=True)
class Candidate:
    run_id: str
    tip: Oid
    updated: str


def archive_after(repo: Repo) -> str:
    return repo.config(AFTER_SETTING) or DEFAULT_AFTER


def candidates(repo: Repo, age: float, now: float | None = None) -> tuple[list[Candidate], dict[str, int]]:
    """The ended records written ``age`` seconds ago or more, oldest first,
    and how many ended records were left for each reason."""
    cutoff = (time.time() if now is None else now) - age
    live = set(repo.ref_ids([LIVE.namespace]))
    found: list[Candidate] = []
    skipped: dict[str, int] = {}
    for name, oid in sorted(repo.ref_ids([RUNS.namespace]).items()):
        run_id, tip = name[len(RUNS.namespace):], to_oid(oid)
        try:
            record = chain.record_at(repo, RUNS, run_id, tip)
        except HarnError:
            continue  # unreadable: status reports it; never archived
        if not record.terminal or LIVE.entry(run_id) in live:
            continue
        why = _left_because(record.updatedAt, record.path, cutoff, age)
        if why is not None:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        found.append(Candidate(run_id, tip, record.updatedAt))
    found.sort(key=lambda c: (c.updated, c.run_id))
    return found, skipped


def first_candidates(repo: Repo, age: float, count: int, listed: dict[str, str]) -> list[Candidate]:
    """Up to ``count`` ended records written ``age`` seconds ago or more,
    oldest first, of ``listed``: the first record refs by name (one
    ``for-each-ref --count``), never every record, and never sorted by
    time: that sort reads every record commit's header, half a second at
    100,000 (issue 45 item 15). Run ids git-harn makes begin with their
    start time, so the first by name are the first started; a record that
    must stay (live, unreadable, too recent, its folder still there) is
    passed over, and what the pass leaves gc archives."""
    cutoff = time.time() - age
    live = set(repo.ref_ids([LIVE.namespace]))
    found: list[Candidate] = []
    for name, oid in sorted(listed.items()):
        if len(found) >= count:
            break
        run_id = name[len(RUNS.namespace):]
        if LIVE.entry(run_id) in live:
            continue
        try:
            record = chain.record_at(repo, RUNS, run_id, to_oid(oid))
        except HarnError:
            continue  # unreadable: status reports it; never archived
        if record.terminal and _left_because(record.updatedAt, record.path, cutoff, age) is None:
            found.append(Candidate(run_id, to_oid(oid), record.updatedAt))
    found.sort(key=lambda c: (c.updated, c.run_id))
    return found


def _left_because(updated: str, path: str, cutoff: float, age: float) -> str | None:
    when = epoch_of(updated)
    if age > 0 and (when is None or when > cutoff):
        return "too-recent"
    if path and Path(path).exists():
        return "workspace-exists"
    return None


def gc(repo: Repo, older_than: str | None = None, dry_run: bool = False) -> GcResult:
    """Archive the ended records older than ``older_than`` (default
    harn.archiveAfter), batch by batch, then prune the salvage notes."""
    shown = older_than if older_than is not None else archive_after(repo)
    age = parse_age(shown)
    found, skipped = candidates(repo, age)
    result = GcResult(dry_run, shown, skipped=skipped)
    if dry_run:
        result.archived = [c.run_id for c in found]
        result.notesPruned = len(salvage_notes_to_prune(repo))
        return result
    size = max(1, repo.config_int(BATCH_SETTING, DEFAULT_BATCH))
    for start in range(0, len(found), size):
        batch = found[start:start + size]
        deleted, kept = _archive_batch(repo, batch)
        result.archived += deleted
        result.kept += kept
        result.batches += 1
    failpoint("gc-before-notes-prune")
    result.notesPruned = prune_salvage_notes(repo)
    return result


def _archive_batch(repo: Repo, batch: list[Candidate]) -> tuple[list[str], list[str]]:
    """Fold one batch, then delete the refs of its runs still where they were read."""
    folded = [archive.Folded(archive.snapshot(repo, c.run_id, c.tip), c.updated) for c in batch]
    archive.fold(repo, folded)
    failpoint("gc-after-archive-commit")
    refs = [(RUNS.ref(c.run_id), None, c.tip) for c in batch]
    try:
        repo.update_refs(refs)
        deleted = [c.run_id for c in batch]
    except RaceLost:  # one moved (or another gc took it): each alone, the moved ones kept
        deleted = [c.run_id for c in batch if _delete_one(repo, c)]
    failpoint("gc-after-ref-deletion")
    kept = [c.run_id for c in batch if c.run_id not in set(deleted) and repo.ref_oid(RUNS.ref(c.run_id)) is not None]
    return deleted, kept


def _delete_one(repo: Repo, candidate: Candidate) -> bool:
    try:
        repo.update_refs([(RUNS.ref(candidate.run_id), None, candidate.tip)])
    except RaceLost:
        return repo.ref_oid(RUNS.ref(candidate.run_id)) is None and archive.archived(repo, candidate.run_id) is not None
    return True


# --- past the threshold, from cleanup --------------------------------------------------------


def archive_if_due(repo: Repo) -> GcResult | None:
    """From a command that just ended a run: when more ended record refs
    than harn.archiveThreshold are left (the live index and the first
    record refs by name, past the threshold by a margin: two
    ``for-each-ref``, whatever the number of records), archive one batch
    (AUTO_BATCH) of those older than harn.archiveAfter, the first by name
    (``first_candidates``). A pass that folded a full batch
    lets the next cleanup go on; one that found less is not tried again
    for an hour, as records too young to go would be read again by every
    cleanup. Never fails the command that called it: a failure is a warning."""
    threshold = repo.config_int(THRESHOLD_SETTING, DEFAULT_THRESHOLD)
    if threshold <= 0 or _tried_lately(repo):
        return None  # 0 turns it off
    # Past the threshold when more record refs than it and the live runs:
    # the first that many by name, no more, and those are the candidates.
    live = len(repo.ref_ids([LIVE.namespace]))
    listed = repo.ref_ids([RUNS.namespace], count=threshold + live + 1 + AUTO_MARGIN)
    if len(listed) - live <= threshold or not _due(repo):
        return None
    try:
        result = _one_batch(repo, listed)
    except HarnError as exc:
        warn(f"could not archive ended run records ({exc.message}); 'git harn gc' tries again")
        return None
    if result.archived and len(result.archived) + len(result.kept) >= _auto_size(repo):
        with suppress(OSError):  # a full batch: more may be due, and the next cleanup goes on
            _stamp(repo).unlink()
    return result


def _auto_size(repo: Repo) -> int:
    return min(AUTO_BATCH, max(1, repo.config_int(BATCH_SETTING, DEFAULT_BATCH)))


def _one_batch(repo: Repo, listed: dict[str, str]) -> GcResult:
    """An automatic pass: one batch of what gc would archive, of the record
    refs ``listed``, then the salvage notes pruned, as gc does."""
    shown = archive_after(repo)
    found = first_candidates(repo, parse_age(shown), _auto_size(repo), listed)
    result = GcResult(False, shown)
    if found:
        result.archived, result.kept = _archive_batch(repo, found)
        result.batches = 1
    result.notesPruned = prune_salvage_notes(repo)
    return result


def _stamp(repo: Repo) -> Path:
    return repo.common_dir / "harnery" / "cache" / "archive-tried"


def _tried_lately(repo: Repo) -> bool:
    """Whether a pass found less than a batch within AUTO_EVERY: then no
    record ref is listed at all."""
    with suppress(OSError):
        return time.time() - _stamp(repo).stat().st_mtime < AUTO_EVERY
    return False


def _due(repo: Repo) -> bool:
    path = _stamp(repo)
    if _tried_lately(repo):
        return False
    with suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, b"git-harn: when cleanup last tried to archive (a cache; safe to delete)\n")
    return True
