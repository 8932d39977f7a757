"""Where work hides: detached HEADs [P1], interrupted removal [P6],
symlinked paths, inherited GIT_DIR, bad input that must change nothing [P7]."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.kit.harn import all_refs, git, harn, make_repo, record, ref


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def start(repo: Path, run_id: str = "r1", *extra: str) -> Path:
    result = harn(repo, "start", run_id, *extra)
    assert result.code == 0, result.err
    return Path(record(repo, run_id)["path"])


def detached_commit(path: Path) -> str:
    git(path, "checkout", "-q", "--detach")
    (path / "detached.txt").write_text("only here\n")
    git(path, "add", "detached.txt")
    git(path, "commit", "-q", "-m", "on a detached HEAD")
    return git(path, "rev-parse", "HEAD")


def test_commit_on_a_detached_head_preserves_the_workspace(repo: Path) -> None:
    path = start(repo)
    commit = detached_commit(path)
    result = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert result.code == 3 and result.json()["outcome"] == "preserved_unmerged"
    assert "detached HEAD" in result.json()["reason"]
    assert git(path, "rev-parse", "HEAD") == commit


def test_vanished_worktree_keeps_its_detached_head_on_a_ref(repo: Path) -> None:
    path = start(repo)
    commit = detached_commit(path)
    shutil.rmtree(path)
    assert harn(repo, "status", "--all").code == 0
    assert record(repo, "r1")["state"] == "already_gone"
    assert ref(repo, "refs/harnery/detached/r1") == commit
    assert git(repo, "cat-file", "-p", f"{commit}:detached.txt") == "only here"


def test_release_killed_inside_worktree_remove_is_finished(repo: Path) -> None:
    path = start(repo)
    killed = harn(repo, "cleanup", "r1", "--yes", env={"HARN_FAILPOINT": "cleanup-before-remove"})
    assert killed.code == 137 and record(repo, "r1")["releasing"] is not None
    # What a kill part-way through `git worktree remove` leaves behind.
    (path / "README.md").unlink()
    (path / ".git").unlink()
    result = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert result.code == 0, result.err
    assert result.json()["outcome"] == "released"
    assert not path.exists() and ref(repo, "refs/heads/harnery/ws/r1") is None


def test_path_through_a_symlink_is_pruned_when_it_vanishes(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    path = start(repo, "r1", "--path", str(tmp_path / "link" / "ws"))
    assert path == (tmp_path / "real" / "ws").resolve()
    shutil.rmtree(path)
    result = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert result.json()["outcome"] == "already_gone"
    assert "ws" not in git(repo, "worktree", "list", "--porcelain").replace(str(repo), "")
    assert harn(repo, "start", "r1", "--path", str(tmp_path / "link" / "ws")).code == 0


@pytest.mark.parametrize("args", [
    ["start", "r1", "--path", "/dev/null/x"],
    ["start", "r1", "--base", "no-such-rev"],
    ["start", "r1", "--branch", "bad..name"],
    ["cleanup", "nope", "--yes"],
    ["log", "nope"],
    ["status", "nope"],
])
def test_bad_input_changes_nothing_in_refs_or_the_git_dir(repo: Path, args: list[str]) -> None:
    def snapshot() -> tuple[dict[str, str], list[str]]:
        files = sorted(str(p.relative_to(repo)) for p in (repo / ".git").rglob("*")
                       if "objects" not in p.parts and p.name != "index")
        return all_refs(repo), files

    before = snapshot()
    result = harn(repo, *args)
    assert result.code == 2, result.err
    assert result.err.startswith("git harn: error: ") and result.err.count("\n") == 1
    assert snapshot() == before


def test_vanished_run_is_not_settled_by_a_start_with_bad_input(repo: Path) -> None:
    path = start(repo)
    shutil.rmtree(path)
    assert harn(repo, "start", "r1", "--base", "no-such-rev").code == 2
    assert record(repo, "r1")["state"] == "active"


def test_inherited_git_dir_does_not_hide_dirty_work(repo: Path) -> None:
    path = start(repo)
    (path / "work.txt").write_text("w\n")
    env = {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}
    status = harn(repo, "status", "--json", env=env)
    assert status.json()["workspaces"][0]["dirtyCount"] == 1
    assert harn(repo, "cleanup", "r1", "--yes", env=env).code == 3
    assert (path / "work.txt").read_text() == "w\n"


def test_git_failure_shows_gits_error_not_its_progress(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "elsewhere"), "-b", "taken")
    result = harn(repo, "start", "r1", "--branch", "taken")
    assert result.code == 2 and "checked out" in result.err


def test_command_killed_by_a_signal_reports_128_plus_the_signal(repo: Path) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    result = harn(repo, "run", "r1", "--", sys.executable, "-c", code)
    assert result.code == 128 + 15
    assert record(repo, "r1")["exitCode"] == 143


def test_record_copied_under_another_run_id_is_refused(repo: Path) -> None:
    start(repo)
    git(repo, "update-ref", "refs/harnery/runs/copy", "refs/harnery/runs/r1")
    before = ref(repo, "refs/harnery/runs/r1")
    result = harn(repo, "cleanup", "copy", "--yes")
    assert result.code == 1 and "names another run" in result.err
    assert ref(repo, "refs/harnery/runs/r1") == before


def test_unknown_run_makes_no_lock_folder(repo: Path) -> None:
    assert harn(repo, "cleanup", "ghost", "--yes").code == 2
    assert not os.path.exists(repo / ".git" / "harnery")


def test_a_worktree_moved_by_hand_is_followed_not_dropped(repo: Path, tmp_path: Path) -> None:
    path = start(repo)
    (path / "work.txt").write_text("w\n")
    moved = tmp_path / "moved"
    git(repo, "worktree", "move", str(path), str(moved))
    status = harn(repo, "status", "--json").json()["workspaces"]
    assert [(w["runId"], w["state"], w["path"], w["dirtyCount"]) for w in status] == [
        ("r1", "active", str(moved), 1)]
    result = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert result.code == 3 and result.json()["outcome"] == "preserved_dirty"
    assert ref(repo, "refs/heads/harnery/ws/r1") is not None
    assert (moved / "work.txt").read_text() == "w\n"
    assert harn(repo, "reclaim", "r1").code == 0
    assert not moved.exists()
    assert git(repo, "show", "harnery/salvage/r1:work.txt") == "w"


def test_a_malformed_harn_host_is_bad_input(repo: Path) -> None:
    git(repo, "config", "harn.host", "a/b c")
    result = harn(repo, "start", "r1")
    assert result.code == 2 and "harn.host" in result.err
    assert ref(repo, "refs/harnery/runs/r1") is None


def test_a_path_that_is_a_file_is_named_as_such(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = harn(repo, "start", "r1", "--path", str(tmp_path / "file"))
    assert result.code == 2 and "not a folder" in result.err
