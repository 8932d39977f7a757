"""A salvaged workspace is made clean where it stands: its HEAD detached at
the salvage commit, whose tree is the work, with the index the salvage
wrote. No file is rewritten only for the removal to delete it (issue 45:
the reset of 1,000 files was most of a reclaim), and a write made after the
salvage read the tree still stops the removal [P1] [W5] [W8]."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.kit.harn import git, harn, record, ref
from tests.kit.runners import at_failpoint
from tests.kit.salvage_trees import PLAIN, make_dirty, started, tree_files, worktree_files

SALVAGE = "refs/heads/harnery/salvage/r1"
WS = "refs/heads/harnery/ws/r1"


def test_a_salvaged_workspace_is_made_clean_without_rewriting_a_file(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    frozen = ref(repo, WS)
    make_dirty(wt)
    expected = worktree_files(wt)
    before = os.lstat(wt / "src/app.py")

    killed = harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-clean"})
    assert killed.code == 137, killed.err

    assert tree_files(repo, SALVAGE) == expected
    assert git(wt, "rev-parse", "HEAD") == ref(repo, SALVAGE)  # detached at the work
    assert git(wt, "symbolic-ref", "-q", "HEAD", check=False) == ""
    assert ref(repo, WS) == frozen  # the branch is back at the frozen intent [W8]
    assert git(wt, "status", "--porcelain", "--untracked-files=all") == ""  # clean: cleanup accepts it
    after = os.lstat(wt / "src/app.py")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # never rewritten
    assert (wt / "build.log").exists()  # ignored files are left to the removal, as before

    rerun = harn(repo, "reclaim", "r1", "--json")
    assert rerun.code == 0, rerun.err
    assert rerun.json()["state"] == "released" and not wt.exists() and ref(repo, WS) is None
    assert tree_files(repo, SALVAGE) == expected


def test_a_write_after_the_salvage_read_the_tree_is_kept(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    make_dirty(wt)
    expected = worktree_files(wt)
    runner = at_failpoint(repo, "reclaim-after-ref-restored", "reclaim", "r1")
    with runner:
        (wt / "late.txt").write_text("written while reclaim ran\n")
        (wt / "src/app.py").write_text("x = 3\n")
        os.killpg(runner.pgid, signal.SIGCONT)
        _, err = runner.proc.communicate(timeout=60)
    assert runner.proc.returncode == 3, err
    first = ref(repo, SALVAGE)
    assert tree_files(repo, SALVAGE) == expected  # what the salvage read
    assert (wt / "late.txt").read_text() == "written while reclaim ran\n"  # not removed
    assert (wt / "src/app.py").read_text() == "x = 3\n"
    assert record(repo, "r1")["state"] == "preserved_dirty"

    assert harn(repo, "reclaim", "r1").code == 0
    files = tree_files(repo, SALVAGE)
    assert files[b"late.txt"] == (PLAIN, b"written while reclaim ran\n")
    assert files[b"src/app.py"] == (PLAIN, b"x = 3\n")
    git(repo, "merge-base", "--is-ancestor", first, SALVAGE)
    assert record(repo, "r1")["state"] == "released" and not wt.exists()
