"""Worktrees as users handle them (issue 10, defects 4, 5, 6, 8 and 9): a
locked worktree on a disk that is away, a preserved workspace moved with
plain ``mv``, the operator's own branch named with ``--branch``, commands
run from inside the workspace, and the branch guard's way out [P1] [P6]."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.kit.git_crashes import admin_of, start_in
from tests.kit.harn import assert_valid, git, harn, make_repo, record, ref
from tests.kit.hook_repo import commit_in, git_run, install_hooks
from tests.kit.salvage_trees import started, tree_files

TERMINAL = ("released", "already_gone")


def ws(run_id: str) -> str:
    return f"refs/heads/harnery/ws/{run_id}"


def salvage(run_id: str) -> str:
    return f"refs/heads/harnery/salvage/{run_id}"


def status_rows(repo: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    result = harn(repo, "status", "--json")
    assert result.code == 0, result.err
    document = result.json()
    assert_valid(document, "status")
    return {row["runId"]: row for row in document["workspaces"]}


def said(row: dict) -> str:  # type: ignore[type-arg]
    """What a status row tells the operator, besides names and paths."""
    return json.dumps([row.get(k) for k in ("location", "reason", "error", "next")]).lower()


# --- 10.4 ----------------------------------------------------------------------


def test_a_locked_worktree_whose_folder_is_away_is_unavailable_not_gone(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    git(repo, "worktree", "lock", "--reason", "on a removable disk", str(wt))
    admin, tip = admin_of(wt), ref(repo, ws("x"))
    wt.rename(tmp_path / "disk-unmounted")  # the disk is away for a while

    rows = status_rows(repo)
    assert "x" in rows, rows  # today: settled already_gone, so not listed
    assert rows["x"]["state"] not in TERMINAL and "lock" in said(rows["x"]), rows["x"]
    harn(repo, "cleanup", "x", "--yes")
    harn(repo, "reclaim", "x")
    assert record(repo, "x")["state"] not in TERMINAL
    assert ref(repo, ws("x")) == tip  # today: deleted while the lock still has it checked out
    assert (admin / "locked").exists()

    (tmp_path / "disk-unmounted").rename(wt)  # the disk is back
    assert git(wt, "symbolic-ref", "HEAD") == ws("x") and git(wt, "rev-parse", "HEAD") == tip
    assert status_rows(repo)["x"]["location"] == "here"


# --- 10.5 ----------------------------------------------------------------------


def test_a_preserved_workspace_moved_by_hand_stays_repairable(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    (wt / "README.md").write_text("uncommitted work\n")
    assert harn(repo, "cleanup", "x", "--yes").code == 3
    admin, tip = admin_of(wt), ref(repo, ws("x"))
    moved = tmp_path / "moved-by-hand"
    wt.rename(moved)

    rows = status_rows(repo)
    assert "x" in rows, rows  # today: settled already_gone, so not listed
    assert rows["x"]["state"] == "preserved_dirty"
    assert "git worktree repair" in said(rows["x"]), rows["x"]
    assert admin.is_dir() and ref(repo, ws("x")) == tip  # registration and branch kept

    assert git_run(repo, "worktree", "repair", str(moved)).returncode == 0
    assert harn(repo, "reclaim", "x").code == 0
    assert tree_files(repo, salvage("x"))[b"README.md"][1] == b"uncommitted work\n"


# --- 10.6 ----------------------------------------------------------------------


def test_a_branch_git_harn_did_not_create_is_never_deleted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    git(repo, "branch", "feature", "main")  # merged: reachable from main
    git(repo, "config", "branch.feature.description", "the operator's feature")
    feature = ref(repo, "refs/heads/feature")
    git(repo, "switch", "-q", "-c", "mine")
    mine = commit_in(repo, "mine.txt", "the operator's own commit\n")  # unique to mine
    git(repo, "switch", "-q", "main")

    start_in(repo, "x", "--branch", "feature")
    released = harn(repo, "cleanup", "x", "--yes")
    assert released.code == 0 and record(repo, "x")["state"] == "released", released.err
    assert ref(repo, "refs/heads/feature") == feature  # today: deleted, its config left behind

    wt = start_in(repo, "y", "--branch", "mine")
    (wt / "dirt.txt").write_text("uncommitted\n")
    assert harn(repo, "reclaim", "y").code == 0
    assert tree_files(repo, salvage("y"))[b"dirt.txt"][1] == b"uncommitted\n"
    assert ref(repo, "refs/heads/mine") == mine  # today: its commit moved to the salvage, the name deleted


# --- 10.8 ----------------------------------------------------------------------


def assert_done_or_untouched(repo: Path, run_id: str, result_code: int, out: str, wt: Path,
                             state_before: str) -> None:
    """Either the job is finished and said (released), or it was refused up
    front and nothing changed: never a half state."""
    rec = record(repo, run_id)
    if result_code == 0:
        assert rec["state"] == "released" and "released" in out, (rec["state"], out)
        assert not wt.exists() and ref(repo, ws(run_id)) is None
        assert str(wt) not in git(repo, "worktree", "list")
    else:
        assert rec["state"] == state_before and wt.is_dir() and ref(repo, ws(run_id)) is not None


def test_cleanup_and_reclaim_from_inside_the_workspace_leave_no_half_state(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    cleaned = harn(wt, "cleanup", "x", "--yes")  # today: 1, "cannot run git: [Errno 2] …"
    assert_done_or_untouched(repo, "x", cleaned.code, cleaned.out, wt, "active")

    inside = start_in(repo, "y")
    (inside / "src" / "app.py").write_text("the agent's work\n")
    reclaimed = harn(inside / "src", "reclaim", "y")
    assert_done_or_untouched(repo, "y", reclaimed.code, reclaimed.out, inside, "active")
    if reclaimed.code == 0:
        assert tree_files(repo, salvage("y"))[b"src/app.py"][1] == b"the agent's work\n"
    else:
        assert (inside / "src" / "app.py").read_text() == "the agent's work\n"
        assert ref(repo, salvage("y")) is None


# --- 10.9 ----------------------------------------------------------------------


def test_the_branch_guard_way_out_works_for_a_kept_branch_of_a_gone_workspace(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    install_hooks(repo)
    tip = commit_in(wt, "work.txt", "the only copy\n")
    shutil.rmtree(wt)
    assert harn(repo, "status").code == 0  # settles it: already_gone, branch kept
    assert record(repo, "x")["state"] == "already_gone" and ref(repo, ws("x")) == tip

    refused = git_run(repo, "branch", "-D", "harnery/ws/x")
    assert refused.returncode != 0 and "git harn reclaim x" in refused.stderr  # the guard's way out

    reclaimed = harn(repo, "reclaim", "x")
    assert reclaimed.code == 0, reclaimed.err
    kept = ref(repo, salvage("x"))
    assert kept is not None, reclaimed.out  # today: "nothing to reclaim", no salvage
    git(repo, "merge-base", "--is-ancestor", tip, kept)
    assert tree_files(repo, salvage("x"))[b"work.txt"][1] == b"the only copy\n"
    # The way out led somewhere: the branch may go now (or reclaim took it already).
    if ref(repo, ws("x")) is not None:
        deleted = git_run(repo, "branch", "-D", "harnery/ws/x")
        assert deleted.returncode == 0, deleted.stderr
