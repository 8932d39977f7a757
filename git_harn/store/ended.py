"""Which run records have ended, known by their tip commit, so that a
listing of live state reads no ended record twice [W4].

A record's state is a function of its tip: the commit names its tree, the
tree its ``run.json``. So the tips whose record was read once and found
ended (released, already_gone) are kept in a cache file beside the locks,
one object id a line, and a record whose ref still points at such a tip is
ended without being read. A record that moved (a new event, a sync merge)
has a new tip and is read again. The file is only a cache: unreadable or
absent, every record is read, and the file is written afresh.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

from git_harn.files import atomic_write
from git_harn.git import Repo
from git_harn.store import runs

CACHE_NAME = "ended-run-tips"
HEADER = "# git-harn: tips of ended run records (a cache; safe to delete)\n"


def cache_path(repo: Repo) -> Path:
    return repo.common_dir / "harnery" / "cache" / CACHE_NAME


def _load(path: Path) -> set[str]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return set()
    if not text.startswith(HEADER):
        return set()
    return {line for line in text[len(HEADER):].splitlines() if len(line) in (40, 64)}


def live_records(repo: Repo) -> tuple[list[runs.Stored | runs.Unreadable], int]:
    """The records that have not ended (and the unreadable ones, in ref
    order), and how many ended; each ended record is read once, ever."""
    path = cache_path(repo)
    known = _load(path)
    ended: set[str] = set()
    live: list[runs.Stored | runs.Unreadable] = []
    for name, tip in sorted(repo.refs_under(runs.RUNS_PREFIX)):
        hexed = str(tip)
        if hexed in known:
            ended.add(hexed)
            continue
        entry = runs.read_at(repo, name, tip)
        if isinstance(entry, runs.Stored) and entry.record.terminal:
            ended.add(hexed)
        else:
            live.append(entry)
    if ended != known:
        with suppress(OSError):  # a cache: a read-only repository only pays the reads again
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, (HEADER + "".join(f"{oid}\n" for oid in sorted(ended))).encode())
    return live, len(ended)
