"""Notes (``refs/harnery/notes``): the same five cases as a record chain, and
a merge per annotated commit.

Members of different kinds are united. The same member changed on both sides
to different values is decided for the side whose notes were written later
(the committer date of its notes head, then the greater commit id); the other
value stays in the notes history, a parent of the merge. A note on a commit
this clone does not have is kept like any other.
"""

from __future__ import annotations

import re
from typing import Any

from git_harn.errors import GitFailure
from git_harn.files import loads_json
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.objects import BLOB_MODE, REGULAR_MODES
from git_harn.store import chain
from git_harn.store.notes import NOTES_REF
from git_harn.sync.steps import (
    BOTH,
    BadRemoteData,
    Step,
    canonical,
    one_side,
    plan_united,
    three_way,
)

_ANNOTATED = re.compile(r"[0-9a-f]{40}")


def check_notes(repo: Repo, tip: Oid, hide: list[Oid]) -> None:
    """Every commit the remote adds is a commit; its head holds only notes."""
    try:
        list(repo.walk(tip, hide))
    except GitFailure as exc:
        raise BadRemoteData(exc.message) from exc
    for name in _flat_tree(repo, tip):
        if not _ANNOTATED.fullmatch(name):
            raise BadRemoteData(f"notes head {str(tip)[:12]} holds {name!r}, which names no object")


def plan(repo: Repo, local: str | None, remote: str | None, dry_run: bool) -> Step:
    return plan_united(repo, NOTES_REF, local, remote, dry_run,
                       lambda tip, mine: check_notes(repo, tip, [mine] if mine is not None else []),
                       lambda mine, theirs, base: merge(repo, mine, theirs, base))


def _flat_tree(repo: Repo, oid: Oid | None) -> dict[str, Oid]:
    """A notes commit's tree as annotated object id -> blob id, fan-out
    folders (``ab/cdef…``) joined."""
    if oid is None:
        return {}
    found: dict[str, Oid] = {}
    for path, (blob, mode) in repo.flatten(oid).items():
        if mode not in REGULAR_MODES:
            raise BadRemoteData(f"notes commit {str(oid)[:12]}: {path} is neither a note nor a folder")
        found[path.replace("/", "")] = to_oid(blob)
    return found


def _parse(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return {}
    try:
        data = loads_json(raw)
    except ValueError:  # NotJson: invalid, too deep, a key twice
        return None
    return data if isinstance(data, dict) else None


def merge(repo: Repo, local: Oid, remote: Oid, base: Oid | None) -> Oid:
    """The merge commit of two notes heads (``base`` None: no common history,
    every note is then new on its side)."""
    first, second = sorted([local, remote], key=str)
    times = {oid: repo.commit_info(oid).time for oid in (first, second)}
    later = max((first, second), key=lambda oid: (times[oid], str(oid)))
    trees = {oid: _flat_tree(repo, oid) for oid in (first, second)}
    base_tree = _flat_tree(repo, base)
    merged: dict[str, tuple[bytes | Oid, int]] = {}
    decided = 0
    for name in sorted(set(base_tree) | set(trees[first]) | set(trees[second])):
        b, o, t = base_tree.get(name), trees[first].get(name), trees[second].get(name)
        value = one_side(b, o, t)
        if value is BOTH:
            value = _merge_note(repo, b, o, t, later == first)
            decided += 1
        if value is not None:
            merged[name] = (value, BLOB_MODE)
    message = (f"git-harn: merged notes {str(first)[:12]} and {str(second)[:12]}\n\n"
               f"Notes changed on both sides: {decided}; the later side wins a member changed on both.\n")
    return chain.merge_commit(repo, [first, second], merged, message)


def _read_note(repo: Repo, oid: Oid | None) -> bytes | None:
    if oid is None:
        return None
    try:
        raw = repo.read_blob(oid)
    except GitFailure as exc:
        raise BadRemoteData(exc.message) from exc
    if len(raw) > chain.MAX_RECORD_BYTES:
        raise BadRemoteData(f"blob {str(oid)[:12]} is {len(raw)} bytes, too large for a note")
    return raw


def _merge_note(repo: Repo, base: Oid | None, ours: Oid | None, theirs: Oid | None,
                ours_win: bool) -> Oid | None:
    b, o, t = (_parse(_read_note(repo, oid)) for oid in (base, ours, theirs))
    if b is None or o is None or t is None:
        return ours if ours_win else theirs  # not JSON objects: one note wins whole
    note, _ = three_way(b, o, t, ours_win)
    if not note:
        return None
    return repo.write_blob(canonical(note, ascii_only=False))
