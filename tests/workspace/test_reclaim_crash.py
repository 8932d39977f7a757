"""Reclaim killed at every failpoint, then run again: nothing lost [P6] [P1].

Also two reclaims of one run at once: one proceeds, the other is told the
run is busy, and the work ends up safe either way.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.kit.harn import assert_valid, git, harn, record, ref
from tests.kit.salvage_trees import PLAIN, lock_files, make_dirty, started, tree_files, worktree_files

SALVAGE = "refs/heads/harnery/salvage/r1"
WS = "refs/heads/harnery/ws/r1"

FAILPOINTS = [
    "reclaim-after-salvage-commit",
    "reclaim-after-salvage-ref",
    "reclaim-after-salvage-record",
    "reclaim-after-ref-restored",
    "reclaim-after-index-adopted",
    "reclaim-after-clean",
    "cleanup-before-remove",
    "cleanup-after-remove",
]


def preserved_with_gained_commit(tmp_path: Path) -> tuple[Path, Path, str]:
    """A preserved workspace whose branch moved past the frozen intent and
    whose tree holds modified, deleted, staged and untracked work."""
    repo, wt = started(tmp_path)
    (wt / "gained.txt").write_text("committed after the freeze\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3  # freezes the intent
    git(wt, "add", "gained.txt")
    git(wt, "commit", "-qm", "gained", "--", "gained.txt")
    gained = git(wt, "rev-parse", "HEAD")
    make_dirty(wt)
    return repo, wt, gained


def assert_finished(repo: Path, wt: Path, expected: dict[bytes, tuple[int, bytes]], gained: str) -> None:
    assert tree_files(repo, SALVAGE) == expected  # the work, byte for byte
    assert tree_files(repo, SALVAGE + "^1")[b"README.md"] == (PLAIN, b"staged version\n")
    git(repo, "merge-base", "--is-ancestor", gained, SALVAGE)
    rec = record(repo, "r1")
    assert_valid(rec, "run-record")
    assert rec["state"] == "released" and rec["salvage"]["oid"] == ref(repo, SALVAGE)
    assert not wt.exists() and ref(repo, WS) is None
    assert str(wt) not in git(repo, "worktree", "list")
    assert lock_files(repo) == []


@pytest.mark.parametrize("point", FAILPOINTS)
def test_salvage_killed_then_rerun_loses_nothing(tmp_path: Path, point: str) -> None:
    repo, wt, gained = preserved_with_gained_commit(tmp_path)
    expected = worktree_files(wt)

    killed = harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": point})
    assert killed.code != 0, killed.out
    assert lock_files(repo) != []  # the dead process left its lock behind
    tip_after_crash = ref(repo, SALVAGE)

    rerun = harn(repo, "reclaim", "r1", "--json")
    assert rerun.code == 0, rerun.err
    document = rerun.json()
    assert_valid(document, "reclaim-result")
    assert document["state"] == "released"
    assert document["salvage"]["oid"] == ref(repo, SALVAGE)
    if tip_after_crash is not None:
        assert ref(repo, SALVAGE) == tip_after_crash  # the rerun made no second salvage
    assert_finished(repo, wt, expected, gained)


@pytest.mark.parametrize("point", ["reclaim-after-salvage-record", "reclaim-after-ref-restored",
                                   "reclaim-after-clean", "cleanup-before-remove"])
def test_discard_killed_then_rerun_keeps_commits(tmp_path: Path, point: str) -> None:
    repo, wt, gained = preserved_with_gained_commit(tmp_path)
    killed = harn(repo, "reclaim", "r1", "--discard", "--yes", env={"HARN_FAILPOINT": point})
    assert killed.code != 0
    rerun = harn(repo, "reclaim", "r1", "--discard", "--yes", "--json")
    assert rerun.code == 0, rerun.err
    assert rerun.json()["state"] == "released"
    assert ref(repo, SALVAGE) == gained  # commits are never discarded [P1]
    assert not wt.exists() and ref(repo, WS) is None and lock_files(repo) == []


def test_salvage_rerun_after_interrupted_restore_does_not_salvage_the_half_reset_tree(tmp_path: Path) -> None:
    repo, wt, gained = preserved_with_gained_commit(tmp_path)
    expected = worktree_files(wt)
    harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-ref-restored"})
    tip = ref(repo, SALVAGE)
    assert record(repo, "r1")["reclaiming"]["mode"] == "salvage"
    # What a half-done restore looks like: some of the work already reset away.
    (wt / "notes/plan.md").unlink()
    assert harn(repo, "reclaim", "r1").code == 0
    assert ref(repo, SALVAGE) == tip
    assert_finished(repo, wt, expected, gained)


def test_two_concurrent_reclaims_one_proceeds_one_is_busy(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    # A clean filter that takes its time keeps the first reclaim inside its
    # salvage (holding the run lock) while the second one starts.
    git(repo, "config", "filter.slow.clean", "sleep 3; cat")
    (wt / ".gitattributes").write_text("*.slow filter=slow\n")
    (wt / "big.slow").write_text("slow to add\n")
    make_dirty(wt)
    expected = worktree_files(wt)
    first = subprocess.Popen(["git", "harn", "reclaim", "r1"], cwd=repo, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    deadline = time.monotonic() + 20
    while not lock_files(repo) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock_files(repo) == ["run-r1.lock"]

    second = harn(repo, "reclaim", "r1")
    out, err = first.communicate(timeout=60)

    assert second.code == 1 and "busy" in second.err, second.err
    assert first.returncode == 0, err
    assert "released" in out
    assert tree_files(repo, SALVAGE) == expected
    assert record(repo, "r1")["state"] == "released" and lock_files(repo) == []
    again = harn(repo, "reclaim", "r1", "--json").json()
    assert again["outcome"] == "already_gone"


def test_work_added_after_a_crash_is_salvaged_too(tmp_path: Path) -> None:
    """The interrupted-salvage mark is not trusted once something happened
    since: a new commit, or a cleanup attempt. Then reclaim salvages afresh."""
    repo, wt, gained = preserved_with_gained_commit(tmp_path)
    harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-clean"})
    first = ref(repo, SALVAGE)
    assert first is not None
    (wt / "later.txt").write_text("written after the crash\n")
    git(wt, "add", "later.txt")
    git(wt, "commit", "-qm", "later")
    later = git(wt, "rev-parse", "HEAD")

    assert harn(repo, "reclaim", "r1").code == 0
    git(repo, "merge-base", "--is-ancestor", later, SALVAGE)
    git(repo, "merge-base", "--is-ancestor", first, SALVAGE)
    assert record(repo, "r1")["state"] == "released" and lock_files(repo) == []


def test_a_cleanup_attempt_after_a_crash_makes_reclaim_salvage_afresh(tmp_path: Path) -> None:
    repo, wt, gained = preserved_with_gained_commit(tmp_path)
    harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-clean"})
    first = ref(repo, SALVAGE)
    assert first is not None
    (wt / "fresh.txt").write_text("new dirt\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3  # preserved again: attempts + 1

    assert harn(repo, "reclaim", "r1").code == 0
    assert tree_files(repo, SALVAGE)[b"fresh.txt"] == (PLAIN, b"new dirt\n")
    git(repo, "merge-base", "--is-ancestor", first, SALVAGE)
    assert record(repo, "r1")["state"] == "released"
