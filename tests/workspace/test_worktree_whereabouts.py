"""Where a workspace is, and whose its branch is: a locked worktree that is
away, a preserved one moved by hand, the operator's own branch, and the kept
branch of a workspace that ended [P1] [W3] [W5] [W7] [H1]."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.kit.git_crashes import admin_of, start_in
from tests.kit.harn import all_refs, assert_valid, git, harn, make_repo, record, ref
from tests.kit.hook_repo import commit_in, install_hooks
from tests.kit.salvage_trees import started, tree_files


def ws(run_id: str) -> str:
    return f"refs/heads/harnery/ws/{run_id}"


def row(repo: Path, run_id: str) -> dict:  # type: ignore[type-arg]
    result = harn(repo, "status", "--json")
    assert result.code == 0, result.err
    assert_valid(result.json(), "status")
    found = [r for r in result.json()["workspaces"] if r["runId"] == run_id]
    assert len(found) == 1, result.json()
    return found[0]  # type: ignore[no-any-return]


def away(tmp_path: Path, wt: Path) -> Path:
    parked = tmp_path / "parked"
    wt.rename(parked)
    return parked


# --- a locked worktree whose folder is away ------------------------------------


def test_an_unavailable_workspace_is_shown_and_nothing_acts_on_it(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    git(repo, "worktree", "lock", "--reason", "on a removable disk", str(wt))
    away(tmp_path, wt)
    install_hooks(repo)
    refs = all_refs(repo)
    git(repo, "worktree", "add", "-q", str(tmp_path / "other"), "-b", "other")  # post-checkout reconciles
    seen = row(repo, "x")
    assert (seen["location"], seen["state"], seen["next"]) == ("unavailable", "active", [])
    assert "on a removable disk" in seen["reason"] and "git worktree unlock" in seen["reason"]
    shown = harn(repo, "status")
    assert "unavailable:" in shown.out and "locked" in shown.out
    for args in (["cleanup", "x", "--yes"], ["reclaim", "x", "--discard", "--yes"], ["run", "x", "--", "true"],
                 ["start", "x"]):
        refused = harn(repo, *args)
        assert refused.code == 3 and "locked" in refused.err and refused.err.count("\n") == 1, (args, refused.err)
    assert {k: v for k, v in all_refs(repo).items() if k != "refs/heads/other"} == refs
    assert record(repo, "x")["state"] == "active"


# --- a preserved workspace moved by hand ------------------------------------------


def preserved_and_moved(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo, wt = started(tmp_path, "x")
    (wt / "README.md").write_text("uncommitted work\n")
    assert harn(repo, "cleanup", "x", "--yes").code == 3
    admin = admin_of(wt)
    away(tmp_path, wt)
    return repo, wt, admin


def test_a_missing_workspace_is_left_alone_until_the_operator_asks(tmp_path: Path) -> None:
    repo, wt, admin = preserved_and_moved(tmp_path)
    install_hooks(repo)
    git(repo, "worktree", "add", "-q", str(tmp_path / "other"), "-b", "other")  # post-checkout reconciles
    seen = row(repo, "x")
    assert (seen["location"], seen["state"]) == ("missing", "preserved_dirty")
    assert seen["next"] == ["git worktree repair <new path>", "git harn cleanup x --yes"]
    refused = harn(repo, "run", "x", "--", "true")
    assert refused.code == 3 and "git worktree repair" in refused.err, refused.err
    dry = harn(repo, "cleanup", "x", "--json")  # a dry run says what --yes would do, and does nothing
    assert dry.code == 0 and dry.json()["wouldBe"] == "already_gone" and "repair" in dry.json()["reason"]
    assert admin.is_dir() and record(repo, "x")["state"] == "preserved_dirty"

    asked = harn(repo, "cleanup", "x", "--yes")  # the operator says it is gone for good
    assert asked.code == 0 and record(repo, "x")["state"] == "already_gone", asked.err
    assert not admin.exists()


def test_a_moved_workspace_without_preserved_changes_is_settled_as_before(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    away(tmp_path, wt)
    assert harn(repo, "status").code == 0
    assert record(repo, "x")["state"] == "already_gone" and ref(repo, ws("x")) is None


# --- the operator's own branch ------------------------------------------------------


def operator_repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository with the operator's branch ``mine``, one commit unique to it."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    git(repo, "switch", "-q", "-c", "mine")
    tip = commit_in(repo, "mine.txt", "the operator's own commit\n")
    git(repo, "switch", "-q", "main")
    return repo, tip


def test_records_say_whether_git_harn_created_the_branch(tmp_path: Path) -> None:
    repo, _ = operator_repo(tmp_path)
    start_in(repo, "x")
    start_in(repo, "y", "--branch", "mine")
    start_in(repo, "z", "--branch", "new-one")
    assert [record(repo, r)["branchCreated"] for r in ("x", "y", "z")] == [True, False, True]
    for run_id in ("x", "y", "z"):
        assert_valid(record(repo, run_id), "run-record")


def test_a_branch_kept_by_an_earlier_workspace_of_the_run_stays_git_harns(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    commit_in(wt, "work.txt", "work\n")
    shutil.rmtree(wt)
    assert harn(repo, "status").code == 0 and ref(repo, ws("x")) is not None  # already_gone, branch kept
    start_in(repo, "x", "--branch", "harnery/ws/x")  # carry on where it stopped
    assert record(repo, "x")["branchCreated"] is True


def test_a_clean_workspace_on_the_operators_branch_is_released_and_the_branch_stays(tmp_path: Path) -> None:
    repo, tip = operator_repo(tmp_path)
    start_in(repo, "y", "--branch", "mine")
    released = harn(repo, "cleanup", "y", "--yes", "--json")
    assert released.code == 0, released.err  # its commits stay on mine: nothing is lost
    assert released.json()["state"] == "released" and "did not create" in released.json()["reason"]
    assert ref(repo, "refs/heads/mine") == tip and ref(repo, "refs/heads/harnery/salvage/y") is None


def test_a_vanished_workspace_on_the_operators_branch_keeps_the_branch(tmp_path: Path) -> None:
    repo, tip = operator_repo(tmp_path)
    git(repo, "branch", "merged", "main")
    shutil.rmtree(start_in(repo, "y", "--branch", "merged"))
    assert harn(repo, "status").code == 0
    assert record(repo, "y")["state"] == "already_gone"
    assert ref(repo, "refs/heads/merged") == ref(repo, "refs/heads/main")


def test_reclaim_never_moves_the_operators_branch_back(tmp_path: Path) -> None:
    repo, tip = operator_repo(tmp_path)
    wt = start_in(repo, "y", "--branch", "mine")
    (wt / "dirt.txt").write_text("uncommitted\n")
    assert harn(repo, "cleanup", "y", "--yes").code == 3  # freezes the intent at tip
    newer = commit_in(wt, "more.txt", "a commit after the freeze\n")
    refs = all_refs(repo)
    refused = harn(repo, "reclaim", "y")
    assert refused.code == 3 and "did not create" in refused.err, refused.err
    assert all_refs(repo) == refs and ref(repo, "refs/heads/mine") == newer
    assert (wt / "dirt.txt").read_text() == "uncommitted\n"


# --- the kept branch of a workspace that ended ------------------------------------


def test_reclaim_of_an_ended_workspace_lets_a_merged_kept_branch_go(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    tip = commit_in(wt, "work.txt", "work\n")
    shutil.rmtree(wt)
    assert harn(repo, "status").code == 0 and ref(repo, ws("x")) == tip  # kept: only it holds the commit
    git(repo, "branch", "merged-elsewhere", tip)
    reclaimed = harn(repo, "reclaim", "x", "--json")
    assert reclaimed.code == 0 and reclaimed.json()["outcome"] == "already_gone", reclaimed.err
    assert ref(repo, ws("x")) is None and ref(repo, "refs/heads/harnery/salvage/x") is None
    assert harn(repo, "reclaim", "x").code == 0  # again: nothing left to do


def test_reclaim_of_an_ended_workspace_salvages_its_kept_branch_once(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    install_hooks(repo)
    tip = commit_in(wt, "work.txt", "the only copy\n")
    shutil.rmtree(wt)
    assert harn(repo, "status").code == 0
    reclaimed = harn(repo, "reclaim", "x")
    assert reclaimed.code == 0 and "harnery/salvage/x" in reclaimed.out, reclaimed.err
    assert ref(repo, "refs/heads/harnery/salvage/x") == tip  # no new commit for commits alone
    assert ref(repo, ws("x")) is None and record(repo, "x")["state"] == "already_gone"
    assert record(repo, "x")["salvage"]["oid"] == tip
    assert tree_files(repo, "refs/heads/harnery/salvage/x")[b"work.txt"][1] == b"the only copy\n"
    refs = all_refs(repo)
    assert harn(repo, "reclaim", "x").code == 0 and all_refs(repo) == refs
