"""The uncommitted paths status last saw in each workspace of this clone [W4] [W7].

A folder removed by hand (``git worktree remove --force``, ``rm -r``) takes
its uncommitted work with it; git keeps no trace. So that the workspace is
not turned already_gone in silence, ``git harn status`` keeps, in one small
file of the git dir, the first dirty paths it saw in each live workspace
(written only when they change), and whatever settles a vanished folder
names them once, in the record's reason and on stderr.
"""

from __future__ import annotations

import json
from contextlib import suppress
from pathlib import Path
from typing import Any

from git_harn.clock import now_iso
from git_harn.files import atomic_write
from git_harn.git import Repo
from git_harn.git.workdir import DirtyPath
from git_harn.text import printable_path

KEPT = 20  # paths kept per workspace; the count is whole
SHOWN = 5


def _file(repo: Repo) -> Path:
    return repo.common_dir / "harnery" / "dirty-seen.json"


def _read(repo: Repo) -> dict[str, Any]:
    try:
        data = json.loads(_file(repo).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(repo: Repo, looked: dict[str, list[DirtyPath]]) -> None:
    """What status saw in the workspaces it looked into (run id -> dirty
    paths; a clean one forgets what was seen). One write, only on a change."""
    old = _read(repo)
    new = {run: entry for run, entry in old.items() if run not in looked}
    for run, dirty in looked.items():
        if not dirty:
            continue
        paths = [d.path for d in dirty[:KEPT]]
        before = old.get(run)
        same = isinstance(before, dict) and before.get("paths") == paths and before.get("count") == len(dirty)
        new[run] = before if same else {"count": len(dirty), "paths": paths, "at": now_iso()}
    if new != old:
        with suppress(OSError):  # a note for later; status never fails for it
            _file(repo).parent.mkdir(parents=True, exist_ok=True)
            atomic_write(_file(repo), json.dumps(new, sort_keys=True).encode())


def lost_with_folder(repo: Repo, run_id: str) -> str | None:
    """A sentence on the uncommitted paths status last saw in ``run_id``'s
    workspace, which went with its folder; forgotten once said."""
    seen = _read(repo)
    entry = seen.pop(run_id, None)
    if not isinstance(entry, dict) or not entry.get("count"):
        return None
    with suppress(OSError):
        atomic_write(_file(repo), json.dumps(seen, sort_keys=True).encode())
    paths = [printable_path(str(p)) for p in entry.get("paths") or []]
    count = int(entry["count"])
    more = f" … and {count - SHOWN} more" if count > SHOWN else ""
    return (f"it held {count} uncommitted path(s) when status last looked ({entry.get('at', '?')}): "
            f"{', '.join(paths[:SHOWN])}{more}; they went with the folder")
