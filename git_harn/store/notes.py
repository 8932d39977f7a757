"""JSON notes in refs/harnery/notes: one object per commit, one member per kind.

A write merges its member into the commit's note with compare-and-swap on the
notes ref (``store/chain``'s one loop) and never erases other members [P3]. ``git notes add`` cannot be
used: it does not check the old value.

A prune takes out only notes on objects this clone had and lost: each write
names the object it annotates in a file of this clone's (its git dir), the
proof that the object was here. A note that came by sync on an object this
clone never fetched is absent here, not gone, and is never pruned [P6].
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from git_harn.files import loads_json, private_dir, read_regular_file
from git_harn.git import Oid, Repo
from git_harn.git.cas import retry_cas
from git_harn.git.identity import machine_signature
from git_harn.git.objects import BLOB_MODE
from git_harn.store import chain, mac

NOTES_REF = chain.ROOT + "notes"
# At most this much of the list of annotated objects is read (a year's
# 100,000 notes are 4.1 MB).
_ANNOTATED_LIMIT = 64 * 1024 * 1024


def _note_blob(repo: Repo, tip: Oid | None, annotated: str) -> bytes | None:
    if tip is None:
        return None
    # Notes written by git itself may use a fan-out tree (ab/cdef…).
    for path in (annotated, f"{annotated[:2]}/{annotated[2:]}"):
        data = repo.read_file(tip, path)
        if data is not None:
            return data
    return None


def _parse(raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        data = loads_json(raw)
    except (ValueError, UnicodeDecodeError):
        return {"text": raw.decode("utf-8", "replace")}
    return data if isinstance(data, dict) else {"text": data}


def read_note(repo: Repo, commit: Oid) -> dict[str, Any]:
    """The JSON note on ``commit`` ({} when it has none)."""
    return _parse(_note_blob(repo, repo.ref_oid(NOTES_REF), str(commit)))


def merge_note(repo: Repo, commit: Oid, kind: str, value: Any) -> None:
    """Set member ``kind`` of the note on ``commit``, keeping the others."""
    annotated = str(commit)

    def step(tip: Oid | None) -> tuple[chain.Files, str]:
        note = _parse(_note_blob(repo, tip, annotated))
        note[kind] = value
        return {annotated: (_note_bytes(note), BLOB_MODE)}, f"git-harn: {kind} note on {annotated[:12]}\n"

    chain.update_ref(repo, NOTES_REF, step)
    _remember_annotated(repo, annotated)
    show_notes_in_log(repo)


def merge_signed(repo: Repo, commit: Oid, kind: str, value: dict[str, Any]) -> None:
    """``merge_note`` of evidence (gates, a review): the member carries this
    machine's MAC, bound to ``commit`` and ``kind`` (``store/mac``)."""
    merge_note(repo, commit, kind, mac.sign(kind, str(commit), value))


def _annotated_file(repo: Repo) -> Path:
    return repo.common_dir / "harnery" / "notes-annotated-here"


def _remember_annotated(repo: Repo, annotated: str) -> None:
    """Name ``annotated`` in this clone's list of objects it wrote a note on
    (it had the object then). One appended line, written whole by one
    ``write`` (O_APPEND), so concurrent writers never interleave."""
    path = private_dir(_annotated_file(repo).parent) / _annotated_file(repo).name
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, f"{annotated}\n".encode("ascii"))
    finally:
        os.close(fd)


def annotated_here(repo: Repo) -> set[str]:
    """The objects this clone wrote a note on (so once had)."""
    raw = read_regular_file(_annotated_file(repo), _ANNOTATED_LIMIT, whole=False)
    return set(raw.decode("ascii", "replace").split()) if raw else set()


