"""Record chains: every kind of git-harn record kept as a chain of commits
under ``refs/harnery/<kind>/<id>`` [P3].

A kind is a small declaration (``Kind``): its ref namespace, the file its
commits hold, the trailer that names a record's id, the format version it
writes, and the check a record must pass. This module is the only one that
builds record commits: it writes a record by compare-and-swap with the one
retry loop, reads the head, walks the whole history (every parent, in one
stable order), parses the ``Harnery-*`` trailers, and tells which of the five
cases two heads of one record are in (new, same, ahead, fast-forward,
diverged), writing the reproducible merge commit of a diverged pair. The
domain decides what a merged record holds; it never builds a commit.

Each event is one commit whose tree holds the whole record after it and
whose message is ``<event>: <summary>``, then the id trailer, the
``Harnery-Event`` trailer and the kind's own trailers.

A kind may keep its record as several files (``Parts``): the file, with
one JSON member (a list) taken out, and a folder holding that list one blob
per item, so an event that changes one item writes one blob and reuses the
others' (a workflow record's tasks). Readers get the whole record back.

A kind may keep a live index (``LiveIndex``): one ref per live record, made
or dropped in the same ``git update-ref --stdin`` transaction as the event
that makes the record live or ended, so no reader and no crash ever sees
one without the other (``store/live`` reads it).
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from git_harn.errors import CorruptRecord, GitFailure, HarnError, RaceLost, TooLarge
from git_harn.failpoints import failpoint
from git_harn.files import loads_json
from git_harn.git import ANY, CommitInfo, Oid, Repo, Signature
from git_harn.git.cas import retry_cas
from git_harn.git.identity import DEFAULT_MACHINE_EMAIL, DEFAULT_MACHINE_NAME, machine_signature
from git_harn.git.objects import BLOB_MODE, REGULAR_MODES, TREE_MODE
from git_harn.text import one_line

T = TypeVar("T")

ROOT = "refs/harnery/"
EVENT_TRAILER = "Harnery-Event"
TRAILER_PREFIX = "Harnery-"
# A record larger than this was not written by git-harn [P5].
MAX_RECORD_BYTES = 4 * 1024 * 1024
# What a local read takes at most (a record this clone wrote itself).
READ_LIMIT = 64 * 1024 * 1024

# The five cases of two heads of one record (and what sync reports for them).
NEW = "new"  # only the remote has it
SAME = "same"
AHEAD = "ahead"  # only this clone has it, or this clone's head descends from the remote's
FAST_FORWARD = "fast-forward"
MERGED = "merged"  # diverged: merged into a commit with both heads as parents

Files = Mapping[str, tuple[bytes | Oid, int]]


@dataclass(frozen=True)
class LiveIndex(Generic[T]):
    """Where a kind lists its live records: ``namespace<id>`` exists for
    every record whose latest event left it live (pointing at a commit of
    its chain), and for no other but a stale one a reader drops. ``marker``
    exists once every live record has its entry: a repository written
    before the index gets them from one rebuild."""

    namespace: str  # "refs/harnery/live/"
    marker: str  # "refs/harnery/live-index/v1"
    is_live: Callable[[T], bool]
    # The cache file that notes the records that ended, newest last (store/ended): "" none.
    ended: str = ""

    def entry(self, record_id: str) -> str:
        return self.namespace + record_id


class Parts(NamedTuple):
    """A record kept as its file plus a folder: ``member`` (a JSON list of
    objects) is out of the file, its items in ``folder/<index>.json``,
    ``<index>`` zero-padded, from 0 with no gap. A record written as one
    file (the member inside it) still reads."""

    folder: str  # "tasks"
    member: str  # "tasks"

    def path(self, index: int) -> str:
        return f"{self.folder}/{index:05d}.json"


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One kind of record: where it lives, what it holds, how it is checked."""

    noun: str  # "run record": how messages name it
    namespace: str  # "refs/harnery/runs/"
    file: str  # the file each commit's tree holds: the whole record
    id_trailer: str  # "Harnery-Run: <id>"
    format_version: int  # the schemaVersion this git-harn writes and reads
    # (id, raw file, where) -> the record; CorruptRecord when it is not one of this id.
    check: Callable[[str, bytes, str], T]
    # The record as a JSON object, for merging.
    as_dict: Callable[[T], dict[str, Any]]
    # CorruptRecord unless the id is one this kind names its records by: asked
    # of what comes from elsewhere (a ref this clone made has a valid id).
    check_id: Callable[[str], None] = lambda _record_id: None  # any id
    live: LiveIndex[T] | None = None  # the index of its live records, if it keeps one
    parts: Parts | None = None  # one member kept one blob per item, if it is

    def ref(self, record_id: str) -> str:
        return self.namespace + record_id

    def id_of(self, ref: str) -> str | None:
        return ref[len(self.namespace):] if ref.startswith(self.namespace) else None


