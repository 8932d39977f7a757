"""Files git-harn reads that anyone could have written, and files it writes
that must never be seen half-written."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from git_harn.errors import BadInput
from git_harn.text import encodable


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file and one rename, so
    a reader (or a crash) sees the old content or the new, never a part."""
    scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    scratch.write_bytes(data)
    if mode is not None:
        scratch.chmod(mode)
    os.replace(scratch, path)


def read_regular_file(path: Path, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of ``path`` if it is a regular file, not a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(limit)


MAX_REPORT_BYTES = 16 * 1024 * 1024


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
        return strict_json(raw)
    except ValueError as exc:
        raise BadInput(f"{source} is not JSON: {exc}") from None


def strict_json(raw: bytes | str) -> Any:
    """``raw`` as JSON that every reader reads alike (RFC 8259 and I-JSON):
    ValueError, saying why, for what is not JSON, ``NaN`` or ``Infinity``,
    a key given twice, a lone surrogate (``"\\ud800"``, no character), or a
    nesting too deep to read [P5]."""
    try:
        document = json.loads(raw, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("it nests too deeply") from None
    where = _lone_surrogate(document)
    if where is not None:
        raise ValueError(f"{where} holds a lone surrogate (an escape such as \\ud800 that is no character)")
    return document


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
