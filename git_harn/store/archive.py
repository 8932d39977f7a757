"""The archive of ended run records: one chain at ``refs/harnery/archive/runs``.

A year of runs leaves 100,000 ended records, each a ref and a chain of
commits. ``git harn gc`` folds the old ones into this one ref and deletes
theirs, so their commits become unreachable and ``git gc`` prunes them.

Each archive commit folds one batch. Its tree is cumulative:

- ``runs/<sha1(id)[:2]>/<id>.json`` for every archived run: one compact
  JSON object holding what reads the run back byte for byte, ``tip`` (the
  record's tip commit), ``record`` (the exact ``run.json`` at that tip, as
  text) and ``events`` (its history as ``runs.history`` gives it, each
  ``[oid, time, event, summary, state]``). The fan-out is by a hash of the
  id: run ids mostly start alike (``run-2026…``).
- ``batches/<seq>.json`` for every batch: the runs it folded, each
  ``[updatedAt, id]``.
- ``batches.json``: one line per batch (seq, its newest and oldest
  ``updatedAt``, how many), newest batch first, so the newest archived runs
  are found by reading a few batch lists, never every run's blob.

A run whose ref exists is read from its ref: the ref wins (a record that
moved after it was archived, or one a killed gc did not get to delete).
The archive ref is written through ``store/chain``'s one CAS loop.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from git_harn.errors import CorruptRecord, HarnError
from git_harn.files import loads_json
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.objects import BLOB_MODE
from git_harn.store import chain
from git_harn.store.runs import RUNS, Event, Stored, Unreadable, history, read

ARCHIVE_REF = chain.ROOT + "archive/runs"
RUNS_FOLDER = "runs"
BATCHES_FOLDER = "batches"
BATCHES_FILE = "batches.json"
FORMAT = 1


def blob_path(run_id: str) -> str:
    fan = hashlib.sha1(run_id.encode("utf-8"), usedforsecurity=False).hexdigest()[:2]
    return f"{RUNS_FOLDER}/{fan}/{run_id}.json"


@dataclass(frozen=True)
class Archived:
    """One archived run as its blob holds it."""

    run_id: str
    tip: str
    raw: str  # run.json at the tip, exactly
    events: list[list[Any]]

    def blob(self) -> bytes:
        body = {"v": FORMAT, "tip": self.tip, "record": self.raw, "events": self.events}
        return json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode("ascii")

    def stored(self) -> Stored:
        where = f"{ARCHIVE_REF}:{blob_path(self.run_id)}"
        return Stored(RUNS.check(self.run_id, self.raw.encode("utf-8"), where), to_oid(self.tip))

    def has_event(self, oid: str) -> bool:
        """Whether the run's chain was archived at commit ``oid`` or later."""
        return any(event[0] == oid for event in self.events)

    def history(self) -> list[Event]:
        return [Event(to_oid(oid), time, event, summary, state) for oid, time, event, summary, state in self.events]


def snapshot(repo: Repo, run_id: str, tip: Oid) -> Archived:
    """What the archive keeps of a record whose ref is at ``tip``."""
    raw = repo.read_file(tip, RUNS.file, limit=chain.READ_LIMIT)
    if raw is None:
        raise CorruptRecord(f"corrupt {RUNS.noun} {RUNS.ref(run_id)}: no {RUNS.file} in {tip}")
    events = [[str(e.oid), e.time, e.event, e.summary, e.state] for e in history_at(repo, tip)]
    return Archived(run_id, str(tip), raw.decode("utf-8"), events)


def history_at(repo: Repo, tip: Oid) -> list[Event]:
    return [Event(e.oid, e.time, e.event, e.summary, e.trailers.get("Harnery-State", "?"))
            for e in chain.entries(repo, tip)]


