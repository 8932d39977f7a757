"""The record store: one commit chain per run under refs/harnery/runs/<run-id> [N1].

A run record is one kind of record chain (``store/chain``): each event is a
commit whose tree holds ``run.json`` (the whole record) and whose message is
``<event>: <summary>`` with the ``Harnery-Run``, ``Harnery-Event``,
``Harnery-State`` and ``Harnery-Host`` trailers. Writes are compare-and-swap
against the tip that was read, retried from a fresh read when another writer
won [P3].
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from git_harn.clock import now_iso
from git_harn.errors import BadInput, CorruptRecord, HarnError
from git_harn.git import Oid, Repo
from git_harn.git.identity import host_name
from git_harn.store import chain
from git_harn.store.chain import Unreadable
from git_harn.store.ids import validate_run_id
from git_harn.store.record import SCHEMA_VERSION, RunRecord

RUNS_PREFIX = chain.ROOT + "runs/"
RECORD_FILE = "run.json"

__all__ = ["LIVE", "RUNS", "Event", "Stored", "Unreadable", "history", "list_records", "read", "read_at", "run_ref",
           "undo",
           "update", "write"]


def _check_id(run_id: str) -> None:
    try:
        validate_run_id(run_id)
    except BadInput as exc:
        raise CorruptRecord(exc.message) from exc


def _check(run_id: str, raw: bytes, where: str) -> RunRecord:
    record = RunRecord.from_json(raw, where)
    if record.runId != run_id:
        # A copied or hand-made ref would send our writes to another run's ref.
        raise CorruptRecord(f"run record {where} names another run ({record.runId!r})")
    return record


def _as_dict(record: RunRecord) -> dict[str, Any]:
    return record.as_dict()


def _live(record: RunRecord) -> bool:
    return not record.terminal


# The runs that ended, newest last: a hint for status --last (store/ended).
ENDED_HINT = "ended-runs"
# One ref per live run, made and dropped with the event that starts or ends it
# (store/live reads it, so that listing live runs reads no ended record).
LIVE = chain.LiveIndex(chain.ROOT + "live/", chain.ROOT + "live-index/v1", _live, ENDED_HINT)
RUNS: chain.Kind[RunRecord] = chain.Kind("run record", RUNS_PREFIX, RECORD_FILE, "Harnery-Run", SCHEMA_VERSION,
                                         _check, _as_dict, _check_id, LIVE)


def run_ref(run_id: str) -> str:
    return RUNS.ref(run_id)


class Stored(chain.Stored[RunRecord]):
    """A run record and the tip of its chain."""


class Event(NamedTuple):
    oid: Oid
    time: int
    event: str
    summary: str
    state: str


def _own(found: chain.Stored[RunRecord]) -> Stored:
    return Stored(found.record, found.tip)


def read(repo: Repo, run_id: str) -> Stored | None:
    found = chain.read(repo, RUNS, run_id)
    return None if found is None else _own(found)


def _change(repo: Repo, record: RunRecord, event: str, summary: str) -> chain.Change[RunRecord]:
    record.updatedAt = now_iso()
    more = [("Harnery-State", record.state), ("Harnery-Host", host_name(repo))]
    return chain.Change(record, record.to_json().encode("utf-8"), event, summary, more)


def write(repo: Repo, record: RunRecord, event: str, summary: str, old_tip: Oid | None) -> Oid:
    """Append one event commit to the run's chain; RaceLost if the tip moved."""
    change = _change(repo, record, event, summary)
    return chain.write(repo, RUNS, record.runId, change.content, event, summary, change.more, old_tip,
                       _live(record))


def undo(repo: Repo, run_id: str, tip: Oid, old_tip: Oid | None) -> None:
    """Put the run's chain back from ``tip`` to ``old_tip`` (None: remove
    the record), its live index entry with it: a start that failed leaves
    the record, and the index, as they were."""
    live = old_tip is not None and _live(chain.record_at(repo, RUNS, run_id, old_tip))
    chain.publish(repo, RUNS, run_id, old_tip, tip, live, "git-harn: start failed")


Mutation = Callable[[RunRecord | None], tuple[RunRecord, str, str] | None]


def update(repo: Repo, run_id: str, mutate: Mutation) -> RunRecord | None:
    """Read, mutate, write with CAS; on a lost race, retry from a fresh read.

    ``mutate`` gets the current record (or None) and returns
    ``(record, event, summary)`` to write, or None to write nothing.
    """

    def change(current: chain.Stored[RunRecord] | None) -> chain.Change[RunRecord] | None:
        made = mutate(current.record if current else None)
        return None if made is None else _change(repo, *made)

    return chain.update(repo, RUNS, run_id, change)


def read_at(repo: Repo, name: str, tip: Oid) -> Stored | Unreadable:
    """The record ref ``name`` holds at ``tip``; Unreadable when it holds none."""
    try:
        return Stored(chain.record_at(repo, RUNS, name[len(RUNS_PREFIX):], tip), tip)
    except HarnError as exc:
        return Unreadable(name, exc.message)


def list_records(repo: Repo) -> Iterator[Stored | Unreadable]:
    """Every run record; a bad one is yielded as Unreadable, not raised."""
    for found in chain.list_all(repo, RUNS):
        yield found if isinstance(found, Unreadable) else _own(found)


def history(repo: Repo, run_id: str) -> list[Event]:
    """The run's events, newest first: every parent of a merge that ``sync``
    made, so both sides of a diverged chain are shown."""
    return [Event(e.oid, e.time, e.event, e.summary, e.trailers.get("Harnery-State", "?"))
            for e in chain.history(repo, RUNS, run_id)]
