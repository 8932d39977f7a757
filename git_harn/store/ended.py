"""A hint of which records ended last, so that ``status --last N`` reads N
records, not 100,000 (``store/live``; issue 45 item 15).

Finding the newest ended records by their refs alone means reading every
record commit's header (one ``for-each-ref --sort=-committerdate``: half a
second at 100,000 records). So every write that leaves a record ended
first appends one line to a small file beside the locks,
``<common dir>/harnery/cache/<name>``: the time of the record's commit, its
id, the commit. It is appended before the ref moves, so a crash leaves at
worst a line for a write that did not happen, never an ended record
without its line.

A hint, never the truth: whoever can write the git dir can write it. A
line only says which record to look at. The reader reads that record from
its own ref (a line whose ref is gone, or now holds something else, names
only what the ref holds now) and orders what it read by the record's own
``updatedAt``. What the file cannot show is an ended record without a line
(written by a git-harn before this file, or by hand): the file's first line
says the time at or before which a record may lack one (its floor; 0:
none), and the reader trusts the file only where the records it read are
all newer than that. Otherwise, or when the file is missing or unreadable,
the refs are read by time as before, and a missing or unreadable file is
written afresh from that listing (``rebuild``).

Bounded: past ``PRUNE_BYTES`` the writer that grew it keeps the ``KEEP``
newest lines and raises the floor to the newest line it dropped. A line is
appended by one ``write`` (O_APPEND), so concurrent writers never
interleave. A rewrite (prune, rebuild) renames a fresh file over the old
one and then copies what was appended to the old one meanwhile; a writer
that finds, after its write, that the path no longer names the file it
wrote to writes its line again (a line twice is harmless). One rewrite at
a time: a rewrite that finds another's lock held leaves the file as it is.
A rebuild first puts a pending file in place, so that writers append to it
while it reads the refs; a record whose write began before that and ended
after the listing (a few milliseconds against half a second) is the one
such a rebuild can miss, and the fallback, the refs by time, never does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

from git_harn.errors import HarnError
from git_harn.files import atomic_write, private_dir, read_regular_file
from git_harn.git import Oid, Repo

FORMAT = "git-harn ended records 1"
PENDING = "pending"
KEEP = 1000  # lines a prune keeps: --last up to about this many is answered from the file
PRUNE_BYTES = 2 * KEEP * 80  # about 2 * KEEP lines
READ_LIMIT = 4 * PRUNE_BYTES  # a larger file was not written by git-harn: rebuilt
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class Line(NamedTuple):
    when: int  # the record commit's time, seconds since the epoch
    record_id: str
    tip: str  # the commit, in hex


class Hint(NamedTuple):
    floor: int  # an ended record whose commit is newer than this has a line
    lines: dict[str, Line]  # record id -> its newest line

    def newest_first(self) -> list[Line]:
        return sorted(self.lines.values(), key=lambda line: (line.when, line.record_id), reverse=True)


def hint_path(repo: Repo, name: str) -> Path:
    return repo.common_dir / "harnery" / "cache" / name


def _header(floor: int | None) -> str:
    return f"{FORMAT} floor {floor}\n" if floor is not None else f"{FORMAT} {PENDING}\n"


def _encode(lines: Iterable[Line]) -> str:
    return "".join(f"{line.when} {line.record_id} {line.tip}\n" for line in lines)


def _parse_lines(text: str) -> list[Line]:
    found = []
    for raw in text.splitlines():
        when, _, rest = raw.partition(" ")
        record_id, _, tip = rest.partition(" ")
        # ids are checked where a ref is made of them (the reader asks for that ref only)
        if when.isdigit() and record_id and len(tip) in (40, 64) and all(c in "0123456789abcdef" for c in tip):
            found.append(Line(int(when), record_id, tip))
    return found


def read(repo: Repo, name: str) -> Hint | None:
    """The file, or None when it is missing, pending, unreadable or too large."""
    try:
        raw = read_regular_file(hint_path(repo, name), READ_LIMIT)
    except HarnError:
        return None
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace")
    first, _, rest = text.partition("\n")
    prefix = f"{FORMAT} floor "
    if not first.startswith(prefix) or not first[len(prefix):].isdigit():
        return None
    lines: dict[str, Line] = {}
    for line in _parse_lines(rest):
        known = lines.get(line.record_id)
        if known is None or line.when >= known.when:
            lines[line.record_id] = line
    return Hint(int(first[len(prefix):]), lines)


def note(repo: Repo, name: str, ended: Sequence[tuple[str, Oid]]) -> None:
    """Append a line for each (record id, commit) a write is about to leave
    ended; nothing when there is no file (the next reader rebuilds it).
    Best effort: a failure here costs a listing its speed, never a write."""
    if not ended:
        return
    try:
        text = _encode(Line(repo.commit_info(tip).time, record_id, str(tip)) for record_id, tip in ended)
        size = _append(hint_path(repo, name), text.encode("utf-8"))
    except (OSError, HarnError):
        return
    if size > PRUNE_BYTES:
        prune(repo, name)


def _append(path: Path, data: bytes, create: bool = False) -> int:
    """Append ``data`` to the file at ``path`` (not following a link); again
    where a rewrite replaced that file meanwhile. The file's size after it."""
    size = 0
    for _ in range(3):
        flags = os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _CLOEXEC | (os.O_CREAT if create else 0)
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            return 0
        try:
            os.write(fd, data)
            seen = os.fstat(fd)
            size = seen.st_size
            with suppress(FileNotFoundError):
                if os.stat(path, follow_symlinks=False).st_ino == seen.st_ino:
                    return size
        finally:
            os.close(fd)
    return size


