"""The summary that lets an unchanged sync stop before listing every ref.

**On the remote**: ``SUMMARY_REF`` points at a commit whose message names a
hash over the (name, object id) pairs the remote holds under ``SUMMARIZED``.
Every sync that changes the remote pushes a new one in the same push, with
a lease on the value it read, so two syncs cannot both leave their own
summary; a sync that finds it missing or wrong pushes the right one. Each
summary's parent is the one it replaces: the ref is only ever created or
moved forward, never forced and never deleted [S1], so a server that
refuses non-fast-forward updates and deletions takes every sync.

An older git-harn kept the summary at ``OLD_SUMMARY_REF`` (a blob, or a
commit whose next one need not descend from it). No sync writes there: the
chain starts afresh under its own name, a creation, and the old ref stays
as it is. Until the chain exists, the unchanged check compares the old ref
instead, so a clone that last synced with an older git-harn still skips its
listing once.

**In this clone** (never pushed): after a sync that left the summarized refs
equal on both sides, a file beside the locks keeps, per remote, the
summary's object id and a fingerprint of the local refs (``git/reffiles``).

A later sync whose local fingerprint and remote summary (fetched alone:
one ref advertised, see docs/sync.md) both match what was kept has nothing
to merge and nothing to push; anything else lists every ref as before.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from git_harn.errors import GitFailure
from git_harn.files import atomic_write, loads_json
from git_harn.git import Repo, reffiles, to_oid
from git_harn.git import remote as door
from git_harn.git.identity import machine_signature
from git_harn.store.archive import ARCHIVE_REF
from git_harn.store.locks import locks_dir
from git_harn.store.notes import NOTES_REF
from git_harn.sync import notes, records

# What the summary covers: one line per namespace (salvage branches are not in
# it: a sync with --salvage always lists). Folders end in "/".
SUMMARIZED: tuple[str, ...] = (*records.PREFIXES, NOTES_REF, ARCHIVE_REF)
SUMMARY_REF = "refs/harnery/sync-summary-chain"
# Where an older git-harn kept it: read by the unchanged check while the
# chain is absent, never written, never deleted [S1].
OLD_SUMMARY_REF = "refs/harnery/sync-summary"
FORMAT = b"git-harn sync summary 1\n"
STATE_VERSION = 1
# A ref written to the remote past git-harn (a plain push, a hand-made
# update-ref there) leaves the summary as it was: a listing at least this often
# (harn.syncFullAfter, seconds; 0 lists every time) bounds how long that goes unseen.
FULL_AFTER_SECONDS = 3600
# A fingerprint of files changed more recently than this is not kept: a write
# in the same clock tick would leave their mtimes as they are (git/reffiles).
RACY_SECONDS = 2.0


def covers(ref: str) -> bool:
    return any(ref == name or (name.endswith("/") and ref.startswith(name)) for name in SUMMARIZED)


def content(refs: Mapping[str, str]) -> bytes:
    """The summary blob of a remote holding ``refs`` (those ``covers`` takes)."""
    digest = hashlib.sha256()
    for name in sorted(ref for ref in refs if covers(ref)):
        digest.update(f"{refs[name]} {name}\n".encode("utf-8", "surrogateescape"))
    return FORMAT + digest.hexdigest().encode() + b"\n"


def write(repo: Repo, refs: Mapping[str, str], parent: str | None) -> str:
    """A summary commit for ``refs``, child of ``parent`` (the summary it
    replaces, None to start the chain), written here so that it can be pushed.
    The empty tree: the message is the summary."""
    parents = [to_oid(parent)] if parent is not None else []
    made = repo.make_commit(repo.empty_tree(), parents, content(refs).decode("ascii"), machine_signature(repo))
    return str(made)


def read(repo: Repo, oid: str) -> bytes | None:
    """The summary the commit ``oid`` names, if it is here (None: not here,
    or not a commit, which no chain can grow from)."""
    found = to_oid(oid)
    if not repo.has(found):
        return None
    try:
        return repo.commit_info(found).message.encode("utf-8", "surrogateescape")
    except GitFailure:
        return None


def local_fingerprint(repo: Repo) -> reffiles.Fingerprint | None:
    return reffiles.fingerprint(repo, SUMMARIZED)


# --- what this clone keeps ------------------------------------------------------


@dataclass(frozen=True)
class Kept:
    summary: str  # the remote summary's object id when the sync ended
    local: str  # the local refs' fingerprint when it ended
    count: int  # how many refs the summary covers (for the "same" count)
    listed_at: float  # when every ref was last listed (seconds since the epoch)


def _folder(repo: Repo) -> Path:
    return locks_dir(repo).parent / "sync"


def _path(repo: Repo, remote: str) -> Path:
    return _folder(repo) / f"{remote}.json"


def keep(repo: Repo, remote: str, kept: Kept) -> None:
    document = {"version": STATE_VERSION, "summary": kept.summary, "local": kept.local, "count": kept.count,
                "listedAt": kept.listed_at}
    path = _path(repo, remote)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(document, sort_keys=True).encode() + b"\n")


def forget(repo: Repo, remote: str) -> None:
    _path(repo, remote).unlink(missing_ok=True)


def kept(repo: Repo, remote: str) -> Kept | None:
    """What the last complete sync with ``remote`` kept; None if nothing (or garbage)."""
    try:
        document = loads_json(_path(repo, remote).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("version") != STATE_VERSION:
        return None
    summary, local, count = document.get("summary"), document.get("local"), document.get("count")
    listed_at = document.get("listedAt")
    if not (isinstance(summary, str) and isinstance(local, str) and isinstance(count, int)
            and isinstance(listed_at, (int, float))):
        return None
    return Kept(summary, local, count, float(listed_at))


def unchanged(repo: Repo, remote: str) -> Kept | None:
    """What was kept, if neither side changed since: the local fingerprint
    first (no process), then the remote summary alone. None means: list
    every ref (the full path also reports a remote that cannot be reached)."""
    last = kept(repo, remote)
    if last is None or not 0 <= time.time() - last.listed_at < _full_after(repo):
        return None
    now = local_fingerprint(repo)
    if now is None or now.value != last.local:
        return None
    probe = _folder(repo) / "probe"
    try:
        found = door.advertised(repo, remote, SUMMARY_REF, probe)
        if found is None:  # no chain yet: the summary an older git-harn kept, if it is what was kept
            found = door.advertised(repo, remote, OLD_SUMMARY_REF, probe)
    except GitFailure:
        return None
    return last if found == last.summary else None


def _full_after(repo: Repo) -> float:
    return float(max(0, repo.config_int("harn.syncFullAfter", FULL_AFTER_SECONDS)))


def settle(repo: Repo, remote: str, remote_refs: Mapping[str, str], summary_oid: str) -> None:
    """After a sync: keep the summary and the local fingerprint if the local
    summarized refs are what the remote holds. The fingerprint is taken on
    both sides of the listing, so a record written meanwhile is never kept
    as synced."""
    listed_at = time.time()
    before = local_fingerprint(repo)
    local = {ref: oid for ref, oid in repo.ref_ids(SUMMARIZED).items() if covers(ref)}
    after = local_fingerprint(repo)
    wanted = {ref: oid for ref, oid in remote_refs.items() if covers(ref)}
    if notes.in_step(repo, local.get(NOTES_REF), wanted.get(NOTES_REF)) and NOTES_REF in wanted:
        local[NOTES_REF] = wanted[NOTES_REF]  # this clone's own prune on top: in step [P6]
    if (before is None or before != after or local != wanted
            or listed_at - before.newest < RACY_SECONDS):
        forget(repo, remote)
        return
    keep(repo, remote, Kept(summary_oid, before.value, len(wanted), listed_at))
