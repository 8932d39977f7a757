"""Which refs hold work, and how often git-harn asks git for them [P1]
(issue 25 item 2): cleanup, reclaim and start read refs/heads, refs/tags,
refs/remotes (salvage branches among refs/heads), a stash and git-harn's
pins of work, once per command, and never git-harn's bookkeeping refs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.kit.harn import git, harn, make_repo, record, ref

WORK_REF_PREFIXES = ["refs/heads", "refs/tags", "refs/remotes", "refs/stash", "refs/harnery/detached",
                     "refs/harnery/integrated", "refs/harnery/tamper", "refs/harnery/proposed"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo")
    git(path, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    return path


def start(repo: Path, run_id: str) -> Path:
    assert harn(repo, "start", run_id).code == 0
    return Path(record(repo, run_id)["path"])


def commit_in(path: Path, name: str) -> str:
    (path / name).write_text(f"{name}\n")
    git(path, "add", name)
    git(path, "commit", "-q", "-m", f"add {name}")
    return git(path, "rev-parse", "HEAD")


def ref_listings(repo: Path, trace: Path, *args: str) -> list[list[str]]:
    """The `git for-each-ref` runs of one git-harn command (from GIT_TRACE),
    each as its list of patterns."""
    result = harn(repo, *args, env={"GIT_TRACE": str(trace)})
    assert result.code in (0, 3), result.err
    runs = []
    for line in trace.read_text().splitlines():
        if "trace: built-in: git for-each-ref" in line:
            words = line.split("for-each-ref", 1)[1].split()
            runs.append([w for w in words if w.startswith("refs/")])
    trace.unlink()
    return runs


def test_cleanup_asks_git_for_the_work_refs_once(repo: Path, tmp_path: Path) -> None:
    start(repo, "r1")
    # and, once the run ended, the live index once and the record refs once, the first of them by
    # name with --count: whether to archive, and which (docs/archive.md)
    assert ref_listings(repo, tmp_path / "trace", "cleanup", "r1", "--yes") == [
        WORK_REF_PREFIXES, ["refs/harnery/live/"], ["refs/harnery/runs/"]]
    assert record(repo, "r1")["state"] == "released"
    assert ref(repo, "refs/heads/harnery/ws/r1") is None


def test_reclaim_of_a_preserved_workspace_asks_once(repo: Path, tmp_path: Path) -> None:
    path = start(repo, "r1")
    (path / "work.txt").write_text("unfinished\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3
    assert ref_listings(repo, tmp_path / "trace", "reclaim", "r1") == [WORK_REF_PREFIXES]
    assert record(repo, "r1")["state"] == "released"
    assert git(repo, "show", "harnery/salvage/r1:work.txt") == "unfinished"


def test_start_over_a_vanished_workspace_asks_once(repo: Path, tmp_path: Path) -> None:
    shutil.rmtree(start(repo, "r1"))
    git(repo, "worktree", "prune")
    assert ref_listings(repo, tmp_path / "trace", "start", "r1") == [WORK_REF_PREFIXES]
    assert record(repo, "r1")["state"] == "active"
    assert ref_listings(repo, tmp_path / "trace", "start", "r2") == []  # nothing to judge


@pytest.mark.parametrize("holder", ["refs/harnery-push/t0/runs/x", "refs/harnery/workflows/w1",
                                    "refs/harnery/claims/task-1", "refs/harnery-remotes/origin/runs/x",
                                    "refs/harnery/live/x", "refs/harnery/live-index/v1"])
def test_a_commit_only_bookkeeping_reaches_is_work_to_keep(repo: Path, holder: str) -> None:
    path = start(repo, "r1")
    tip = commit_in(path, "work.txt")
    git(repo, "update-ref", holder, tip)
    result = harn(repo, "cleanup", "r1", "--yes")
    assert result.code == 3, result.err
    assert record(repo, "r1")["state"] == "preserved_unmerged"
    assert ref(repo, "refs/heads/harnery/ws/r1") == tip


@pytest.mark.parametrize("holder", ["refs/heads/keep", "refs/tags/v1", "refs/remotes/origin/keep",
                                    "refs/harnery/detached/other", "refs/harnery/integrated/task-1",
                                    "refs/heads/harnery/salvage/other"])
def test_a_commit_a_work_ref_reaches_lets_the_branch_go(repo: Path, holder: str) -> None:
    path = start(repo, "r1")
    tip = commit_in(path, "work.txt")
    git(repo, "update-ref", holder, tip)
    result = harn(repo, "cleanup", "r1", "--yes")
    assert result.code == 0, result.err
    assert record(repo, "r1")["state"] == "released"
    assert ref(repo, "refs/heads/harnery/ws/r1") is None
    assert ref(repo, holder) == tip


def test_an_annotated_tag_and_a_tag_of_a_tag_hold_work(repo: Path) -> None:
    path = start(repo, "r1")
    tagged = commit_in(path, "tagged.txt")
    git(repo, "tag", "-a", "-m", "release", "v2", tagged)
    git(repo, "tag", "-a", "-m", "of the release", "v2-signed-off", "v2")
    git(repo, "tag", "-d", "v2")  # only the tag of a tag holds it now
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    assert ref(repo, "refs/heads/harnery/ws/r1") is None


def test_a_stash_holds_the_commits_under_it(repo: Path) -> None:
    path = start(repo, "r1")
    under = commit_in(path, "committed.txt")
    (path / "committed.txt").write_text("changed, then stashed\n")
    git(path, "stash", "-q")
    assert git(repo, "rev-parse", "refs/stash^") == under
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    assert ref(repo, "refs/heads/harnery/ws/r1") is None
    assert git(repo, "show", "refs/stash:committed.txt") == "changed, then stashed"
