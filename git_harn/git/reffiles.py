"""A fingerprint of some refs read from git's ref files, without running git.

Listing 200,000 refs costs a ``git for-each-ref`` of a third of a second,
and reading packed-refs alone tens of milliseconds; telling whether a few
folders of refs changed since a moment ago need not. With the files
backend a ref lives in a loose file under the common git dir or in
``packed-refs``, and git (libgit2 alike) changes either only by creating a
lock file and renaming it over the old one: a new inode, a new mtime for
the file, a new mtime for its folder. So the identity (inode, size, mtime,
ctime) of packed-refs and of every folder under the names, with the bytes of
a single loose ref named, tells when the refs under the names may have
changed. A change elsewhere in packed-refs gives a new fingerprint too,
which costs the caller a listing, never a missed change.

One window is left: a write in the same clock tick as the one a fingerprint
saw leaves the same mtimes. ``Fingerprint.newest`` says how recent the
newest of them is, so a caller keeps only a fingerprint whose files are older
than any tick (git's own "racy" rule for its index).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from git_harn.git.repo import Repo

PACKED_REFS = "packed-refs"
LOCK_SUFFIX = ".lock"


@dataclass(frozen=True)
class Fingerprint:
    value: str
    newest: float  # the latest mtime among what it was taken from (seconds since the epoch)


class _InFlight(Exception):
    """A lock file: a writer is between its two renames; no fingerprint now."""


def fingerprint(repo: Repo, names: Iterable[str]) -> Fingerprint | None:
    """What the refs under ``names`` (folders end in ``/``, else one ref)
    may resolve to; None when the files cannot tell (another ref backend, a
    write in flight): the caller lists the refs instead."""
    root = repo.common_dir
    if repo.config("extensions.refstorage") not in (None, "files") or (root / "reftable").exists():
        return None
    parts: list[bytes] = []
    newest = [0]
    try:
        for name in sorted(set(names)):
            if name.endswith("/"):
                _folders(root, root / name.rstrip("/"), parts, newest)
            else:
                parts.append(_file_bytes(name, root / name))
        if (root / (PACKED_REFS + LOCK_SUFFIX)).exists():
            return None
        parts.append(_identity(PACKED_REFS, root / PACKED_REFS, newest))
    except _InFlight:
        return None
    digest = hashlib.sha1(b"".join(parts), usedforsecurity=False).hexdigest()
    return Fingerprint(digest, newest[0] / 1e9)


def _identity(label: str, path: Path, newest: list[int]) -> bytes:
    try:
        found = path.stat()
    except FileNotFoundError:
        return f"-{label}\0".encode("utf-8", "surrogateescape")
    newest[0] = max(newest[0], found.st_mtime_ns, found.st_ctime_ns)
    return (f"+{label} {found.st_dev} {found.st_ino} {found.st_size} {found.st_mtime_ns} "
            f"{found.st_ctime_ns}\0").encode("utf-8", "surrogateescape")


def _folders(root: Path, top: Path, parts: list[bytes], newest: list[int]) -> None:
    """The identity of ``top`` and of every folder below it (a loose ref
    written or deleted in one renames or unlinks there, which moves its mtime)."""
    pending = [top]
    while pending:
        folder = pending.pop()
        parts.append(_identity(folder.relative_to(root).as_posix(), folder, newest))
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.name.endswith(LOCK_SUFFIX):
                raise _InFlight(entry.name)
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))


def _file_bytes(label: str, path: Path) -> bytes:
    """One loose ref: its bytes (or that it is absent), not its mtime."""
    if path.with_name(path.name + LOCK_SUFFIX).exists():
        raise _InFlight(label)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return f"-{label}\0".encode("utf-8", "surrogateescape")
    except IsADirectoryError:
        raise _InFlight(label) from None  # a folder where one ref was named: list instead
    return f"+{label} {len(data)}\0".encode("utf-8", "surrogateescape") + data


def loose_ref_lock(repo: Repo, name: str) -> Path:
    """The lock file git makes beside a loose ref while it writes or deletes
    it, and leaves behind when it is killed holding it."""
    return repo.common_dir / f"{name}.lock"
