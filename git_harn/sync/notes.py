"""Notes (``refs/harnery/notes``): the same five cases as a record chain, and
a merge per annotated commit.

Members of different kinds are united. The same member changed on both sides
to different values is decided for the side whose notes were written later
(the committer date of its notes head, then the greater commit id); the other
value stays in the notes history, a parent of the merge. A note on a commit
this clone does not have is kept like any other.

Notes are united, never deleted by a sync: a note one side lacks is the
other's, and so is a member [P3]. A prune (``doctor --fix``) is its clone's own: what sync pushes
holds every note the remote holds, and this clone's ref gets the pushed
commit with its own prune made again on top (a child the remote never sees),
so the prune holds here and no other clone loses a note [P6].
"""

from __future__ import annotations

import re
from typing import Any

from git_harn.errors import GitFailure
from git_harn.files import loads_json
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.identity import machine_signature
from git_harn.git.objects import BLOB_MODE, REGULAR_MODES
from git_harn.store import chain
from git_harn.store.notes import NOTES_REF
from git_harn.sync.steps import (
    AHEAD,
    BOTH,
    MERGED,
    SAME,
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
    bases: list[Oid | None] = []

    def merged(mine: Oid, theirs: Oid, base: Oid | None) -> Oid:
        bases.append(base)
        return merge(repo, mine, theirs, base)

    step = plan_united(repo, NOTES_REF, local, remote, dry_run,
                       lambda tip, mine: check_notes(repo, tip, [mine] if mine is not None else []), merged)
    if local is None or remote is None:
        return step
    if step.action == AHEAD:
        _push_without_prunes(repo, step, to_oid(local), to_oid(remote), dry_run)
    elif step.action == MERGED and step.local is not None and bases:
        _prune_again(repo, step, to_oid(local), bases[0])
    return step


def _push_without_prunes(repo: Repo, step: Step, mine: Oid, theirs: Oid, dry_run: bool) -> None:
    """This clone's head descends from the remote's: push it, but never a
    note or a member it pruned. Pushed instead: a commit on this head
    putting back what the remote holds and this head lacks (nothing at all
    when that is the only difference); this clone keeps its head's notes on
    top."""
    ours, remote_notes = _flat_tree(repo, mine), _flat_tree(repo, theirs)
    back = _put_back(repo, ours, remote_notes)
    if not back:
        return
    if _adds_nothing(repo, ours, remote_notes):
        step.action, step.push = SAME, None  # only this clone's prune differs: nothing to share
        return
    if dry_run:
        return
    who = machine_signature(repo)
    paths = {path.replace("/", ""): path for path in repo.flatten(mine)}
    files = {paths.get(name, name): (blob, BLOB_MODE) for name, blob in back.items()}
    kept = repo.make_commit(repo.tree_with(mine, files), [mine],
                            f"git-harn: {len(back)} note(s) pruned in one clone, kept for the others\n", who)
    step.push = str(kept)
    step.local = str(repo.make_commit(repo.tree_id(mine), [kept], _prune_message(len(back)), who))


def _put_back(repo: Repo, ours: dict[str, Oid], theirs: dict[str, Oid]) -> dict[str, Oid]:
    """name -> the note to push where this clone's notes lack what the
    remote's hold: a whole note, or members (the note united with them)."""
    back: dict[str, Oid] = {}
    for name, blob in theirs.items():
        mine = ours.get(name)
        if mine is None:
            back[name] = blob
        elif mine != blob:
            o, t = _parse(_read_note(repo, mine)), _parse(_read_note(repo, blob))
            if o is not None and t is not None and set(t) - set(o):
                back[name] = repo.write_blob(canonical({**t, **o}, ascii_only=False))
    return back


def _adds_nothing(repo: Repo, ours: dict[str, Oid], theirs: dict[str, Oid]) -> bool:
    """Every note here is the remote's, or the remote's less some members."""
    for name, blob in ours.items():
        other = theirs.get(name)
        if other is None:
            return False
        if other != blob:
            o, t = _parse(_read_note(repo, blob)), _parse(_read_note(repo, other))
            if o is None or t is None or any(key not in t or t[key] != value for key, value in o.items()):
                return False
    return True


def _prune_again(repo: Repo, step: Step, mine: Oid, base: Oid | None) -> None:
    """The merge united the notes this clone pruned (in the base, not in its
    head) with the remote's: push the merge, and keep the prune here as a
    child of it."""
    merged = to_oid(str(step.local))
    ours, before, united = _flat_tree(repo, mine), _flat_tree(repo, base), _flat_tree(repo, merged)
    pruned = sorted(name for name in united if name in before and name not in ours)
    if pruned:
        step.local = str(repo.make_commit(repo.tree_without(merged, pruned), [merged],
                                          _prune_message(len(pruned)), machine_signature(repo)))


def _prune_message(count: int) -> str:
    return f"git-harn: prune {count} note(s) in this clone again (a prune is local; the remote keeps them)\n"


def in_step(repo: Repo, local: str | None, remote: str | None) -> bool:
    """This clone's notes head is what the remote holds, or descends from it
    by this clone's prunes alone (no note the remote lacks, none changed):
    what a sync leaves, with nothing to sync."""
    if local == remote or local is None or remote is None:
        return local == remote
    try:
        mine, theirs = to_oid(local), to_oid(remote)
        if not repo.contains(mine, theirs):
            return False
        return _adds_nothing(repo, _flat_tree(repo, mine), _flat_tree(repo, theirs))
    except (GitFailure, ValueError, BadRemoteData):
        return False


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
        if (o is None) != (t is None):  # united: a note one side lacks is the other's, never deleted
            merged[name] = (o or t, BLOB_MODE)  # type: ignore[assignment]
            continue
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
    # United by member too: a member one side lacks is the other's (a member
    # only ever goes in a prune, which is its clone's own).
    b = {key: value for key, value in b.items() if key in o and key in t}
    note, _ = three_way(b, o, t, ours_win)
    if not note:
        return None
    return repo.write_blob(canonical(note, ascii_only=False))