def parse(run_id: str, raw: bytes) -> Archived:
    where = f"{ARCHIVE_REF}:{blob_path(run_id)}"
    try:
        data = loads_json(raw)
        archived = Archived(run_id, str(data["tip"]), str(data["record"]), list(data["events"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptRecord(f"corrupt archived run {where}: {exc}") from exc
    return archived


def archived(repo: Repo, run_id: str, tip: Oid | None = None) -> Archived | None:
    """The archive's entry for ``run_id`` (None: not archived)."""
    tip = tip if tip is not None else repo.ref_oid(ARCHIVE_REF)
    if tip is None:
        return None
    raw = repo.read_file(tip, blob_path(run_id), limit=chain.READ_LIMIT)
    return None if raw is None else parse(run_id, raw)


# --- reading runs: the ref first, then the archive ---------------------------------------


def read_run(repo: Repo, run_id: str) -> Stored | None:
    """A run's record from its ref, or else from the archive."""
    stored = read(repo, run_id)
    if stored is not None:
        return stored
    found = archived(repo, run_id)
    return None if found is None else found.stored()


def run_history(repo: Repo, run_id: str) -> list[Event]:
    """A run's events from its ref, or else as the archive kept them."""
    if repo.ref_oid(RUNS.ref(run_id)) is not None:
        return history(repo, run_id)
    found = archived(repo, run_id)
    return [] if found is None else found.history()


def archived_ids(repo: Repo, tip: Oid) -> list[str]:
    """Every archived run id (one listing per fan-out folder, no blob read)."""
    ids: list[str] = []
    for folder in repo.names_in(tip, RUNS_FOLDER)[1]:
        ids += [name[:-len(".json")] for name in repo.names_in(tip, f"{RUNS_FOLDER}/{folder}")[0]]
    return ids


def every_archived(repo: Repo, shadowed: set[str]) -> Iterator[Stored | Unreadable]:
    """Every archived run whose id is not in ``shadowed`` (those with a ref)."""
    tip = repo.ref_oid(ARCHIVE_REF)
    if tip is None:
        return
    for run_id in sorted(set(archived_ids(repo, tip)) - shadowed):
        yield _stored(repo, run_id, tip)


def _stored(repo: Repo, run_id: str, tip: Oid) -> Stored | Unreadable:
    try:
        found = archived(repo, run_id, tip)
        if found is None:
            raise CorruptRecord(f"archived run {run_id} is gone from {ARCHIVE_REF}")
        return found.stored()
    except HarnError as exc:
        return Unreadable(f"{ARCHIVE_REF}:{blob_path(run_id)}", exc.message)


def newest_archived(repo: Repo, count: int, shadowed: set[str]) -> list[Stored | Unreadable]:
    """The ``count`` archived runs written last (by ``updatedAt``), of those
    not in ``shadowed``: the batch lists are read newest batch first, and
    only until no older batch can hold a newer run; only the chosen runs'
    blobs are read."""
    tip = repo.ref_oid(ARCHIVE_REF)
    if tip is None or count <= 0:
        return []
    best: dict[str, str] = {}
    for batch in sorted(_batches(repo, tip), key=lambda b: (b["newest"], b["seq"]), reverse=True):
        if len(best) >= count and batch["newest"] < heapq.nlargest(count, best.values())[-1]:
            break
        for updated, run_id in _batch_runs(repo, tip, batch["seq"]):
            if run_id not in shadowed and updated > best.get(run_id, ""):
                best[run_id] = updated
    chosen = heapq.nlargest(count, best.items(), key=lambda item: (item[1], item[0]))
    return [_stored(repo, run_id, tip) for run_id, _ in chosen]


def _batches(repo: Repo, tip: Oid) -> list[dict[str, Any]]:
    raw = repo.read_file(tip, BATCHES_FILE, limit=chain.READ_LIMIT)
    data = loads_json(raw) if raw is not None else []
    return [b for b in data if isinstance(b, dict)] if isinstance(data, list) else []


def _batch_path(seq: int) -> str:
    return f"{BATCHES_FOLDER}/{seq:08d}.json"


def _batch_runs(repo: Repo, tip: Oid, seq: int) -> list[tuple[str, str]]:
    raw = repo.read_file(tip, _batch_path(seq), limit=chain.READ_LIMIT)
    data = loads_json(raw) if raw is not None else []
    return [(str(u), str(i)) for u, i in data] if isinstance(data, list) else []


# --- writing: one commit per batch ---------------------------------------------------------


@dataclass(frozen=True)
class Folded:
    """One run to fold: what the archive keeps and when its record was last written."""

    entry: Archived
    updated: str


def fold(repo: Repo, batch: Sequence[Folded]) -> list[str]:
    """Fold ``batch`` into the archive as one commit (CAS, retried from a
    fresh read). A run already archived with the same blob is left as it is
    (a second gc after a killed one). Returns the ids now archived with the
    blob given, so that their refs may go."""
    done: list[str] = []

    def step(tip: Oid | None) -> tuple[chain.Files, str] | None:
        done.clear()
        files: dict[str, tuple[bytes | Oid, int]] = {}
        listed: list[tuple[str, str]] = []
        for item in batch:
            run_id, blob = item.entry.run_id, item.entry.blob()
            done.append(run_id)
            path = blob_path(run_id)
            if tip is not None and repo.read_file(tip, path, limit=chain.READ_LIMIT) == blob:
                continue
            files[path] = (blob, BLOB_MODE)
            listed.append((item.updated, run_id))
        if not listed:
            return None
        seq = _next_seq(repo, tip)
        files.update(batch_files(repo, tip, listed))
        return files, f"archive: batch {seq}, {len(listed)} run(s)\n\nHarnery-Archive: {seq}\n"

    chain.update_ref(repo, ARCHIVE_REF, step)
    return list(done)


def _next_seq(repo: Repo, tip: Oid | None) -> int:
    batches = _batches(repo, tip) if tip is not None else []
    return max((int(b["seq"]) for b in batches), default=0) + 1


def batch_files(repo: Repo, tip: Oid | None, listed: Sequence[tuple[str, str]]) -> chain.Files:
    """The files that list ``listed`` (``(updatedAt, id)``) as the next
    batch of the archive at ``tip``: its own list and ``batches.json``."""
    batches = _batches(repo, tip) if tip is not None else []
    seq = _next_seq(repo, tip)
    dates = [updated for updated, _ in listed]
    batches.insert(0, {"seq": seq, "newest": max(dates), "oldest": min(dates), "count": len(listed)})
    return {_batch_path(seq): (_compact(sorted(listed)), BLOB_MODE),
            BATCHES_FILE: (b"[\n" + b",\n".join(_compact(b) for b in batches) + b"\n]\n", BLOB_MODE)}


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).encode("ascii")
