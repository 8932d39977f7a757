"""Which run records a command lists: the live ones, and the newest ended ones.

Every command that looks for live runs (``status``, the hooks, ``resume``)
or for the run a workspace branch belongs to (the branch guard), and every
listing of ended runs, asks here, never ``runs.list_records`` itself, so
that one place decides how records are found.

The live index. A team ends a year with 100,000 run records, nearly all of
them ended; listing the live runs must read none of those. So every live
run has one more ref, ``refs/harnery/live/<run-id>`` (``runs.LIVE``),
pointing at a commit of its chain, and an ended run has none:

- Written with the record. The event that makes a run live (``start``) or
  ended (released, already gone) moves the record ref and makes or drops
  the entry in one ``git update-ref --stdin`` transaction (``chain.write``,
  the one writer of records), so there is no moment, and no crash, with one
  done and the other not. An event that leaves the run as live as it was
  moves the record ref alone, as before. ``sync`` puts the entries of the
  records it fetches or merges into the transaction that moves them.
- Read here: one ``git for-each-ref refs/harnery/live/``, then the record
  each entry names, read alone. The record decides, never the entry: an
  entry whose record ended (or is gone) is stale, left by a tool that does
  not keep the index, and is dropped when read, in a transaction that
  checks the record is still at the tip that was read.
- Built once. Just before the first record of a repository (or the first
  a sync brings) is written, the marker ref ``refs/harnery/live-index/v1``,
  which says every live record has its entry, is made where it is missing,
  in a transaction of its own (in each first record's, concurrent starts
  fought over its lock; ``chain.mark_first``). A repository written before
  the index has neither entries nor marker: the first command that lists
  live runs then reads every record once, and writes an entry for each
  live (or unreadable) one and the marker in one transaction. A killed
  build leaves no marker, so the next command builds again; a build racing
  another, or a writer, errs only towards a stale entry, which the next
  read drops. Deleting the marker builds it again.

The ended runs ``status --last N`` lists come from the hint of the runs
that ended last (``store/ended``), which names the records to read, each
read from its own ref; the record refs are listed by time only where the
hint cannot settle the answer.

The entries are this clone's: ``sync`` never pushes them, and the walks for
unmerged work never read them (``bookkeeping.BOOKKEEPING``).

``live_records_by_tip`` (``git harn doctor``) reads each ended record once,
ever. A record's state is a function of its tip (the commit names its tree,
the tree its ``run.json``), so the tips whose record was read and found
ended are kept in a cache file beside the locks, one object id a line, and
a record whose ref still points at such a tip is ended without being read.
A record that moved (a new event, a sync merge) has a new tip and is read
again. The file is only a cache: unreadable or absent, every record is
read, and the file is written afresh.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from git_harn.clock import epoch_of
from git_harn.errors import GitFailure, HarnError, RaceLost
from git_harn.files import atomic_write
from git_harn.git import ANY, Oid, Repo, to_oid
from git_harn.git.repo import Unchecked
from git_harn.notices import warn
from git_harn.store import chain
from git_harn.store.ids import valid_run_id
from git_harn.store.locks import live_run_locks
from git_harn.store.runs import (
    ENDED_HINT,
    LIVE,
    RUNS,
    RUNS_PREFIX,
    Stored,
    Unreadable,
    list_records,
    read,
    read_at,
    run_ref,
)

if TYPE_CHECKING:  # --last only loads it
    from git_harn.store.ended import Hint, Rebuild


def live_records(repo: Repo, listed: dict[str, str] | None = None) -> Iterator[Stored | Unreadable]:
    """The records of runs that have not ended, with the records that
    cannot be read (whether those ended is unknown), in run-id order. No
    ended record is read (but once, to build the index: see above).
    ``listed``: ``repo.ref_ids`` of (at least) ``LIVE_LISTING``, read by the
    caller in the same ``for-each-ref`` as other refs it needs."""
    for run_id, entry in sorted(live_entries(repo, listed).items()):
        found = _record(repo, run_id, entry)
        if found is not None:
            yield found


def live_entries(repo: Repo, listed: dict[str, str] | None = None) -> dict[str, Oid]:
    """run id -> what its index entry points at, the index built first if
    this repository has none yet."""
    if listed is None:
        listed = _listed(repo)
    found = {name[len(LIVE.namespace):]: to_oid(oid) for name, oid in listed.items()
             if name.startswith(LIVE.namespace)}
    if LIVE.marker not in listed:
        found.update(_build(repo, set(found)))
    return found


# The refs that list the live runs: the entries and the marker.
LIVE_LISTING = (LIVE.namespace, LIVE.marker)


def _listed(repo: Repo) -> dict[str, str]:
    return repo.ref_ids(LIVE_LISTING)


def _record(repo: Repo, run_id: str, entry: Oid) -> Stored | Unreadable | None:
    """The live record an entry names; None (the entry dropped) when it has ended."""
    tip = repo.ref_oid(run_ref(run_id))
    if tip is None:
        _drop(repo, run_id, None, entry)
        return None
    try:
        record = chain.record_at(repo, RUNS, run_id, tip)
    except HarnError as exc:
        return Unreadable(run_ref(run_id), exc.message)
    if record.terminal:  # ended by a writer that keeps no index: noted for --last too
        from git_harn.store import ended

        ended.note(repo, ENDED_HINT, [(run_id, tip)])
        _drop(repo, run_id, tip, entry)
        return None
    return Stored(record, tip)


def _drop(repo: Repo, run_id: str, tip: Oid | None, entry: Oid) -> None:
    """Drop a stale entry, if the record is still at ``tip`` (None: still
    absent) and the entry still at ``entry``: a record that moved since it
    was read is its writer's to index. Tidying only, so a failure is left
    for the next read, as it is while another git holds packed-refs.lock
    (a deletion would wait for it)."""
    if repo.packed_refs_locked():
        return
    with suppress(RaceLost, GitFailure):
        repo.update_refs([(run_ref(run_id), tip, tip), (LIVE.entry(run_id), None, entry)])


def _build(repo: Repo, listed: set[str]) -> dict[str, Oid]:
    """The entries of a repository written before the index (those of
    ``listed`` runs are there already), and its marker, in one transaction;
    another command that built them first wins. Returns the entries made
    (nothing is written where there is no record at all)."""
    built: dict[str, Oid] = {}
    records = repo.ref_ids([RUNS.namespace])
    if not records:
        return built
    for name, oid in sorted(records.items()):
        run_id, tip = name[len(RUNS.namespace):], to_oid(oid)
        try:
            live = LIVE.is_live(chain.record_at(repo, RUNS, run_id, tip))
        except HarnError:
            live = True  # listed, so status reports it
        if live and run_id not in listed:
            built[run_id] = tip
    marker = chain.index_marker(repo, LIVE)
    # ANY: a writer may have made an entry since its record was read here.
    edits: list[tuple[str, Oid | None, Oid | None | Unchecked]] = [
        *((LIVE.entry(run_id), tip, ANY) for run_id, tip in built.items()), (LIVE.marker, marker, None)]
    try:
        repo.update_refs(edits)
    except RaceLost as exc:
        if repo.ref_oid(LIVE.marker) is None:  # not another build that won: say so, as this listing reads all
            warn(f"could not write the live index ({exc.message}); every record was read to find the live runs")
    return built


def record_on_branch(repo: Repo, run_id: str, branch_ref: str) -> Stored | None:
    """The record of the run whose workspace branch is ``branch_ref``, the
    branch named after run ``run_id`` (``refs/heads/harnery/ws/<run-id>``):
    that run's record, read alone, live or ended; None when it has none or
    uses another branch. ``start`` gives no other run a branch named after
    a run, so no other record need be read. CorruptRecord if it cannot be read."""
    stored = read(repo, run_id)
    return stored if stored is not None and stored.record.branch_ref == branch_ref else None


def listed_records(repo: Repo, ended: int | None,
                   listed: dict[str, str] | None = None) -> Iterator[Stored | Unreadable]:
    """The live records and, of the ended ones, every one (``ended`` None)
    or the ``ended`` that were written last (by their ``updatedAt``), in
    run-id order; unreadable records too. Archived runs count as ended
    runs (``store/archive``), except where the run has a ref: the ref wins.
    For ``ended`` N only the archive's newest batches are read. ``listed``:
    as ``live_records`` takes it, used for the live runs alone (``ended`` 0)."""
    if ended == 0:
        yield from live_records(repo, listed)
        return
    if ended is not None:
        yield from sorted(_newest_listed(repo, ended), key=_run_order)
        return
    from git_harn.store import archive  # ended runs only: the live listing never loads it

    entries = list(list_records(repo))
    with_refs = {e.ref[len(RUNS_PREFIX):] if isinstance(e, Unreadable) else e.record.runId for e in entries}
    entries += list(archive.every_archived(repo, with_refs))
    yield from sorted(entries, key=_run_order)


# How many record refs past those a listing needs are read at first: one
# ``for-each-ref`` sorts them all anyway, so a few more cost nothing, and
# they settle the newest ended runs in one call but where many ended in
# the same second.
MARGIN = 64


def _newest_listed(repo: Repo, count: int) -> list[Stored | Unreadable]:
    """The live records (by the live index) and the ``count`` ended ones
    written last, of records and archive together, never reading every
    record (issue 45: 100,000 ended records took 54 times as long as 100).
    The hint of the runs that ended last (``store/ended``) names the records
    to read; where it cannot settle the answer, or is missing, the record
    refs are read by their commits' time (and a missing hint is written
    afresh from that listing). An unreadable record is listed where its
    ref is read, no longer always."""
    live = list(live_records(repo))
    seen = {_run_order(e) for e in live}
    from git_harn.store import ended  # --last only: the listing of live runs never loads it

    hint = ended.read(repo, ENDED_HINT)
    if hint is not None:
        found = _newest_by_hint(repo, count, set(seen), hint)
        if found is not None:
            return live + found
        return live + _newest_by_time(repo, count, len(live), seen, None)
    rebuild = ended.Rebuild(repo, ENDED_HINT)
    rebuild.begin()
    return live + _newest_by_time(repo, count, len(live), seen, rebuild)


def _newest_by_hint(repo: Repo, count: int, seen: set[str], hint: Hint) -> list[Stored | Unreadable] | None:
    """The ``count`` newest ended records the hint's lines lead to, read
    from their refs, newest line first, until no line left can be newer than
    the ``count``-th found (a record's commit is made after its ``updatedAt``
    is stamped, and a line holds its commit's time); None when the records
    found do not settle it: too few above the hint's floor."""
    chosen: dict[str, Stored] = {}
    others: list[Stored | Unreadable] = []  # unreadable, or live without an index entry: listed as before
    stamps: list[float] = []  # the ``count`` newest found, the oldest of them first
    for line in hint.newest_first():
        if len(stamps) >= count and stamps[0] > line.when:
            break
        if line.record_id in seen or not valid_run_id(line.record_id):
            continue
        seen.add(line.record_id)
        name = run_ref(line.record_id)
        tip = repo.ref_oid(name)  # the ref, never the line, says what the record holds
        if tip is None:
            continue  # archived (the archive is read below) or gone
        entry = read_at(repo, name, tip)
        if isinstance(entry, Stored) and entry.record.terminal:
            chosen[line.record_id] = entry
            heapq.heappush(stamps, _stamp(entry))
            if len(stamps) > count:
                heapq.heappop(stamps)
        else:
            others.append(entry)
    if hint.floor > 0 and (len(stamps) < count or stamps[0] <= hint.floor):
        return None  # a record older than the lines may lack one
    return others + heapq.nlargest(count, _from_archive(repo, count, chosen), key=_newest_key)


def _newest_by_time(repo: Repo, count: int, live: int, seen: set[str],
                    rebuild: Rebuild | None) -> list[Stored | Unreadable]:
    """The ``count`` newest ended records, reading the newest record refs by
    their commits' time: a record whose commit is older than the
    ``count``-th newest ``updatedAt`` cannot be newer; where the refs first
    read do not settle it (many ended in the same second), every ref is
    listed by time. ``rebuild``: the hint to write from the listing."""
    chosen: dict[str, Stored] = {}
    others: list[Stored | Unreadable] = []
    for size in (count + live + MARGIN, None):
        listed = _by_time(repo, size, rebuild)
        rebuild = None
        for name, tip, _when in listed:
            run_id = name[len(RUNS_PREFIX):]
            if run_id in seen:
                continue
            seen.add(run_id)
            entry = read_at(repo, name, tip)
            if isinstance(entry, Stored) and entry.record.terminal:
                chosen[run_id] = entry
            else:
                others.append(entry)
        newest = heapq.nlargest(count, _from_archive(repo, count, chosen), key=_newest_key)
        if size is None or len(listed) < size or (
                len(newest) == count and listed and _stamp(newest[-1]) > listed[-1][2]):
            break
    return others + newest


def _by_time(repo: Repo, size: int | None, rebuild: Rebuild | None) -> list[tuple[str, Oid, int]]:
    """The ``size`` newest record refs by time (None: all); with ``rebuild``,
    at least the hint's KEEP of them listed, and the hint written from them."""
    if rebuild is None:
        return repo.refs_by_time(RUNS.namespace, size)
    from git_harn.store.ended import KEEP

    wide = repo.refs_by_time(RUNS.namespace, None if size is None else max(size, KEEP))
    complete = size is None or len(wide) < max(size, KEEP)
    rebuild.finish([(name[len(RUNS_PREFIX):], str(tip), when) for name, tip, when in wide], complete)
    return wide if size is None else wide[:size]


def _from_archive(repo: Repo, count: int, refs: dict[str, Stored]) -> list[Stored]:
    """``refs``' ended records and the ``count`` newest archived runs that
    have no ref (a run's ref wins over its archived copy): archived runs
    are asked for until ``count`` without a ref are found or none are left."""
    from git_harn.store import archive  # ended runs only: the live listing never loads it

    ended = list(refs.values())
    asked = count
    while asked > 0:
        found = archive.newest_archived(repo, asked, set(refs))
        kept = [e for e in found if isinstance(e, Stored) and repo.ref_oid(run_ref(e.record.runId)) is None]
        if len(kept) >= count or len(found) < asked:
            return ended + kept
        asked *= 2
    return ended


def _newest_key(entry: Stored) -> tuple[str, str]:
    return entry.record.updatedAt, entry.record.runId


def _stamp(entry: Stored) -> float:
    """When a record says it was written, in seconds (0 if it says nothing readable)."""
    return epoch_of(entry.record.updatedAt) or 0.0


def _run_order(entry: Stored | Unreadable) -> str:
    """Run-id order, as the refs list them (an archived one sorts by its id too)."""
    if isinstance(entry, Stored):
        return entry.record.runId
    return entry.ref[len(RUNS_PREFIX):] if entry.ref.startswith(RUNS_PREFIX) else entry.ref.rsplit("/", 1)[-1][:-5]


CACHE_NAME = "ended-run-tips"
HEADER = "# git-harn: tips of ended run records (a cache; safe to delete)\n"


def cache_path(repo: Repo) -> Path:
    return repo.common_dir / "harnery" / "cache" / CACHE_NAME


def _load(path: Path) -> set[str]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return set()
    if not text.startswith(HEADER):
        return set()
    return {line for line in text[len(HEADER):].splitlines() if len(line) in (40, 64)}


def live_records_by_tip(repo: Repo) -> tuple[list[Stored | Unreadable], int]:
    """The records that have not ended (and the unreadable ones, in ref
    order), and how many ended; each ended record is read once, ever."""
    path = cache_path(repo)
    known = _load(path)
    ended: set[str] = set()
    live: list[Stored | Unreadable] = []
    for name, tip in sorted(repo.refs_under(RUNS_PREFIX)):
        hexed = str(tip)
        if hexed in known:
            ended.add(hexed)
            continue
        entry = read_at(repo, name, tip)
        if isinstance(entry, Stored) and entry.record.terminal:
            ended.add(hexed)
        else:
            live.append(entry)
    if ended != known:
        with suppress(OSError):  # a cache: a read-only repository only pays the reads again
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, (HEADER + "".join(f"{oid}\n" for oid in sorted(ended))).encode())
    return live, len(ended)


def live_workspace_branches(repo: Repo) -> dict[str, str]:
    """Branch -> who holds it, for every workspace whose run lock a live
    process (or a command it started) holds: a live run works there [L2]."""
    found = {}
    for run_id, owner in live_run_locks(repo).items():
        stored = read(repo, run_id)
        if stored is not None and not stored.record.terminal:
            found[stored.record.branch] = (f"run {run_id} ({owner.get('purpose') or 'busy'}, pid "
                                           f"{owner.get('pid', '?')} on {owner.get('host', '?')})")
    return found
