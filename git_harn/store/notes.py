"""JSON notes in refs/harnery/notes: one object per commit, one member per kind.

A write merges its member into the commit's note with compare-and-swap on the
notes ref and never erases other members [P3]. ``git notes add`` cannot be
used: it does not check the old value.
"""

from __future__ import annotations

import json
from typing import Any

import pygit2

from git_harn.errors import RaceLost
from git_harn.git import Repo
from git_harn.git.identity import machine_signature

NOTES_REF = "refs/harnery/notes"
MAX_RETRIES = 8


def _notes_tree(repo: Repo, tip: pygit2.Oid | None) -> pygit2.Tree | None:
    return repo.commit(tip).tree if tip is not None else None


def _note_blob(repo: Repo, tree: pygit2.Tree | None, annotated: str) -> bytes | None:
    if tree is None:
        return None
    # Notes written by git itself may use a fan-out tree (ab/cdef…).
    for path in (annotated, f"{annotated[:2]}/{annotated[2:]}"):
        try:
            entry = tree[path]
        except KeyError:
            continue
        blob = repo.pg[entry.id]
        if isinstance(blob, pygit2.Blob):
            return blob.data
    return None


def _parse(raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {"text": raw.decode("utf-8", "replace")}
    return data if isinstance(data, dict) else {"text": data}


def read_note(repo: Repo, commit: pygit2.Oid) -> dict[str, Any]:
    """The JSON note on ``commit`` ({} when it has none)."""
    tip = repo.ref_oid(NOTES_REF)
    return _parse(_note_blob(repo, _notes_tree(repo, tip), str(commit)))


def merge_note(repo: Repo, commit: pygit2.Oid, kind: str, value: Any) -> None:
    """Set member ``kind`` of the note on ``commit``, keeping the others."""
    annotated = str(commit)
    for _ in range(MAX_RETRIES):
        tip = repo.ref_oid(NOTES_REF)
        tree = _notes_tree(repo, tip)
        note = _parse(_note_blob(repo, tree, annotated))
        note[kind] = value
        text = json.dumps(note, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        blob = repo.pg.create_blob(text.encode("utf-8"))
        builder = repo.pg.TreeBuilder(tree) if tree is not None else repo.pg.TreeBuilder()
        builder.insert(annotated, blob, pygit2.enums.FileMode.BLOB)
        signature = machine_signature(repo)
        parents = [tip] if tip is not None else []
        new_tip = repo.pg.create_commit(
            None, signature, signature, f"git-harn: {kind} note on {annotated[:12]}\n",
            builder.write(), parents,
        )
        try:
            repo.move_ref(NOTES_REF, new_tip, tip, f"git-harn: {kind} note")
        except RaceLost:
            continue
        show_notes_in_log(repo)
        return
    raise RaceLost(f"{NOTES_REF} kept changing under us; try again")


def show_notes_in_log(repo: Repo) -> None:
    """Make plain ``git log`` show our notes (notes.displayRef)."""
    repo.ensure_config_value("notes.displayRef", NOTES_REF)
