"""Files git-harn reads that anyone could have written, and files it writes
that must never be seen half-written, nor written through someone else's link.

An agent can write the folders git-harn writes its prompts, reports and logs
into (the run folder under the common git dir, the task worktree). So the
host never opens a path there the plain way: a symlink or a hard link planted
at that path would make the host write, or read, a file outside. Every such
write goes through ``atomic_write`` (a fresh private file in the same folder,
then one rename over the path, which replaces a link instead of following
it) or ``create_private`` (the path unlinked, then created anew with
``O_CREAT | O_EXCL | O_NOFOLLOW``); every such read through ``read_private``.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

from git_harn.errors import BadInput, HarnError, TooLarge
from git_harn.text import encodable

PRIVATE_FILE = 0o600  # what git-harn writes beside agent output: prompts, reports, logs
PRIVATE_DIR = 0o700
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_CREATE_TRIES = 5  # an agent that keeps planting at the path gets an error, not a loop


class UnsafeFile(HarnError):
    """A path the host was to read or write is a symlink, a hard link or no regular file."""


def atomic_write(path: Path, data: bytes, mode: int = PRIVATE_FILE,
                 times_ns: tuple[int, int] | None = None) -> None:
    """Write ``data`` to ``path`` through a fresh private file in the same
    folder and one rename: a reader (or a crash) sees the old content or the
    new, never a part, and whatever was at ``path`` (a symlink, a hard link
    to another file) is replaced, never written through. ``times_ns``:
    (atime, mtime) the file gets, as a copy keeps them."""
    import tempfile  # only when writing: its random module is a cost on every start-up

    fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:64]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:  # mkstemp: O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600
            handle.write(data)
            handle.flush()
            if mode != PRIVATE_FILE:
                os.fchmod(handle.fileno(), mode)
            if times_ns is not None:
                os.utime(handle.fileno(), ns=times_ns)
        os.replace(scratch, path)
    except IsADirectoryError:
        raise UnsafeFile(f"cannot write {path}: a folder is in the way") from None
    finally:
        with suppress(FileNotFoundError):
            os.unlink(scratch)


def create_private(path: Path) -> IO[bytes]:
    """``path`` made anew, empty, mode 0600, open for writing: whatever was
    there is unlinked first (never followed) and the file is created with
    ``O_EXCL | O_NOFOLLOW``, so a link planted meanwhile fails the open."""
    for _ in range(_CREATE_TRIES):
        unlink_entry(path)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, PRIVATE_FILE)
        except FileExistsError:
            continue  # planted again between the unlink and the open
        return os.fdopen(fd, "wb")
    raise UnsafeFile(f"cannot create {path}: something keeps being put at that path")


def unlink_entry(path: Path) -> None:
    """Remove whatever is at ``path`` (a link goes, never what it names);
    UnsafeFile when a folder is in the way."""
    try:
        os.unlink(path)  # a symlink goes, not what it names
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise UnsafeFile(f"cannot write {path}: a folder is in the way") from None


def private_dir(path: Path) -> Path:
    """The folder ``path``, made if missing, mode 0700; UnsafeFile when it
    is a symlink or no folder (someone else's link must not become ours)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with suppress(FileExistsError):
        os.mkdir(path, PRIVATE_DIR)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC)
    except OSError:
        raise UnsafeFile(f"{path} is a symlink or no folder; git-harn keeps its own files there") from None
    try:
        os.fchmod(fd, PRIVATE_DIR)
    finally:
        os.close(fd)
    return path


