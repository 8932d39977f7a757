"""The MAC on the evidence notes git-harn writes (gates, reviews) [A1] [P5].

Notes are refs anyone who can write the repository can write: an agent, a
daemon it left, another clone whose notes ``sync`` merges. A note is
believed only when its ``mac`` member verifies with this machine's evidence
key, which lives outside every repository, in the operator's data folder
(``<user data dir>/git-harn/keys/evidence.key``, 0600 in a 0700 folder,
made on first use). A clone on another machine has a key of its own, so its
notes read as unverified here: they are data, not evidence.

The MAC is HMAC-SHA256 over the note's kind, the commit it annotates and
the member's canonical JSON (sorted keys, ASCII, no spaces) without the
``mac`` member itself, so a MAC cannot be moved to another commit or kind.
``key`` names which key made it (a digest of the key, never the key).
Reading never makes a key; only a write does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from contextlib import suppress
from pathlib import Path
from typing import Any

from git_harn.errors import HarnError
from git_harn.files import private_dir

MEMBER = "mac"
ALGORITHM = "hmac-sha256"
KEY_FILE = "evidence.key"
_KEY_BYTES = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

_cached: dict[str, bytes] = {}  # key path -> the key, read once per process


class KeyProblem(HarnError):
    """The evidence key is there but cannot be trusted (a link, another owner, readable by others)."""


def key_path() -> Path:
    import platformdirs  # only when evidence is written or checked

    return Path(platformdirs.user_data_dir("git-harn")) / "keys" / KEY_FILE


def _read_key(path: Path) -> bytes | None:
    """The key at ``path``, or None when there is none. KeyProblem when the
    file is no private regular file of this user: a key others can read or
    replace is no key."""
    if str(path) in _cached:
        return _cached[str(path)]
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise KeyProblem(f"cannot read the evidence key {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        seen = os.fstat(handle.fileno())
        if not stat.S_ISREG(seen.st_mode) or seen.st_uid != os.geteuid() or seen.st_mode & 0o077:
            raise KeyProblem(f"the evidence key {path} must be a regular file of yours with mode 0600; "
                             "remove it and git-harn makes a new one (notes made with the old key then "
                             "read as unverified)")
        raw = handle.read(4 * _KEY_BYTES)
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != _KEY_BYTES:
        raise KeyProblem(f"the evidence key {path} is not {_KEY_BYTES} bytes in hex; remove it and "
                         "git-harn makes a new one")
    _cached[str(path)] = key
    return key


def _make_key(path: Path) -> bytes:
    """Make the key once: written whole to a private file, then linked into
    place, so a racing process either wins or reads the winner's key."""
    import secrets  # only when a key is made: both import random, a cost on every start-up
    import tempfile

    private_dir(path.parent)
    fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=".key-")  # 0600, O_EXCL
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(_KEY_BYTES).hex().encode("ascii") + b"\n")
        with suppress(FileExistsError):
            os.link(scratch, path)
    finally:
        os.unlink(scratch)
    key = _read_key(path)
    assert key is not None
    return key


def hidden_folder() -> Path:
    """The key's folder, the key made if missing, for the sandbox to hide
    from every stage (a folder made after a stage started would show in it)."""
    path = key_path()
    if _read_key(path) is None:
        _make_key(path)
    return path.parent


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"git-harn evidence key\n" + key).hexdigest()[:16]


def _message(kind: str, commit: str, value: dict[str, Any]) -> bytes:
    body = {k: v for k, v in value.items() if k != MEMBER}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"git-harn evidence v1\n{kind}\n{commit}\n{canonical}".encode("ascii")


def _digest(key: bytes, kind: str, commit: str, value: dict[str, Any]) -> str:
    return hmac.new(key, _message(kind, commit, value), hashlib.sha256).hexdigest()


def sign(kind: str, commit: str, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with its ``mac`` member, made with this machine's key (made on first use)."""
    path = key_path()
    key = _read_key(path) or _make_key(path)
    return {**value, MEMBER: {"alg": ALGORITHM, "key": _key_id(key), "value": _digest(key, kind, commit, value)}}


def unverified(kind: str, commit: str, value: dict[str, Any]) -> str | None:
    """None when ``value``'s MAC verifies with this machine's key; else why
    it does not, in words (the note is then data, not evidence)."""
    mac = value.get(MEMBER)
    if not isinstance(mac, dict) or not isinstance(mac.get("value"), str):
        return "it carries no MAC (written by an older git-harn or by something else)"
    if mac.get("alg") != ALGORITHM:
        return f"its MAC is of an unknown kind {str(mac.get('alg'))[:40]!r}"
    key = _read_key(key_path())
    if key is None:
        return "this machine has no evidence key yet, so the note was made on another machine"
    if mac.get("key") != _key_id(key):
        return "its MAC was made with another machine's key"
    if not hmac.compare_digest(mac["value"], _digest(key, kind, commit, value)):
        return "its MAC does not match its content (altered or forged)"
    return None


def without_mac(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != MEMBER}