@dataclass
class Stored(Generic[T]):
    record: T
    tip: Oid


@dataclass
class Unreadable:
    """A ref of a kind's namespace that does not hold a valid record."""

    ref: str
    error: str


class Entry(NamedTuple):
    """One commit of a chain, as its message tells it."""

    oid: Oid
    time: int
    subject: str
    event: str
    summary: str
    trailers: dict[str, str]
    parents: tuple[Oid, ...]


# --- reading a record ------------------------------------------------------------------


def json_object(kind: Kind[Any], raw: bytes, where: str) -> dict[str, Any]:
    """The record file as a JSON object of a format this git-harn reads."""
    try:
        data = loads_json(raw)
    except ValueError as exc:  # NotJson: invalid, too deep, a key twice …
        raise CorruptRecord(f"corrupt {kind.noun} {where}: not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise CorruptRecord(f"corrupt {kind.noun} {where}: not a JSON object")
    version = data.get("schemaVersion", kind.format_version)
    if isinstance(version, int) and not isinstance(version, bool) and version > kind.format_version:
        raise CorruptRecord(f"{kind.noun} {where} has schemaVersion {version}, "
                            f"this git-harn reads {kind.format_version}")
    return data


def record_at(repo: Repo, kind: Kind[T], record_id: str, tip: Oid) -> T:
    """The record held by commit ``tip`` of ``record_id``'s chain."""
    where = kind.ref(record_id)
    try:
        raw = repo.read_file(tip, kind.file, limit=READ_LIMIT)
    except TooLarge as exc:
        raise CorruptRecord(f"corrupt {kind.noun} {where}: {exc.message}") from exc
    if raw is None:
        raise CorruptRecord(f"corrupt {kind.noun} {where}: no {kind.file} in {tip}")
    if kind.parts is not None:
        raw = _joined(repo, kind, tip, raw, where, READ_LIMIT)
    return kind.check(record_id, raw, where)


def _part_names(repo: Repo, parts: Parts, tip: Oid, where: str) -> list[str] | None:
    """The paths of a record's items in order, or None when it has no folder
    (written as one file, or with no items). CorruptRecord for a name that is
    not the next index or an entry that is not a regular file."""
    found = repo.entry(tip, parts.folder)
    if found is None:
        return None
    if found[1] != TREE_MODE:
        raise CorruptRecord(f"corrupt {where}: {parts.folder} is not a folder")
    names = repo.list_folder(tip, parts.folder)
    paths = []
    for index, (name, mode) in enumerate(names):
        path = parts.path(index)
        if f"{parts.folder}/{name}" != path or mode not in REGULAR_MODES:
            raise CorruptRecord(f"corrupt {where}: {parts.folder}/{name} is not item {index} of {parts.member}")
        paths.append(path)
    return paths


def _joined(repo: Repo, kind: Kind[Any], tip: Oid, raw: bytes, where: str, limit: int) -> bytes:
    """The record file of a commit with its parts put back in: the whole
    record, as the kind's check reads it (keys sorted, as written)."""
    assert kind.parts is not None
    paths = _part_names(repo, kind.parts, tip, f"{kind.noun} {where}")
    data = json_object(kind, raw, where)
    if paths is None:
        if kind.parts.member in data:
            return raw  # written as one file
        paths = []  # no items: no folder
    elif kind.parts.member in data:
        raise CorruptRecord(f"corrupt {kind.noun} {where}: {kind.parts.member} both in {kind.file} "
                            f"and in {kind.parts.folder}/")
    items, total = [], len(raw)
    for path in paths:
        try:
            part = repo.read_file(tip, path, limit=limit)
        except TooLarge as exc:
            raise CorruptRecord(f"corrupt {kind.noun} {where}: {exc.message}") from exc
        assert part is not None  # listed just above
        total += len(part)
        if total > limit:
            raise CorruptRecord(f"corrupt {kind.noun} {where}: larger than {limit} bytes")
        try:
            items.append(loads_json(part))
        except ValueError as exc:
            raise CorruptRecord(f"corrupt {kind.noun} {where}: {path} is not JSON ({exc})") from exc
    data[kind.parts.member] = items
    return json.dumps(data, sort_keys=True, ensure_ascii=True).encode()


def split(kind: Kind[Any], content: bytes) -> Files:
    """The files of a commit holding the whole record ``content``: the one
    file, or for a kind with parts the file without its member and one blob
    per item (as a writer of that kind writes them)."""
    if kind.parts is None:
        return {kind.file: (content, BLOB_MODE)}
    data = loads_json(content)
    items = data.pop(kind.parts.member, None) if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        return {kind.file: (content, BLOB_MODE)}
    files: dict[str, tuple[bytes | Oid, int]] = {kind.file: (encode(data), BLOB_MODE)}
    for index, item in enumerate(items):
        files[kind.parts.path(index)] = (encode(item), BLOB_MODE)
    return files


def encode(value: Any) -> bytes:
    """A JSON record file as git-harn writes it: indented, keys sorted, ASCII."""
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode()


def head(repo: Repo, kind: Kind[Any], record_id: str) -> Oid | None:
    return repo.ref_oid(kind.ref(record_id))


def read(repo: Repo, kind: Kind[T], record_id: str) -> Stored[T] | None:
    tip = head(repo, kind, record_id)
    if tip is None:
        return None
    return Stored(record_at(repo, kind, record_id, tip), tip)


def list_all(repo: Repo, kind: Kind[T]) -> Iterator[Stored[T] | Unreadable]:
    """Every record of ``kind`` by ref name; a bad one is yielded as Unreadable, not raised."""
    for name, tip in sorted(repo.refs_under(kind.namespace)):
        try:
            yield Stored(record_at(repo, kind, name[len(kind.namespace):], tip), tip)
        except HarnError as exc:
            yield Unreadable(name, exc.message)


def commit_record(repo: Repo, kind: Kind[T], oid: Oid) -> bytes:
    """The record file of a commit that must be a record commit of ``kind``:
    its tree holds that one regular file, of bounded size. CorruptRecord
    otherwise (a commit someone else made)."""
    entries = repo.list_folder(oid, "")
    if kind.parts is not None and len(entries) == 2 and (kind.parts.folder, TREE_MODE) in entries:
        entries.remove((kind.parts.folder, TREE_MODE))
        raw = _record_file(repo, kind, oid, entries[0])
        try:
            return _joined(repo, kind, oid, raw, kind.noun, MAX_RECORD_BYTES)
        except CorruptRecord as exc:
            raise CorruptRecord(f"commit {str(oid)[:12]}: {exc.message}") from None
    if len(entries) != 1:
        raise CorruptRecord(f"commit {str(oid)[:12]} holds {len(entries)} entries, not one file")
    return _record_file(repo, kind, oid, entries[0])


def _record_file(repo: Repo, kind: Kind[Any], oid: Oid, found: tuple[str, int]) -> bytes:
    """The record file of a record commit (the tree entry ``found``), bounded."""
    name, mode = found
    if name != kind.file:
        raise CorruptRecord(f"commit {str(oid)[:12]} holds {name!r}, not {kind.file}")
    try:
        raw = repo.read_file(oid, name, limit=MAX_RECORD_BYTES) if mode in REGULAR_MODES else None
    except TooLarge:
        raise CorruptRecord(f"commit {str(oid)[:12]}: {name} is too large for a record") from None
    if raw is None:
        raise CorruptRecord(f"commit {str(oid)[:12]}: {name} is not a regular file")
    return raw


def checked_record(repo: Repo, kind: Kind[T], record_id: str, oid: Oid) -> T:
    """The record of a commit that came from elsewhere, fully checked."""
    raw = commit_record(repo, kind, oid)
    try:
        kind.check_id(record_id)
        return kind.check(record_id, raw, kind.ref(record_id))
    except CorruptRecord as exc:
        raise CorruptRecord(f"commit {str(oid)[:12]}: {exc.message}") from exc


# --- trailers and history -----------------------------------------------------------------


def trailers(message: str) -> dict[str, str]:
    """The ``Harnery-*`` trailers of a commit message (the last value of each)."""
    found: dict[str, str] = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith(TRAILER_PREFIX):
            found[key] = value.strip()
    return found


def entry(commit: CommitInfo) -> Entry:
    subject = commit.message.split("\n", 1)[0]
    word, _, summary = subject.partition(": ")
    said = trailers(commit.message)
    return Entry(commit.oid, commit.time, subject, said.get(EVENT_TRAILER, word), summary, said, commit.parents)


def stable_order(commits: Sequence[CommitInfo]) -> list[CommitInfo]:
    """Newest first, every commit before its parents; of the commits whose
    children are all out, the later one first, then the smaller id (a merge's
    first parent). The same graph gives the same order on every clone,
    whatever libgit2 walks first."""
    known = {commit.oid: commit for commit in commits}
    waiting = {oid: 0 for oid in known}
    for commit in commits:
        for parent in commit.parents:
            if parent in waiting:
                waiting[parent] += 1
    ready = [(-commit.time, str(commit.oid), commit.oid) for commit in commits if not waiting[commit.oid]]
    heapq.heapify(ready)
    ordered: list[CommitInfo] = []
    while ready:
        commit = known[heapq.heappop(ready)[2]]
        ordered.append(commit)
        for parent in commit.parents:
            if parent in waiting:
                waiting[parent] -= 1
                if not waiting[parent]:
                    heapq.heappush(ready, (-known[parent].time, str(parent), parent))
    return ordered


def entries(repo: Repo, tip: Oid, hide: Sequence[Oid] = ()) -> list[Entry]:
    """The commits reachable from ``tip`` and from none of ``hide``, in the stable order."""
    return [entry(commit) for commit in stable_order(list(repo.walk(tip, hide)))]


def history(repo: Repo, kind: Kind[Any], record_id: str) -> list[Entry]:
    """A record's events, newest first: every parent of a merge sync made,
    so both sides of a diverged chain are shown."""
    tip = head(repo, kind, record_id)
    return [] if tip is None else entries(repo, tip)


# --- writing -------------------------------------------------------------------------------


def message(kind: Kind[Any], record_id: str, event: str, summary: str,
            more: Sequence[tuple[str, str]] = ()) -> str:
    lines = [f"{kind.id_trailer}: {record_id}", f"{EVENT_TRAILER}: {event}"]
    lines += [f"{key}: {one_line(value)}" for key, value in more]
    return f"{event}: {one_line(summary)}\n\n" + "".join(line + "\n" for line in lines)


def make(repo: Repo, kind: Kind[Any], record_id: str, content: bytes, event: str, summary: str,
         more: Sequence[tuple[str, str]], parent: Oid | None) -> Oid:
    """A record commit on top of ``parent``, no ref moved (a claim is pushed, not kept)."""
    text = message(kind, record_id, event, summary, more)
    return repo.commit_files({kind.file: (content, BLOB_MODE)}, text, [parent] if parent is not None else [],
                             machine_signature(repo))


def append(repo: Repo, ref: str, files: Files, text: str, old_tip: Oid | None,
           keep_tree: bool = False) -> Oid:
    """One commit on top of ``old_tip`` at ``ref``, with CAS; RaceLost if the
    tip moved. ``keep_tree``: the files go into the old tip's tree."""
    parents = [old_tip] if old_tip is not None else []
    commit = repo.commit_files(files, text, parents, machine_signature(repo),
                               base=old_tip if keep_tree else None)
    repo.move_ref(ref, commit, old_tip, f"git-harn: {text.splitlines()[0][:80]}")
    return commit


def write(repo: Repo, kind: Kind[Any], record_id: str, content: bytes, event: str, summary: str,
          more: Sequence[tuple[str, str]], old_tip: Oid | None, live: bool | None = None) -> Oid:
    """Append one event to a record's chain; RaceLost if the tip moved.
    ``live``: for a kind with a live index, whether the record is live after
    this event (its index entry is made or dropped with the event)."""
    return write_files(repo, kind, record_id, {kind.file: (content, BLOB_MODE)}, event, summary, more, old_tip,
                       live)


def write_files(repo: Repo, kind: Kind[Any], record_id: str, files: Files, event: str, summary: str,
                more: Sequence[tuple[str, str]], old_tip: Oid | None, live: bool | None = None) -> Oid:
    """``write`` of a record given as the files of its commit (a kind with
    parts: ``split``'s, or a writer's own with unchanged items' blobs reused)."""
    text = message(kind, record_id, event, summary, more)
    if kind.live is None:
        return append(repo, kind.ref(record_id), files, text, old_tip)
    if live is None:
        raise TypeError(f"a {kind.noun} is written saying whether it is live")
    parents = [old_tip] if old_tip is not None else []
    commit = repo.commit_files(files, text, parents, machine_signature(repo))
    publish(repo, kind, record_id, commit, old_tip, live, f"git-harn: {text.splitlines()[0][:80]}")
    return commit


def publish(repo: Repo, kind: Kind[Any], record_id: str, new: Oid | None, old: Oid | None, live: bool,
            reflog: str) -> None:
    """Move a record ref of an indexed kind from ``old`` to ``new`` (None:
    delete it), compare-and-swap, and its index entry with it when its
    liveness changes: both in one ref transaction, so there is no moment
    with the record written and the index not. git commits a transaction's
    updates in the order given and its deletions after them, so with the
    entry first even a kill inside git's commit leaves at worst an entry
    for a record that is not live, never a live record without one. Only a write
    that leaves the entry as it is moves the record ref alone (no git
    process); that entry is looked at again afterwards, because a reader
    may have dropped it as stale just before (a run started again under an
    ended record's id), and then put back.

    Dropping an entry is a ref deletion, which needs ``packed-refs.lock``;
    while another git holds it (the ``git branch -D`` whose hook settles
    this record) a run that ends moves its record alone and leaves the
    entry, stale, for a reader to drop. Never the other way round: an entry
    a live record needs is made with it or the record is not written."""
    assert kind.live is not None
    ref, entry = kind.ref(record_id), kind.live.entry(record_id)
    listed = repo.ref_oid(entry) is not None
    wanted = live and new is not None
    if old is None and new is not None:
        mark_first(repo, kind)
    if not live and new is not None and kind.live.ended:
        from git_harn.store import ended  # a write that ends a record: never on a listing's start-up

        ended.note(repo, kind.live.ended, [(record_id, new)])  # before the ref moves: see store/ended
    if listed != wanted or new is None:
        try:
            if wanted or new is None or not repo.packed_refs_locked():
                failpoint("record-index-before")
                # The entry first: git commits updates in order, then deletions.
                repo.update_refs([(entry, new if wanted else None, ANY), (ref, new, old)])
                failpoint("record-index-after")
                return
        except RaceLost:
            if wanted or new is None or repo.ref_oid(ref) != old:
                raise
    repo.move_ref(ref, new, old, reflog)
    if wanted and repo.ref_oid(entry) is None:
        with suppress(RaceLost):  # the record moved on: its writer keeps the entry right
            repo.update_refs([(entry, new, None), (ref, new, new)])


def index_marker(repo: Repo, index: LiveIndex[Any]) -> Oid:
    """What a live index's marker points at: a commit of the empty tree
    whose message says what it marks."""
    text = (f"live index: format 1\n\nEvery live record has a ref {index.namespace}<id>; "
            "this ref says every one has it.\n")
    return repo.commit_files({}, text, [], machine_signature(repo))


def mark_first(repo: Repo, kind: Kind[Any]) -> None:
    """The marker, before the first record of a kind is written: a
    repository whose records were all written with their entries needs no
    build. Written in a transaction of its own, only where it is missing: in
    each first record's transaction, 20 starts at once all locked it and all
    but one failed. Best effort: a marker not written (another writer holds
    its lock) leaves the next listing to build the index, reading every
    record once; a marker written for a record whose own write then fails
    is still true."""
    assert kind.live is not None
    if repo.ref_oid(kind.live.marker) is not None or repo.ref_ids([kind.namespace]):
        return
    if kind.live.ended:
        from git_harn.store import ended

        ended.start_empty(repo, kind.live.ended)  # no record, none ended: nothing to rebuild
    with suppress(RaceLost):
        repo.update_refs([(kind.live.marker, index_marker(repo, kind.live), None)])


def index_edits(repo: Repo, kind: Kind[T], moves: Sequence[tuple[str, Oid]]) -> list[tuple[str, Oid | None, Any]]:
    """The index entries that ref moves made elsewhere (a sync's: record
    ref -> the tip it takes, already checked) must change, to go into the
    same transaction as the moves: made for a record the move leaves live,
    dropped for one it leaves ended. A tip that cannot be read is taken as
    live: listed, a reader reports it rather than losing sight of it."""
    if kind.live is None:
        return []
    index = kind.live
    listed = set(repo.ref_ids([index.namespace]))
    edits: list[tuple[str, Oid | None, Any]] = []
    ends: list[tuple[str, Oid]] = []
    for ref, tip in moves:
        record_id = kind.id_of(ref)
        if record_id is None:
            continue
        try:
            live = index.is_live(record_at(repo, kind, record_id, tip))
        except HarnError:
            live = True
        entry = index.entry(record_id)
        if live != (entry in listed):
            edits.append((entry, tip if live else None, ANY))
        if not live:
            ends.append((record_id, tip))
    if index.ended and ends:
        from git_harn.store import ended

        ended.note(repo, index.ended, ends)  # before the moves: see store/ended
    if moves:
        mark_first(repo, kind)
    return edits


@dataclass
class Change(Generic[T]):
    """What one event writes: the record after it, its file, its words."""

    record: T
    content: bytes
    event: str
    summary: str
    more: Sequence[tuple[str, str]] = ()


def update(repo: Repo, kind: Kind[T], record_id: str,
           mutate: Callable[[Stored[T] | None], Change[T] | None]) -> T | None:
    """Read, mutate, write with CAS; on a lost race, again from a fresh read.
    ``mutate`` returns the change to write, or None to write nothing."""

    def attempt() -> T | None:
        current = read(repo, kind, record_id)
        change = mutate(current)
        if change is None:
            return current.record if current else None
        live = kind.live.is_live(change.record) if kind.live is not None else None
        write(repo, kind, record_id, change.content, change.event, change.summary, change.more,
              current.tip if current else None, live)
        return change.record

    return retry_cas(attempt, f"the {kind.noun} {record_id}")


def update_ref(repo: Repo, ref: str, step: Callable[[Oid | None], tuple[Files, str] | None]) -> None:
    """The same loop for a ref that is not one record (the notes): ``step``
    gets the tip and returns the files to put into its tree and the message."""

    def attempt() -> None:
        tip = repo.ref_oid(ref)
        change = step(tip)
        if change is not None:
            append(repo, ref, change[0], change[1], tip, keep_tree=True)

    retry_cas(attempt, ref)


# --- two heads of one record ------------------------------------------------------------------


class Case(NamedTuple):
    """Which of the five cases two heads are in; ``base`` for a diverged pair."""

    action: str
    base: Oid | None = None


def case(repo: Repo, local: Oid | None, remote: Oid | None, unrelated_ok: bool = False) -> Case:
    """NEW, SAME, AHEAD, FAST_FORWARD, or MERGED (diverged: to be merged on
    ``base``). CorruptRecord when the remote's head is not a commit or (unless
    ``unrelated_ok``: base None) shares no history with the local one."""
    if remote is None:
        return Case(AHEAD)
    _must_be_commit(repo, remote)
    if local is None:
        return Case(NEW)
    if local == remote:
        return Case(SAME)
    try:
        if repo.contains(local, remote):
            return Case(AHEAD)
        if repo.contains(remote, local):
            return Case(FAST_FORWARD)
        base = repo.merge_base(local, remote)
    except GitFailure as exc:
        raise CorruptRecord(exc.message) from exc
    if base is None and not unrelated_ok:
        raise CorruptRecord("unrelated history: it shares no commit with the local chain")
    return Case(MERGED, base)


def _must_be_commit(repo: Repo, oid: Oid) -> None:
    if not repo.has(oid):
        raise CorruptRecord(f"object {str(oid)[:12]} is missing")
    try:
        repo.commit_info(oid)
    except GitFailure:
        raise CorruptRecord(f"points at {str(oid)[:12]}, which is not a commit") from None


def check_new(repo: Repo, kind: Kind[Any], record_id: str, tip: Oid, hide: Sequence[Oid] = ()) -> None:
    """Every commit that ``tip`` adds to ``hide`` must be a record commit of
    this record (a merge commit too); CorruptRecord names the first that is not."""
    try:
        added = list(repo.walk(tip, hide))
    except GitFailure as exc:
        raise CorruptRecord(exc.message) from exc
    for commit in added:
        checked_record(repo, kind, record_id, commit.oid)


def merge_commit(repo: Repo, heads: Sequence[Oid], files: Files, text: str, base: Oid | None = None) -> Oid:
    """A reproducible merge commit: ``files`` as its whole tree (or put into
    ``base``'s, one of the heads: a tree too large to rebuild), the heads as
    parents in object-id order, the default machine identity and the
    committer date of the later head, so any clone merging the same pair
    makes the same commit."""
    ordered = sorted(set(heads), key=str)
    infos = [repo.commit_info(oid) for oid in ordered]
    later = max(infos, key=lambda info: (info.time, str(info.oid)))
    who = Signature(DEFAULT_MACHINE_NAME, DEFAULT_MACHINE_EMAIL, later.time, later.offset)
    return repo.make_commit(repo.tree_with(base, files), ordered, text, who)


def merge(repo: Repo, kind: Kind[Any], record_id: str, heads: Sequence[Oid], content: bytes,
          summary: str, more: Sequence[tuple[str, str]] = ()) -> Oid:
    """The merge commit of two diverged heads of a record, holding ``content``
    (which must pass the kind's check). No ref moves."""
    try:
        kind.check(record_id, content, kind.ref(record_id))
    except CorruptRecord as exc:
        first, second = sorted(str(oid) for oid in heads)
        raise CorruptRecord(f"the merge of {first[:12]} and {second[:12]} is not valid: {exc.message}") from exc
    text = message(kind, record_id, MERGED, summary, more)
    return merge_commit(repo, heads, split(kind, content), text)
