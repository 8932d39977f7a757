"""JSON notes in refs/harnery/notes: one object per commit, one member per kind.

A write merges its member into the commit's note with compare-and-swap on the
notes ref (``store/chain``'s one loop) and never erases other members [P3]. ``git notes add`` cannot be
used: it does not check the old value.
"""

from __future__ import annotations

import json
from typing import Any

from git_harn.files import loads_json
from git_harn.git import Oid, Repo
from git_harn.git.objects import BLOB_MODE
from git_harn.store import chain

NOTES_REF = chain.ROOT + "notes"


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
        text = json.dumps(note, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        return {annotated: (text.encode("utf-8"), BLOB_MODE)}, f"git-harn: {kind} note on {annotated[:12]}\n"

    chain.update_ref(repo, NOTES_REF, step)
    show_notes_in_log(repo)


def show_notes_in_log(repo: Repo) -> None:
    """Make plain ``git log`` show our notes (notes.displayRef)."""
    repo.ensure_config_value("notes.displayRef", NOTES_REF)
