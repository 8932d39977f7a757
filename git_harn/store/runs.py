"""The record store: one commit chain per run under refs/harnery/runs/<run-id>.

Each event is a commit whose tree holds ``run.json`` (the whole record) and
whose message is ``<event>: <summary>`` with Harnery-* trailers. Writes are
compare-and-swap against the tip that was read, retried from a fresh read
when another writer won [P3].
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pygit2

from git_harn.clock import now_iso
from git_harn.errors import CorruptRecord, HarnError, RaceLost
from git_harn.git import Repo
from git_harn.git.identity import host_name, machine_signature
from git_harn.store.record import RunRecord

RUNS_PREFIX = "refs/harnery/runs/"
RECORD_FILE = "run.json"
MAX_RETRIES = 8


def run_ref(run_id: str) -> str:
    return RUNS_PREFIX + run_id


@dataclass
class Stored:
    record: RunRecord
    tip: pygit2.Oid


@dataclass
class Event:
    oid: pygit2.Oid
    time: int
    event: str
    summary: str
    state: str


@dataclass
class Unreadable:
    """A ref under refs/harnery/runs/ that does not hold a valid record."""

    ref: str
    error: str


def _record_at(repo: Repo, tip: pygit2.Oid, where: str) -> RunRecord:
    try:
        commit = repo.pg[tip]
        tree = commit.peel(pygit2.Tree)
        blob = repo.pg[tree[RECORD_FILE].id]
        data = blob.data  # type: ignore[attr-defined]
    except (KeyError, ValueError, AttributeError, pygit2.GitError) as exc:
        raise CorruptRecord(f"corrupt run record {where}: no {RECORD_FILE} in {tip}") from exc
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


def _one_line(text: str) -> str:
    return " ".join(text.split())[:200]


def write(repo: Repo, record: RunRecord, event: str, summary: str, old_tip: pygit2.Oid | None) -> pygit2.Oid:
    """Append one event commit to the run's chain; RaceLost if the tip moved."""
    record.updatedAt = now_iso()
    blob = repo.pg.create_blob(record.to_json().encode("utf-8"))
    builder = repo.pg.TreeBuilder()
    builder.insert(RECORD_FILE, blob, pygit2.enums.FileMode.BLOB)
    tree = builder.write()
    message = (
        f"{event}: {_one_line(summary)}\n\n"
        f"Harnery-Run: {record.runId}\n"
        f"Harnery-Event: {event}\n"
        f"Harnery-State: {record.state}\n"
        f"Harnery-Host: {host_name(repo)}\n"
    )
    signature = machine_signature(repo)
    parents = [old_tip] if old_tip is not None else []
    commit = repo.pg.create_commit(None, signature, signature, message, tree, parents)
    repo.move_ref(run_ref(record.runId), commit, old_tip, f"git-harn: {event}")
    return commit


Mutation = Callable[[RunRecord | None], tuple[RunRecord, str, str] | None]


def update(repo: Repo, run_id: str, mutate: Mutation) -> RunRecord | None:
    """Read, mutate, write with CAS; on a lost race, retry from a fresh read.

    ``mutate`` gets the current record (or None) and returns
    ``(record, event, summary)`` to write, or None to write nothing.
    """
    for _ in range(MAX_RETRIES):
        current = read(repo, run_id)
        change = mutate(current.record if current else None)
        if change is None:
            return current.record if current else None
        record, event, summary = change
        try:
            write(repo, record, event, summary, current.tip if current else None)
            return record
        except RaceLost:
            continue
    raise RaceLost(f"run {run_id}: the record kept changing under us; try again")


def list_records(repo: Repo) -> Iterator[Stored | Unreadable]:
    """Every run record; a bad one is yielded as Unreadable, not raised."""
    for name, tip in sorted(repo.refs_under(RUNS_PREFIX)):
        try:
            yield Stored(_record_at(repo, tip, name), tip)
        except HarnError as exc:
            yield Unreadable(name, exc.message)


def history(repo: Repo, run_id: str) -> list[Event]:
    """The run's events, newest first: every parent of a merge that ``sync``
    made, so both sides of a diverged chain are shown."""
    tip = repo.ref_oid(run_ref(run_id))
    events: list[Event] = []
    if tip is None:
        return events
    for commit in repo.pg.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME):
        subject = commit.message.split("\n", 1)[0]
        trailers = _trailers(commit.message)
        event, _, summary = subject.partition(": ")
        events.append(Event(commit.id, commit.commit_time, trailers.get("Harnery-Event", event),
                            summary, trailers.get("Harnery-State", "?")))
    return events


def _trailers(message: str) -> dict[str, str]:
    found = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Harnery-"):
            found[key] = value.strip()
    return found