class _Rewrite:
    """One rewrite at a time (an flock on a file beside the hint, let go
    when the process ends however it ends); ``held`` False when another has it."""

    def __init__(self, path: Path) -> None:
        self.fd = -1
        self.held = False
        lock = path.with_name(path.name + ".lock")
        with suppress(OSError):
            import fcntl  # only for a rewrite

            self.fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.held = True

    def __enter__(self) -> _Rewrite:
        return self

    def __exit__(self, *_: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)


def _replace(path: Path, floor: int, lines: Iterable[Line], old_fd: int | None, seen: int) -> None:
    """Put the file with ``floor`` and ``lines`` at ``path``, then what was
    appended to the old file (open at ``old_fd``) past ``seen`` bytes."""
    atomic_write(path, (_header(floor) + _encode(lines)).encode("utf-8"))
    if old_fd is None:
        return
    os.lseek(old_fd, seen, os.SEEK_SET)
    late = _parse_lines(os.read(old_fd, READ_LIMIT).decode("utf-8", "replace"))
    if late:
        _append(path, _encode(late).encode("utf-8"))


def _open_old(path: Path) -> tuple[int | None, str]:
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None, ""
    text = os.read(fd, READ_LIMIT).decode("utf-8", "replace")
    return fd, text


def prune(repo: Repo, name: str) -> None:
    """Keep the KEEP newest lines, the floor raised to the newest line dropped."""
    path = hint_path(repo, name)
    with _Rewrite(path) as rewrite, suppress(OSError, HarnError):
        if not rewrite.held:
            return
        fd, text = _open_old(path)
        try:
            hint = read(repo, name)
            if hint is None:
                return  # pending or unreadable: a reader rebuilds it
            ordered = hint.newest_first()
            kept, dropped = ordered[:KEEP], ordered[KEEP:]
            floor = max([hint.floor, *(line.when for line in dropped)])
            _replace(path, floor, reversed(kept), fd, len(text.encode("utf-8")))
        finally:
            if fd is not None:
                os.close(fd)


def start_empty(repo: Repo, name: str) -> None:
    """The file of a repository with no record yet: no line, floor 0."""
    with suppress(OSError, HarnError):
        path = private_dir(hint_path(repo, name).parent) / name
        if not path.exists():
            atomic_write(path, _header(0).encode("utf-8"))


class Rebuild:
    """A file written afresh from a listing of the refs by time: ``begin``
    puts a pending file in place before the refs are listed (writers append
    to it meanwhile), ``finish`` the listing's newest KEEP."""

    def __init__(self, repo: Repo, name: str) -> None:
        self.path = hint_path(repo, name)
        self.rewrite: _Rewrite | None = None
        self.fd: int | None = None

    def begin(self) -> None:
        with suppress(OSError, HarnError):
            private_dir(self.path.parent)
            self.rewrite = _Rewrite(self.path)
            if not self.rewrite.held:
                return
            atomic_write(self.path, _header(None).encode("utf-8"))
            self.fd, _ = _open_old(self.path)

    def finish(self, listed: Sequence[tuple[str, str, int]], complete: bool) -> None:
        """``listed``: (record id, commit, commit time) newest first, every
        record's when ``complete``, else the newest that many."""
        try:
            if self.rewrite is None or not self.rewrite.held:
                return
            kept = listed[:KEEP]
            floor = 0 if complete and len(listed) <= KEEP else (kept[-1][2] if kept else 0)
            lines = [Line(when, record_id, tip) for record_id, tip, when in reversed(kept)]
            with suppress(OSError, HarnError):
                _replace(self.path, floor, lines, self.fd, len(_header(None)))
        finally:
            if self.fd is not None:
                os.close(self.fd)
            if self.rewrite is not None:
                self.rewrite.__exit__()
