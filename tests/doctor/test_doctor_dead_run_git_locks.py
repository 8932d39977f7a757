"""A reclaim killed, with the git it ran, while git held the salvage index
lock: doctor names the dead run lock and git's locks in that workspace's
admin folder in one finding, and removes them together (issue 45, item
4a) [P6].

The run lock names a dead pid, so whoever held git's locks there is proven
dead at once: no 60-second wait as for a lock nobody is known to have left.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from tests.kit.git_crashes import admin_of, kill_group_when_blocked, make_gate, use_gate
from tests.kit.harn import assert_valid, harn, ref
from tests.kit.salvage_trees import lock_files, make_dirty, started, tree_files, worktree_files

SALVAGE = "refs/heads/harnery/salvage/r1"


def _killed_in_the_salvage_add(tmp_path: Path) -> tuple[Path, Path, dict[bytes, tuple[int, bytes]]]:
    gate = make_gate(tmp_path / "gate")
    repo, wt = started(tmp_path)
    use_gate(repo, gate, "clean")
    (wt / ".gitattributes").write_text("*.gate filter=gate\n")
    (wt / "output.gate").write_text("what the agent wrote\n")
    make_dirty(wt)
    expected = worktree_files(wt)
    assert harn(repo, "cleanup", "r1", "--yes").code == 3
    kill_group_when_blocked(repo, ["reclaim", "r1"], gate)
    assert (admin_of(wt) / "harn-salvage-index.lock").exists()
    assert lock_files(repo) == ["run-r1.lock"]
    return repo, wt, expected


def _finding(repo: Path) -> dict[str, object]:
    done = harn(repo, "doctor", "--json")
    assert done.code == 1, done.err
    assert_valid(done.json(), "doctor")
    dead = [f for f in done.json()["findings"] if f["code"] == "lock-dead"]
    assert len(dead) == 1, done.json()["findings"]
    return dead[0]


def test_doctor_names_the_index_lock_of_a_dead_reclaim_and_its_fix_removes_both(tmp_path: Path) -> None:
    repo, wt, expected = _killed_in_the_salvage_add(tmp_path)
    index_lock = admin_of(wt) / "harn-salvage-index.lock"
    found = _finding(repo)
    assert str(index_lock) in found["why"], found["why"]  # today: only the run lock is named
    assert found["subject"]["gitLocks"] == [str(index_lock)]
    assert str(index_lock) in shlex.split(str(found["fix"]))

    ran = subprocess.run(shlex.split(str(found["fix"])), cwd=repo, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert not index_lock.exists() and lock_files(repo) == []
    assert harn(repo, "reclaim", "r1").code == 0
    assert tree_files(repo, SALVAGE) == expected


def test_doctor_fix_removes_the_dead_runs_git_locks_in_the_same_step(tmp_path: Path) -> None:
    repo, wt, expected = _killed_in_the_salvage_add(tmp_path)
    index_lock = admin_of(wt) / "harn-salvage-index.lock"
    fixed = harn(repo, "doctor", "--fix", "--yes", "--json")
    assert fixed.code in (0, 1), fixed.err
    applied = [a for a in fixed.json()["fixed"] if a["code"] == "lock-dead"]
    assert applied and applied[0]["ok"], fixed.out
    assert not index_lock.exists() and lock_files(repo) == []
    assert harn(repo, "reclaim", "r1").code == 0
    assert tree_files(repo, SALVAGE) == expected and ref(repo, "refs/heads/harnery/ws/r1") is None
