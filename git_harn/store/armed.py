"""Which seals are armed in this clone now [T2].

A run whose stages are checked against a seal (``store/seal``: a workflow
run, a ``git harn run``) says so by a file under
``<common git dir>/harnery/seals/`` naming it and its process, from before
the seal is taken to after it is put away. Another git-harn of the
operator's in the same clone (a ``git harn sync``) reads it to leave alone
what the seal watches, rather than have its writes taken for a stage's
tampering.

The file is a hint, never a permission: a stage can write it or remove it
as it can anything in the git dir. One it planted only makes a sync leave
this clone's records for later; one it removed makes a sync move them, and
the seal then blames the stages in flight, as it blames any other write.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from git_harn.files import loads_json
from git_harn.store.locks import owner_alive, process_owner

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def seals_dir(common: Path) -> Path:
    return common / "harnery" / "seals"


@contextmanager
def marked(common: Path, owner: str) -> Iterator[None]:
    """While the block runs, this process's seal named ``owner`` is armed here."""
    folder = seals_dir(common)
    path = folder / (owner if _NAME.fullmatch(owner) else "run")
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"owner": owner, **process_owner()}) + "\n")
    try:
        yield
    finally:
        with suppress(OSError):
            path.unlink()


def armed(common: Path) -> list[str]:
    """The owners (a workflow id, a run id) whose seal is armed in this clone
    now; a file whose process is provably gone is not, and is removed."""
    found = []
    with suppress(OSError):
        for entry in sorted(os.scandir(seals_dir(common)), key=lambda e: e.name):
            owner = _owner(Path(entry.path))
            if owner is None:
                continue
            if not owner_alive(owner):
                with suppress(OSError):
                    os.unlink(entry.path)
                continue
            name = owner.get("owner")
            found.append(name if isinstance(name, str) and _NAME.fullmatch(name) else entry.name)
    return found


def _owner(path: Path) -> dict[str, object] | None:
    try:
        data = loads_json(path.read_bytes()[:4096])
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
