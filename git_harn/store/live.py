"""Which run records a command lists: the live ones, and the newest ended ones.

Every command that looks for live runs (``status``, the hooks, the branch
guard's fallback) and every listing of ended runs asks here, never
``runs.list_records`` itself, so that one place decides how records are
found. Today both read every record; a run's state is only known from its
record.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from git_harn.git import Repo
from git_harn.store.runs import Stored, Unreadable, list_records


def live_records(repo: Repo) -> Iterator[Stored | Unreadable]:
    """The records of runs that have not ended, with the records that
    cannot be read (whether those ended is unknown), in run-id order."""
    for entry in list_records(repo):
        if isinstance(entry, Unreadable) or not entry.record.terminal:
            yield entry


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
