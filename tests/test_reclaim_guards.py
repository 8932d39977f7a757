"""Reclaim and cleanup where work hides: edits after a crash, commits landing
mid-reclaim, names git cannot store, flagged files, submodules, and a
branch deleted by hand [P1] [P3] [P6]."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import git, harn, make_repo, record, ref
from salvage_helpers import started, tree_files

from git_harn import reclaim, store
from git_harn.errors import Refused
from git_harn.git import open_repo

SALVAGE = "refs/heads/harnery/salvage/r1"
WS = "refs/heads/harnery/ws/r1"


def test_edits_made_after_a_crash_are_salvaged_not_wiped(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "README.md").write_text("one\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3
    killed = harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-salvage-record"})
    assert killed.code == 137
    (wt / "new.txt").write_text("IMPORTANT\n")
    (wt / "README.md").write_text("one\ntwo\n")
    assert harn(repo, "reclaim", "r1").code == 0
    files = tree_files(repo, SALVAGE)
    assert files[b"new.txt"][1] == b"IMPORTANT\n" and files[b"README.md"][1] == b"one\ntwo\n"
    assert record(repo, "r1")["state"] == "released"


def test_restore_refuses_to_move_the_branch_over_a_commit_the_salvage_lacks(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "README.md").write_text("work\n")
    killed = harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-salvage-record"})
    assert killed.code == 137
    git(wt, "commit", "-q", "--allow-empty", "-m", "late")  # lands after the salvage was taken
    late = git(wt, "rev-parse", "HEAD")
    handle = open_repo(repo)
    stored = store.read(handle, "r1")
    assert stored is not None
    with pytest.raises(Refused, match="landed in the workspace"):
        reclaim._restore(handle, stored.record)
    assert ref(repo, WS) == late
    # The ordinary rerun sees the new commit and salvages it too.
    assert harn(repo, "reclaim", "r1").code == 0
    git(repo, "merge-base", "--is-ancestor", late, SALVAGE)


def test_a_name_git_cannot_store_is_refused_before_anything_changes(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "d").mkdir()
    (wt / "d" / ".git").write_text("not a repository\n")
    (wt / "d" / "w.txt").write_text("w\n")
    result = harn(repo, "reclaim", "r1")
    assert result.code == 3 and "d/.git" in result.err
    assert (wt / "d" / ".git").read_text() == "not a repository\n"
    assert ref(repo, SALVAGE) is None
    (wt / "d" / ".git").rename(tmp_path / "moved-aside")
    assert harn(repo, "reclaim", "r1").code == 0
    assert tree_files(repo, SALVAGE)[b"d/w.txt"][1] == b"w\n"


def test_changes_to_skip_worktree_files_are_work(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    git(wt, "update-index", "--skip-worktree", "README.md")
    (wt / "README.md").write_text("PRECIOUS\n")
    cleaned = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert cleaned.code == 3 and cleaned.json()["outcome"] == "preserved_dirty"
    assert harn(repo, "reclaim", "r1").code == 0
    assert tree_files(repo, SALVAGE)[b"README.md"][1] == b"PRECIOUS\n"


def test_a_workspace_with_submodules_is_preserved_not_an_error(tmp_path: Path) -> None:
    sub = make_repo(tmp_path / "sub", {"s.txt": "s\n"})
    repo = make_repo(tmp_path / "repo")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    git(repo, "commit", "-q", "-m", "add submodule")
    assert harn(repo, "start", "r1").code == 0
    wt = Path(record(repo, "r1")["path"])
    git(wt, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
    result = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert result.code == 3 and "submodules" in result.json()["reason"]
    assert (wt / "sub" / "s.txt").exists()


def test_reclaim_recreates_a_workspace_branch_deleted_by_hand(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    base = ref(repo, WS)
    (wt / "new.txt").write_text("w\n")
    git(repo, "update-ref", "-d", WS)
    result = harn(repo, "reclaim", "r1")
    assert result.code == 0, result.err
    assert tree_files(repo, SALVAGE)[b"new.txt"][1] == b"w\n"
    git(repo, "merge-base", "--is-ancestor", str(base), SALVAGE)
    assert record(repo, "r1")["state"] == "released"


def test_hook_refuses_to_delete_the_branch_of_a_dirty_live_workspace(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    assert harn(repo, "hooks", "install").code == 0
    (wt / "new.txt").write_text("w\n")
    done = git(repo, "update-ref", "-d", WS, check=False)
    assert ref(repo, WS) is not None, done
    assert (wt / "new.txt").exists()


def test_status_is_quiet_about_python_path(tmp_path: Path) -> None:
    # guard against a stray debug print on the hot path
    repo, _ = started(tmp_path)
    result = harn(repo, "status")
    assert result.code == 0 and sys.executable not in result.out