def read_private(path: Path, limit: int) -> bytes:
    """The whole of ``path``, a file the host expects an agent to have written
    in a folder it can write: FileNotFoundError when absent; UnsafeFile when
    it is a symlink, no regular file, or has another hard link (a link to a
    file outside, such as a key, would be read as the agent's answer);
    TooLarge when it holds more than ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafeFile(f"{path} is a symlink") from None
        raise UnsafeFile(f"cannot read {path}: {exc.strerror or exc}") from None
    seen = os.fstat(fd)
    if not stat.S_ISREG(seen.st_mode) or seen.st_nlink > 1:
        os.close(fd)
        raise UnsafeFile(f"{path} is not a regular file" if not stat.S_ISREG(seen.st_mode)
                         else f"{path} has another hard link")
    with os.fdopen(fd, "rb") as handle:
        return _read_whole(handle, limit, str(path))


def _read_whole(handle: IO[bytes], limit: int, what: str) -> bytes:
    raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise TooLarge(f"{what} is larger than {size_words(limit)}")
    return raw


def read_regular_file(path: Path, limit: int, *, whole: bool = True) -> bytes | None:
    """``path`` if it is a regular file, not a symlink (None otherwise). Its
    whole content, or TooLarge past ``limit`` bytes; ``whole=False`` is a
    peek at the first ``limit`` bytes, for reads that never write back."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        return _read_whole(handle, limit, str(path)) if whole else handle.read(limit)


def size_words(limit: int) -> str:
    """A limit as people read it: ``16 MiB``, else bytes."""
    return f"{limit // (1 << 20)} MiB" if limit % (1 << 20) == 0 else f"{limit} bytes"


# --- untrusted JSON -----------------------------------------------------------

MAX_REPORT_BYTES = 16 * 1024 * 1024


class NotJson(ValueError):
    """Not one plain JSON document: invalid, nested without end, a key twice, NaN, a lone surrogate."""


def loads_json(raw: bytes | str) -> Any:
    """The JSON document ``raw``, from anyone, read as every reader reads it
    (RFC 8259 and I-JSON): NotJson (a ValueError) saying why when it is not
    one, nests too deeply for the parser (RecursionError, which would
    otherwise escape every ``except ValueError``), repeats a key, holds
    ``NaN`` or ``Infinity``, a number too large for a float (``1e400``, which
    Python would read as infinity and no JSON could write back), or a lone
    surrogate (``"\\ud800"``, no character) [P5]."""
    try:
        document = json.loads(raw, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant,
                              parse_float=_finite)
    except RecursionError:
        raise NotJson("nests too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise NotJson(str(exc)) from None
    where = _lone_surrogate(document)
    if where is not None:
        raise NotJson(f"{where} holds a lone surrogate (an escape such as \\ud800 that is no character)")
    return document


def read_json_input(source: str) -> Any:
    """The JSON document in file ``source`` (``-``: stdin); BadInput if it is
    not one, is larger than 16 MiB, nests without end or repeats a key [P5]."""
    try:
        if source == "-":
            raw = sys.stdin.buffer.read(MAX_REPORT_BYTES + 1)
        else:
            with open(source, "rb") as handle:
                raw = handle.read(MAX_REPORT_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {source}: {exc.strerror}") from exc
    if len(raw) > MAX_REPORT_BYTES:
        raise BadInput(f"{source} is larger than {MAX_REPORT_BYTES // (1024 * 1024)} MiB")
    try:
        return loads_json(raw)
    except NotJson as exc:
        raise BadInput(f"{source} is not JSON: {exc}") from None


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is too large a JSON number for a float")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _lone_surrogate(document: Any) -> str | None:
    """Where the first string that cannot be UTF-8 is (a key or a value), or None."""
    pending: list[tuple[str, Any]] = [("(document)", document)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, str):
            if not encodable(value):
                return where
        elif isinstance(value, dict):
            for key, item in value.items():
                if not encodable(key):
                    return f"a key in {where}"
                pending.append((key if where == "(document)" else f"{where}/{key}", item))
        elif isinstance(value, list):
            pending += [(f"{where}/{n}", item) for n, item in enumerate(value)]
    return None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A key given twice could say one thing to one reader and another to the next."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def disk_use(path: Path | str) -> int:
    """Bytes allocated under ``path``, as ``du`` counts them: each file once (hard links), never
    through a link, never across into another mount (0 when it is absent or unreadable)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    pending = [str(path)]
    try:
        device = os.lstat(path).st_dev
    except OSError:
        return 0
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_dev != device or (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return total
