"""Which run records a command lists: the live ones, and the newest ended ones.

Every command that looks for live runs (``status``, the hooks) or for the
run a workspace branch belongs to (the branch guard), and every listing of
ended runs, asks here, never ``runs.list_records`` itself, so that one
place decides how records are found. Today the live records are found by
reading every record: a run's state is only known from its record.

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

from git_harn.files import atomic_write
from git_harn.git import Repo
from git_harn.store.runs import RUNS_PREFIX, Stored, Unreadable, list_records, read, read_at


def live_records(repo: Repo) -> Iterator[Stored | Unreadable]:
    """The records of runs that have not ended, with the records that
    cannot be read (whether those ended is unknown), in run-id order."""
    for entry in list_records(repo):
        if isinstance(entry, Unreadable) or not entry.record.terminal:
            yield entry


def record_on_branch(repo: Repo, run_id: str, branch_ref: str) -> Stored | None:
    """The record of the run whose workspace branch is ``branch_ref``, the
    branch named after run ``run_id`` (``refs/heads/harnery/ws/<run-id>``):
    that run's record, read alone, live or ended; None when it has none or
    uses another branch. ``start`` gives no other run a branch named after
    a run, so no other record need be read. CorruptRecord if it cannot be read."""
    stored = read(repo, run_id)
    return stored if stored is not None and stored.record.branch_ref == branch_ref else None


def listed_records(repo: Repo, ended: int | None) -> Iterator[Stored | Unreadable]:
    """The live records and, of the ended ones, every one (``ended`` None)
    or the ``ended`` that were written last (by their ``updatedAt``), in
    run-id order; unreadable records too."""
    if ended == 0:
        yield from live_records(repo)
        return
    entries = list(list_records(repo))
    chosen = None if ended is None else _newest_ended(entries, ended)
    for entry in entries:
        if chosen is None or isinstance(entry, Unreadable) or not entry.record.terminal or entry.record.runId in chosen:
            yield entry


def _newest_ended(entries: list[Stored | Unreadable], count: int) -> set[str]:
    """The run ids of the ``count`` ended runs written last."""
    ended = [e for e in entries if isinstance(e, Stored) and e.record.terminal]
    newest = heapq.nlargest(count, ended, key=lambda e: (e.record.updatedAt, e.record.runId))
    return {e.record.runId for e in newest}


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
