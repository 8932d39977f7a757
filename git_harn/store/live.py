"""Which run records a command lists: the live ones, and the newest ended ones.

Every command that looks for live runs (``status``, the hooks) or for the
run a workspace branch belongs to (the branch guard), and every listing of
ended runs, asks here, never ``runs.list_records`` itself, so that one
place decides how records are found. Today the live records are found by
reading every record: a run's state is only known from its record.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from git_harn.git import Repo
from git_harn.store.runs import Stored, Unreadable, list_records, read


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
