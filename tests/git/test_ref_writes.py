"""Ref writes are compare-and-swap whoever writes them [P3]: libgit2 in a
repository of a few refs, git update-ref once packed-refs is big (libgit2
reads and scans all of it for every write; issue 25)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from git_harn.errors import GitFailure, RaceLost
from git_harn.git import open_repo
from git_harn.git.repo import BIG_PACKED_REFS
from tests.kit.harn import git, harn, make_repo, record, ref


def pad(repo: Path, count: int) -> None:
    """``count`` packed refs under refs/harnery/pad/, as a year of records makes."""
    head = git(repo, "rev-parse", "HEAD")
    lines = "".join(f"create refs/harnery/pad/r{i:06d} {head}\n" for i in range(count))
    subprocess.run(["git", "update-ref", "--stdin"], cwd=repo, input=lines, text=True, check=True)
    git(repo, "pack-refs", "--all")


@pytest.fixture(params=["few refs", "big packed-refs"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo")
    git(path, "commit", "-q", "--allow-empty", "-m", "second")
    git(path, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    if request.param == "big packed-refs":
        pad(path, 5000)
        assert (path / ".git" / "packed-refs").stat().st_size > BIG_PACKED_REFS
    return path


def update_refs_run(trace: Path) -> int:
    """The `git update-ref -m` runs GIT_TRACE saw."""
    lines = trace.read_text().splitlines() if trace.exists() else []
    return sum("built-in: git" in line and "update-ref -m" in line for line in lines)


def test_create_and_move_are_compare_and_swap(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    handle = open_repo(repo)
    first, second = handle.resolve_commit("HEAD~1"), handle.resolve_commit("HEAD")
    handle.create_ref("refs/harnery/runs/a", first, "git-harn: test")
    assert ref(repo, "refs/harnery/runs/a") == str(first)
    with pytest.raises(RaceLost, match="created by someone else"):
        handle.create_ref("refs/harnery/runs/a", second, "git-harn: test")
    handle.move_ref("refs/harnery/runs/a", second, first, "git-harn: test")
    assert ref(repo, "refs/harnery/runs/a") == str(second)
    with pytest.raises(RaceLost, match="moved since it was read"):
        handle.move_ref("refs/harnery/runs/a", first, first, "git-harn: test")
    with pytest.raises(RaceLost, match="moved since it was read"):
        handle.move_ref("refs/harnery/runs/absent", first, second, "git-harn: test")
    assert ref(repo, "refs/harnery/runs/absent") is None
    with pytest.raises(GitFailure):  # a folder of refs is in the way
        handle.create_ref("refs/harnery/runs/a/b", first, "git-harn: test")
    assert ref(repo, "refs/harnery/runs/a") == str(second)
    packed = repo / ".git" / "packed-refs"
    big = packed.exists() and packed.stat().st_size > BIG_PACKED_REFS
    assert (update_refs_run(trace) > 0) == big


def test_a_branch_moved_by_git_harn_keeps_its_reflog(repo: Path) -> None:
    handle = open_repo(repo)
    first, second = handle.resolve_commit("HEAD~1"), handle.resolve_commit("HEAD")
    git(repo, "branch", "topic", str(first))
    handle.move_ref("refs/heads/topic", second, first, "git-harn: salvage of run x")
    assert git(repo, "reflog", "-1", "--format=%gs", "topic") == "git-harn: salvage of run x"


def test_start_and_cleanup_in_either_repository(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    path = Path(record(repo, "r1")["path"])
    result = harn(repo, "cleanup", "r1", "--yes")
    assert result.code == 0, result.err
    assert record(repo, "r1")["state"] == "released"
    assert not path.exists() and ref(repo, "refs/heads/harnery/ws/r1") is None
    assert git(repo, "log", "--format=%s", "refs/harnery/runs/r1").splitlines()[0].startswith("released")


def test_a_ref_packed_and_loose_is_deleted_whole(repo: Path) -> None:
    """A loose ref over a packed copy (packed by a gc, moved since): git
    deletes both, so the packed value cannot come back."""
    handle = open_repo(repo)
    first, second = handle.resolve_commit("HEAD~1"), handle.resolve_commit("HEAD")
    git(repo, "branch", "work", str(first))
    git(repo, "pack-refs", "--all")
    git(repo, "update-ref", "refs/heads/work", str(second))
    handle.delete_ref("refs/heads/work", second)
    assert ref(repo, "refs/heads/work") is None
    assert "refs/heads/work" not in (repo / ".git" / "packed-refs").read_text()


def test_no_delete_while_another_git_holds_packed_refs(repo: Path) -> None:
    """A deletion waits for packed-refs.lock, as git's does, and fails when
    it stays: the ref is left as it was."""
    handle = open_repo(repo)
    tip = handle.resolve_commit("HEAD")
    git(repo, "branch", "work", str(tip))
    git(repo, "config", "core.packedRefsTimeout", "0")
    lock = repo / ".git" / "packed-refs.lock"
    lock.write_text("")
    with pytest.raises(RaceLost, match="packed-refs.lock"):
        open_repo(repo).delete_ref("refs/heads/work", tip)
    assert ref(repo, "refs/heads/work") == str(tip)
    lock.unlink()
    open_repo(repo).delete_ref("refs/heads/work", tip)
    assert ref(repo, "refs/heads/work") is None