def _note_bytes(note: dict[str, Any]) -> bytes:
    return (json.dumps(note, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def show_notes_in_log(repo: Repo) -> None:
    """Make plain ``git log`` show our notes (notes.displayRef)."""
    repo.ensure_config_value("notes.displayRef", NOTES_REF)


def notes_on_missing_objects(repo: Repo) -> list[str]:
    """The objects our notes annotate that this clone had and no longer has
    (a commit of a deleted branch, pruned by gc); read from the notes tree,
    flat or fanned out as ``git notes`` writes it. An object it never had
    (a note another clone wrote, synced here) is not among them."""
    tip = repo.ref_oid(NOTES_REF)
    return [] if tip is None else sorted(_gone_paths(repo, tip).values())


# What one prune takes out of the notes tree at a tip: path -> the note's
# new bytes, or None where the whole note goes.
Pruning = dict[str, bytes | None]


def prune_notes(repo: Repo) -> int:
    """Take out the notes whose object is gone (this clone had it and lost
    it), as one commit on the notes ref with compare-and-swap (``git notes
    prune`` refuses a ref outside refs/notes/, and moves a ref without a
    lease). The pruned notes stay in the ref's history, and on the remote:
    sync keeps a prune in its clone (``sync/notes``). Returns how many were
    taken out."""
    return _prune(repo, lambda tip: dict.fromkeys(_gone_paths(repo, tip)), "note(s) whose object is gone")


def salvage_notes_to_prune(repo: Repo) -> Pruning:
    """Notes path -> the note without its salvage member (None: nothing
    left, the note goes), for each note whose salvage branch is gone.
    A salvage note is keyed by the salvage commit and names its branch
    (``ref``); once that branch is deleted the note only misleads, and
    ``git notes prune`` cannot see it while the commit is still in the
    repository."""
    tip = repo.ref_oid(NOTES_REF)
    return {} if tip is None else _salvage_pruning(repo, tip)


def prune_salvage_notes(repo: Repo) -> int:
    """Drop the salvage member of the notes whose branch is gone, in one
    commit with compare-and-swap; a note with nothing else goes. Returns
    how many notes changed."""
    return _prune(repo, lambda tip: _salvage_pruning(repo, tip), "salvage note(s) whose branch is gone")


def _salvage_pruning(repo: Repo, tip: Oid) -> Pruning:
    changes: Pruning = {}
    for path in note_paths(repo, tip):
        note = _parse(repo.read_file(tip, path, limit=chain.MAX_RECORD_BYTES))
        salvage = note.get("salvage")
        if not isinstance(salvage, dict) or not isinstance(salvage.get("ref"), str):
            continue
        if repo.ref_oid(salvage["ref"]) is not None:
            continue
        del note["salvage"]
        changes[path] = _note_bytes(note) if note else None
    return changes


def _prune(repo: Repo, find: Callable[[Oid], Pruning], what: str) -> int:
    """The one loop of both prunes: ``find`` at the tip read, one commit,
    compare-and-swap, again from a fresh read when another writer won."""
    changed = 0

    def attempt() -> None:
        nonlocal changed
        tip = repo.ref_oid(NOTES_REF)
        changes = find(tip) if tip is not None else {}
        changed = len(changes)
        if tip is None or not changes:
            return
        gone = [path for path, body in changes.items() if body is None]
        tree = repo.tree_without(tip, gone) if gone else repo.tree_id(tip)
        kept = {path: (body, BLOB_MODE) for path, body in changes.items() if body is not None}
        if kept:
            tree = repo.tree_with(tree, kept)
        text = f"git-harn: prune {changed} {what}\n"
        repo.move_ref(NOTES_REF, repo.make_commit(tree, [tip], text, machine_signature(repo)), tip, text.strip())

    retry_cas(attempt, NOTES_REF)
    return changed


def _gone_paths(repo: Repo, tip: Oid) -> dict[str, str]:
    """path in the notes tree -> the object it annotates, for each object
    that is gone: this clone wrote a note on it, so it had it, and lacks it
    now; one tree listing and one object lookup per note (a year's 100,000
    notes cost well under a second)."""
    had = annotated_here(repo)
    annotated = {path.replace("/", ""): path for path in note_paths(repo, tip)}
    annotated = {hex_id: path for hex_id, path in annotated.items() if hex_id in had}
    return {annotated[hex_id]: hex_id for hex_id in repo.missing_objects(annotated)}


def note_paths(repo: Repo, tip: Oid) -> list[str]:
    """Every note's path in the notes tree at ``tip``, flat or fanned out
    as ``git notes`` writes them (ab/cdef…)."""
    paths, fanned_out = repo.names_in(tip)
    for folder in fanned_out:
        paths += [f"{folder}/{name}" for name in repo.names_in(tip, folder)[0]]
    return paths
