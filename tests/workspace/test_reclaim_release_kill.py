"""A reclaim killed, with the git it runs, while it removes the workspace
(the record says ``releasing``): the rerun finishes the release and never
salvages what the removal left (issue 45, item 13) [P1] [P6].

The reclaim is stopped at the ``cleanup-before-remove`` failpoint (the
salvage is recorded, the tree reset and judged clean), let go, and its whole
process group is SIGKILLed at an instant of ``git worktree remove``: once a
chosen entry of the folder (in the order git deletes them, readdir's) is
gone, once the folder is gone, or before git ran at all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import suppress
from pathlib import Path

import pytest

from tests.kit.git_crashes import _stat, group_members
from tests.kit.harn import assert_valid, git, harn, record, ref
from tests.kit.salvage_trees import lock_files, make_dirty, started, tree_files, worktree_files

SALVAGE = "refs/heads/harnery/salvage/r1"
WS = "refs/heads/harnery/ws/r1"
DIRS, PER_DIR = 12, 60  # 720 tracked files: git takes a while to delete them


def big_dirty_workspace(tmp_path: Path) -> tuple[Path, Path, dict[bytes, tuple[int, bytes]]]:
    files = {f"d{d:02}/f{f:03}.txt": f"{d}/{f}\n" for d in range(DIRS) for f in range(PER_DIR)}
    files.update({"README.md": "hello\n", "src/app.py": "x = 1\n", "src/old.py": "old\n", ".gitignore": "*.log\n"})
    repo, wt = started(tmp_path, files=files)
    make_dirty(wt)
    for d in range(0, DIRS, 3):
        (wt / f"d{d:02}/f000.txt").write_text("changed by the agent\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3  # preserved: the intent is frozen
    return repo, wt, worktree_files(wt)


def _stopped(pgid: int) -> bool:
    return any((_stat(pid) or ("",))[0] == "T" for pid, _ in group_members(pgid))


def kill_during_release(repo: Path, wt: Path, until: str | None, seconds: float = 60) -> None:
    """Run a reclaim to the removal, let git remove, and SIGKILL the whole
    group once ``until`` (a name in the folder, or "" for the folder itself)
    is gone; None kills it at the failpoint, before git ran."""
    env = dict(os.environ, HARN_FAILPOINT="cleanup-before-remove", HARN_FAILPOINT_MODE="stop")
    proc = subprocess.Popen(["git", "harn", "reclaim", "r1"], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    pgid = proc.pid
    deadline = time.monotonic() + seconds
    try:
        while not _stopped(pgid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _stopped(pgid), f"reclaim never reached the removal: {proc.communicate()}"
        assert record(repo, "r1")["releasing"] is not None
        if until is not None:
            watched = wt / until if until else wt
            os.killpg(pgid, signal.SIGCONT)
            while os.path.lexists(watched) and proc.poll() is None and time.monotonic() < deadline:
                pass  # no sleep: the kill lands as close to the deletion as this loop can see it
            os.killpg(pgid, signal.SIGSTOP)
        os.killpg(pgid, signal.SIGKILL)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        proc.communicate(timeout=30)
        while group_members(pgid) and time.monotonic() < deadline + 10:
            time.sleep(0.02)
    assert not group_members(pgid)


def assert_one_whole_salvage(repo: Path, wt: Path, expected: dict[bytes, tuple[int, bytes]]) -> None:
    subjects = git(repo, "log", "--format=%s", SALVAGE).splitlines()
    assert sum(s.startswith("salvage: uncommitted work") for s in subjects) == 1, subjects
    assert tree_files(repo, SALVAGE) == expected  # every file, byte for byte
    rec = record(repo, "r1")
    assert_valid(rec, "run-record")
    assert rec["state"] == "released" and rec["releasing"] is None
    assert rec["salvage"]["oid"] == ref(repo, SALVAGE)
    assert not wt.exists() and ref(repo, WS) is None
    assert str(wt) not in git(repo, "worktree", "list")
    assert lock_files(repo) == []


def _removal_order(wt: Path) -> list[str]:
    """The workspace's top entries in the order git deletes them (readdir's)."""
    return os.listdir(wt)


@pytest.mark.parametrize("instant", ["before-git", "first", "quarter", "git-file", "half", "last", "folder"])
def test_reclaim_killed_while_releasing_finishes_the_release(tmp_path: Path, instant: str) -> None:
    repo, wt, expected = big_dirty_workspace(tmp_path)
    # What the folder holds once the reclaim reset it: the frozen intent's files.
    order = [name for name in _removal_order(wt) if name not in ("build.log", "notes")]
    picks = {"before-git": None, "first": order[0], "quarter": order[len(order) // 4], "git-file": ".git",
             "half": order[len(order) // 2], "last": order[-1], "folder": ""}
    kill_during_release(repo, wt, picks[instant])
    assert ref(repo, SALVAGE) is not None  # the salvage was recorded before the removal began

    rerun = harn(repo, "reclaim", "r1", "--json")
    assert rerun.code == 0, rerun.err
    assert rerun.json()["state"] == "released", rerun.out
    again = harn(repo, "reclaim", "r1", "--json")
    assert again.code == 0 and again.json()["outcome"] == "already_gone"
    assert_one_whole_salvage(repo, wt, expected)


def test_a_removal_killed_then_cleanup_then_reclaim_salvages_nothing_twice(tmp_path: Path) -> None:
    """cleanup, not reclaim, comes back first: it finishes the release too."""
    repo, wt, expected = big_dirty_workspace(tmp_path)
    order = [name for name in _removal_order(wt) if name not in ("build.log", "notes")]
    kill_during_release(repo, wt, order[len(order) // 3])
    done = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert done.code == 0, done.err
    assert done.json()["state"] == "released", done.out
    assert harn(repo, "reclaim", "r1").code == 0
    assert_one_whole_salvage(repo, wt, expected)


@pytest.mark.parametrize("after", [0.0, 0.002, 0.005, 0.01, 0.02, 0.04])
def test_reclaim_killed_at_timed_instants_of_the_release(tmp_path: Path, after: float) -> None:
    """Kills timed from the moment git is let go, as the trial did."""
    repo, wt, expected = big_dirty_workspace(tmp_path)
    env = dict(os.environ, HARN_FAILPOINT="cleanup-before-remove", HARN_FAILPOINT_MODE="stop")
    proc = subprocess.Popen(["git", "harn", "reclaim", "r1"], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    try:
        while not _stopped(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _stopped(proc.pid)
        os.killpg(proc.pid, signal.SIGCONT)
        time.sleep(after)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        while group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
    rerun = harn(repo, "reclaim", "r1")
    assert rerun.code == 0, rerun.err
    assert_one_whole_salvage(repo, wt, expected)


def test_a_release_killed_inside_the_branch_delete_leaves_gits_ref_lock_which_the_rerun_clears(
        tmp_path: Path) -> None:
    """Killed while git deleted the workspace branch: git's lock beside the ref
    is left by the dead release, named by its mark, so the rerun removes it
    and finishes; what was salvaged stays whole [P6] [P1]."""
    repo, wt, expected = big_dirty_workspace(tmp_path)
    kill_during_release(repo, wt, "")  # the folder is gone; the branch delete comes next
    lock = repo / ".git" / (WS + ".lock")
    lock.write_text(ref(repo, WS) or "")  # what git leaves when it dies holding the ref's lock
    rerun = harn(repo, "reclaim", "r1", "--json")
    assert rerun.code == 0, rerun.err
    assert rerun.json()["state"] == "released" and not lock.exists() and ref(repo, WS) is None
    assert "removed" in rerun.err and "ws/r1.lock" in rerun.err
    assert_one_whole_salvage(repo, wt, expected)


def test_a_ref_lock_no_dead_release_left_is_never_removed(tmp_path: Path) -> None:
    """The same lock with no release under way (the folder vanished by hand):
    nothing says whose it is, so it stays and the command says so [P6]."""
    repo, wt = started(tmp_path)
    tip = ref(repo, WS)
    (repo / ".git" / (WS + ".lock")).write_text(tip or "")
    git(repo, "worktree", "remove", "--force", str(wt))
    git(repo, "branch", "harnery/keep-r1", tip or "")  # the tip is safe elsewhere, so a delete is tried
    done = harn(repo, "reclaim", "r1")
    assert done.code != 0 and "ws/r1.lock" in done.err
    assert (repo / ".git" / (WS + ".lock")).exists() and ref(repo, WS) == tip
