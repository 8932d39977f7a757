"""The record store: one commit chain per run under refs/harnery/runs/<run-id>.

Each event is a commit whose tree holds ``run.json`` (the whole record) and
whose message is ``<event>: <summary>`` with Harnery-* trailers. Writes are
compare-and-swap against the tip that was read, retried from a fresh read
when another writer won [P3].
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from git_harn.clock import now_iso
from git_harn.errors import CorruptRecord, HarnError
from git_harn.git import Oid, Repo
from git_harn.git.cas import retry_cas
from git_harn.git.identity import host_name, machine_signature
from git_harn.git.objects import BLOB_MODE
from git_harn.store.record import RunRecord
from git_harn.text import one_line

RUNS_PREFIX = "refs/harnery/runs/"
RECORD_FILE = "run.json"


def run_ref(run_id: str) -> str:
    return RUNS_PREFIX + run_id


@dataclass
class Stored:
    record: RunRecord
    tip: Oid


@dataclass
class Event:
    oid: Oid
    time: int
    event: str
    summary: str
    state: str


@dataclass
class Unreadable:
    """A ref under refs/harnery/runs/ that does not hold a valid record."""

    ref: str
    error: str


def _record_at(repo: Repo, tip: Oid, where: str) -> RunRecord:
    data = repo.read_file(tip, RECORD_FILE)
    if data is None:
        raise CorruptRecord(f"corrupt run record {where}: no {RECORD_FILE} in {tip}")
    record = RunRecord.from_json(data, where)
    if where.startswith(RUNS_PREFIX) and record.runId != where[len(RUNS_PREFIX):]:
        # A copied or hand-made ref would send our writes to another run's ref.
        raise CorruptRecord(f"run record {where} names another run ({record.runId!r})")
    return record


def read(repo: Repo, run_id: str) -> Stored | None:
    ref = run_ref(run_id)
    tip = repo.ref_oid(ref)
    if tip is None:
        return None
    return Stored(_record_at(repo, tip, ref), tip)


def write(repo: Repo, record: RunRecord, event: str, summary: str, old_tip: Oid | None) -> Oid:
    """Append one event commit to the run's chain; RaceLost if the tip moved."""
    record.updatedAt = now_iso()
    message = (
        f"{event}: {one_line(summary)}\n\n"
        f"Harnery-Run: {record.runId}\n"
        f"Harnery-Event: {event}\n"
        f"Harnery-State: {record.state}\n"
        f"Harnery-Host: {host_name(repo)}\n"
    )
    parents = [old_tip] if old_tip is not None else []
    commit = repo.commit_files({RECORD_FILE: (record.to_json().encode("utf-8"), BLOB_MODE)}, message,
                               parents, machine_signature(repo))
    repo.move_ref(run_ref(record.runId), commit, old_tip, f"git-harn: {event}")
    return commit


Mutation = Callable[[RunRecord | None], tuple[RunRecord, str, str] | None]


def update(repo: Repo, run_id: str, mutate: Mutation) -> RunRecord | None:
    """Read, mutate, write with CAS; on a lost race, retry from a fresh read.

    ``mutate`` gets the current record (or None) and returns
    ``(record, event, summary)`` to write, or None to write nothing.
    """

    def attempt() -> RunRecord | None:
        current = read(repo, run_id)
        change = mutate(current.record if current else None)
        if change is None:
            return current.record if current else None
        record, event, summary = change
        write(repo, record, event, summary, current.tip if current else None)
        return record

    return retry_cas(attempt, f"the record of run {run_id}")


def read_at(repo: Repo, name: str, tip: Oid) -> Stored | Unreadable:
    """The record ref ``name`` holds at ``tip``; Unreadable when it holds none."""
    try:
        return Stored(_record_at(repo, tip, name), tip)
    except HarnError as exc:
        return Unreadable(name, exc.message)


def list_records(repo: Repo) -> Iterator[Stored | Unreadable]:
    """Every run record; a bad one is yielded as Unreadable, not raised."""
    for name, tip in sorted(repo.refs_under(RUNS_PREFIX)):
        yield read_at(repo, name, tip)


def history(repo: Repo, run_id: str) -> list[Event]:
    """The run's events, newest first: every parent of a merge that ``sync``
    made, so both sides of a diverged chain are shown."""
    tip = repo.ref_oid(run_ref(run_id))
    events: list[Event] = []
    if tip is None:
        return events
    for commit in repo.walk(tip, by_time=True):
        subject = commit.message.split("\n", 1)[0]
        trailers = _trailers(commit.message)
        event, _, summary = subject.partition(": ")
        events.append(Event(commit.oid, commit.time, trailers.get("Harnery-Event", event),
                            summary, trailers.get("Harnery-State", "?")))
    return events


def _trailers(message: str) -> dict[str, str]:
    found = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Harnery-"):
            found[key] = value.strip()
    return found
