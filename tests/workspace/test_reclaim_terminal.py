"""reclaim --discard on a terminal asks first; anything but yes changes nothing."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from tests.kit.harn import all_refs, ref
from tests.kit.salvage_trees import lock_files, make_dirty, started


def discard_on_a_terminal(repo: Path, answer: str) -> tuple[int, str]:
    primary, secondary = pty.openpty()
    process = subprocess.Popen(["git", "harn", "reclaim", "r1", "--discard"], cwd=repo,
                               stdin=secondary, stderr=secondary, stdout=subprocess.PIPE)
    os.close(secondary)
    os.write(primary, answer.encode() + b"\n")
    seen = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    process.wait(timeout=60)
    os.close(primary)
    return process.returncode, seen.decode("utf-8", "replace")


def test_discard_on_a_terminal_declined_changes_nothing(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    make_dirty(wt)
    before = all_refs(repo)
    code, shown = discard_on_a_terminal(repo, "n")
    assert code == 2
    assert "Discard 4 uncommitted path(s) of run r1?" in shown and "notes/plan.md" in shown
    assert all_refs(repo) == before and (wt / "notes/plan.md").exists()
    assert lock_files(repo) == []


def test_discard_on_a_terminal_confirmed_discards(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    make_dirty(wt)
    code, _ = discard_on_a_terminal(repo, "y")
    assert code == 0
    assert not wt.exists() and ref(repo, "refs/heads/harnery/salvage/r1") is None
