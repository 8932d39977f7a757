"""Cleanup [W3]: every transition with its exit code, the dry run, the frozen
intent [W8], preserved_unmerged [P1] and already_gone [W7]."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.kit.harn import all_refs, assert_valid, git, harn, make_repo, record, ref


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def start(repo: Path, run_id: str = "r1") -> Path:
    result = harn(repo, "start", run_id)
    assert result.code == 0, result.err
    return Path(record(repo, run_id)["path"])


def cleanup(repo: Path, run_id: str = "r1", *extra: str) -> tuple[int, dict]:
    result = harn(repo, "cleanup", run_id, "--json", *extra)
    document = result.json()
    assert_valid(document, "cleanup-result")
    return result.code, document


def test_clean_merged_workspace_is_released(repo: Path) -> None:
    path = start(repo)
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"], doc["state"]) == (0, "released", "released")
    assert not path.exists()
    assert ref(repo, "refs/heads/harnery/ws/r1") is None
    assert record(repo, "r1")["state"] == "released"
    assert str(path) not in git(repo, "worktree", "list")


def test_dirty_workspace_is_preserved_and_attempts_count(repo: Path) -> None:
    path = start(repo)
    (path / "src" / "app.py").write_text("x = 2\n")
    (path / "new file.txt").write_text("agent work\n")
    for attempt in (1, 2):
        code, doc = cleanup(repo, "r1", "--yes")
        assert (code, doc["outcome"], doc["attempts"]) == (3, "preserved_dirty", attempt)
        assert "2 dirty path(s)" in doc["reason"] and "new file.txt" in doc["reason"]
    assert (path / "new file.txt").read_text() == "agent work\n"
    assert record(repo, "r1")["state"] == "preserved_dirty"
    # Once the work is committed and merged elsewhere the workspace can go;
    # the counter stops when the state is terminal.
    (path / "new file.txt").unlink()
    git(path, "checkout", "--", "src/app.py")
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"], doc["attempts"]) == (0, "released", 2)
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"], doc["attempts"]) == (0, "released", 2)


def test_staged_and_deleted_files_count_as_dirty(repo: Path) -> None:
    path = start(repo)
    (path / "README.md").unlink()
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"]) == (3, "preserved_dirty")
    git(path, "checkout", "--", "README.md")
    (path / "staged.txt").write_text("s\n")
    git(path, "add", "staged.txt")
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"]) == (3, "preserved_dirty")
    assert git(path, "show", ":staged.txt") == "s"


def test_ignored_files_do_not_preserve(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore logs")
    path = start(repo)
    (path / "debug.log").write_text("noise\n")
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"]) == (0, "released")


def test_dry_run_changes_nothing(repo: Path) -> None:
    path = start(repo)
    (path / "wip.txt").write_text("wip\n")
    before_refs = all_refs(repo)
    before_files = sorted(p.name for p in path.iterdir())
    code, doc = cleanup(repo, "r1")
    assert (code, doc["outcome"], doc["wouldBe"]) == (0, "dry-run", "preserved_dirty")
    assert all_refs(repo) == before_refs
    assert sorted(p.name for p in path.iterdir()) == before_files
    assert record(repo, "r1")["frozenIntent"] is None
    human = harn(repo, "cleanup", "r1")
    assert human.code == 0 and "would end preserved_dirty" in human.out
    assert all_refs(repo) == before_refs


def test_frozen_intent_blocks_a_moved_branch(repo: Path) -> None:
    path = start(repo)
    (path / "wip.txt").write_text("wip\n")
    code, _ = cleanup(repo, "r1", "--yes")
    assert code == 3
    frozen = record(repo, "r1")["frozenIntent"]["oid"]
    git(path, "add", "wip.txt")
    git(path, "commit", "-q", "-m", "agent commit")
    moved = ref(repo, "refs/heads/harnery/ws/r1")
    before = all_refs(repo)
    result = harn(repo, "cleanup", "r1", "--yes")
    assert result.code == 3
    expected = (f"cleanup blocked: workspace ref changed from the frozen intent "
                f"(frozen {frozen}, now {moved})")
    assert expected in result.out
    assert all_refs(repo) == before  # nothing changed, not even the record
    assert path.is_dir()


def test_unmerged_commit_is_preserved_until_reachable(repo: Path) -> None:
    path = start(repo)
    (path / "feature.txt").write_text("feature\n")
    git(path, "add", "feature.txt")
    git(path, "commit", "-q", "-m", "feature")
    tip = ref(repo, "refs/heads/harnery/ws/r1")
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"], doc["state"]) == (3, "preserved_unmerged", "preserved_unmerged")
    assert ref(repo, "refs/heads/harnery/ws/r1") == tip
    assert path.is_dir()
    git(repo, "merge", "-q", "--ff-only", "harnery/ws/r1")
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"]) == (0, "released")
    assert ref(repo, "refs/heads/main") == tip


def test_vanished_folder_is_already_gone(repo: Path) -> None:
    path = start(repo)
    shutil.rmtree(path)
    status = harn(repo, "status", "--all", "--json")
    assert status.code == 0
    assert_valid(status.json(), "status")
    assert status.json()["workspaces"][0]["state"] == "already_gone"
    assert ref(repo, "refs/heads/harnery/ws/r1") is None
    assert "r1" not in git(repo, "worktree", "list")
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"], doc["attempts"]) == (0, "already_gone", 0)


def test_vanished_folder_with_unique_commits_keeps_the_branch(repo: Path) -> None:
    path = start(repo)
    (path / "only-copy.txt").write_text("x\n")
    git(path, "add", "only-copy.txt")
    git(path, "commit", "-q", "-m", "only copy")
    tip = ref(repo, "refs/heads/harnery/ws/r1")
    shutil.rmtree(path)
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"]) == (0, "already_gone")
    assert "kept" in doc["reason"]
    assert ref(repo, "refs/heads/harnery/ws/r1") == tip


def test_workspace_of_another_host_is_remote_not_gone(repo: Path) -> None:
    path = start(repo)
    shutil.rmtree(path)
    git(repo, "config", "harn.host", "another-machine")  # this machine now has another name
    status = harn(repo, "status", "--json")
    workspace = status.json()["workspaces"][0]
    assert (workspace["state"], workspace["location"]) == ("active", "remote")
    result = harn(repo, "cleanup", "r1", "--yes")
    # names the host and the command to run there, flags and all (issue 45)
    assert result.code == 3 and "run 'git harn cleanup r1 --yes' there" in result.err, result.err
    assert record(repo, "r1")["state"] == "active"


def test_interrupted_release_finishes_as_released(repo: Path) -> None:
    path = start(repo)
    killed = harn(repo, "cleanup", "r1", "--yes", env={"HARN_FAILPOINT": "cleanup-after-remove"})
    assert killed.code == 137  # git reports its child killed by SIGKILL
    assert not path.exists()
    code, doc = cleanup(repo, "r1", "--yes")
    assert (code, doc["outcome"]) == (0, "released")
    assert ref(repo, "refs/heads/harnery/ws/r1") is None
