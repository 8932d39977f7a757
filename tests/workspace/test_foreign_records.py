"""A record belongs to the clone that made its workspace [N3] [P1]:
records name their clone, another clone's are shown as foreign and never
acted on, and records written before records named their clone act as
before on their own clone."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.kit.git_crashes import TwoClones, share_records, start_in, two_clones
from tests.kit.harn import all_refs, assert_valid, git, harn, make_repo, record
from tests.kit.hook_repo import git_run, install_hooks
from tests.kit.salvage_trees import worktree_files


def drop_clone_field(repo: Path, run_id: str) -> None:
    """Rewrite the run's record as a git-harn from before records named their clone wrote it."""
    data = record(repo, run_id)
    del data["clone"]
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=json.dumps(data),
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=repo, input=f"100644 blob {blob}\trun.json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    name = f"refs/harnery/runs/{run_id}"
    old = git(repo, "rev-parse", name)
    new = git(repo, "commit-tree", tree, "-p", old, "-m", f"legacy: as written before\n\nHarnery-Run: {run_id}")
    git(repo, "update-ref", name, new, old)


def rows(repo: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    result = harn(repo, "status", "--json")
    assert result.code == 0, result.err
    assert_valid(result.json(), "status")
    return {row["runId"]: row for row in result.json()["workspaces"]}


def preserved_in_a(tmp_path: Path) -> tuple[TwoClones, Path]:
    clones = two_clones(tmp_path)
    wt = start_in(clones.a, "x")
    (wt / "README.md").write_text("A's work\n")
    assert harn(clones.a, "cleanup", "x", "--yes").code == 3
    return clones, wt


def test_records_name_the_clone_that_made_them(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    start_in(repo, "x")
    start_in(repo, "y")
    made = git(repo, "config", "--local", "harn.cloneId")  # made on first use, kept in the clone's config
    for run_id in ("x", "y"):
        rec = record(repo, run_id)
        assert_valid(rec, "run-record")
        assert rec["clone"] == {"id": made, "commonDir": str(repo / ".git")}
    assert rows(repo)["x"]["location"] == "here"


def test_a_clone_id_in_the_global_config_is_not_this_clone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    own_global = tmp_path / "gitconfig"
    own_global.write_text("[harn]\n\tcloneId = shared-by-every-clone\n")
    assert harn(repo, "start", "x", env={"GIT_CONFIG_GLOBAL": str(own_global)}).code == 0
    assert record(repo, "x")["clone"]["id"] not in ("", "shared-by-every-clone")


def test_a_foreign_workspace_is_listed_with_where_it_lives(tmp_path: Path) -> None:
    clones, wt = preserved_in_a(tmp_path)
    share_records(clones)
    row = rows(clones.b)["x"]
    # A is on this host where the record says: reclaim from B acts through it (issue 45)
    assert (row["location"], row["state"]) == ("foreign", "preserved_dirty")
    assert row["next"] == ["git harn reclaim x", "git harn reclaim x --discard --yes"]
    assert str(clones.a) in row["reason"] and str(wt) in row["reason"]
    shown = harn(clones.b, "status")
    assert shown.code == 0 and "foreign:" in shown.out and str(clones.a) in shown.out
    assert rows(clones.a)["x"]["location"] == "here"  # A's own view is unchanged


def test_starting_or_running_over_a_foreign_run_is_refused(tmp_path: Path) -> None:
    clones, wt = preserved_in_a(tmp_path)
    share_records(clones)
    work, refs = worktree_files(wt), all_refs(clones.b)
    for args in (["start", "x"], ["run", "x", "--", "true"]):
        refused = harn(clones.b, *args)
        assert refused.code == 3, (args, refused.out, refused.err)
        assert refused.err.count("\n") == 1 and str(clones.a) in refused.err, refused.err
    assert worktree_files(wt) == work and all_refs(clones.b) == refs
    dry = harn(clones.b, "cleanup", "x")  # through A, whose workspace it is (issue 45)
    assert dry.code == 0 and str(clones.a) in dry.err, dry.err
    assert worktree_files(wt) == work and all_refs(clones.b) == refs


def test_a_foreign_workspace_whose_folder_vanished_is_not_settled_here(tmp_path: Path) -> None:
    clones, wt = preserved_in_a(tmp_path)
    share_records(clones)
    git(clones.a, "worktree", "remove", "--force", str(wt))  # A's operator, by hand
    install_hooks(clones.b)
    refs = all_refs(clones.b)
    git(clones.b, "worktree", "add", "-q", str(tmp_path / "b-side"), "-b", "side")  # the hooks reconcile
    assert rows(clones.b)["x"]["location"] == "foreign"
    # Settled through A, whose workspace it is (issue 45); B's copy of the record waits for a sync.
    assert harn(clones.b, "cleanup", "x", "--yes").code == 0
    assert record(clones.a, "x")["state"] == "already_gone"
    assert all_refs(clones.b)["refs/harnery/runs/x"] == refs["refs/harnery/runs/x"]


def test_an_old_record_acts_as_before_on_its_own_clone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    start_in(repo, "x")
    drop_clone_field(repo, "x")
    assert rows(repo)["x"]["location"] == "here"
    released = harn(repo, "cleanup", "x", "--yes")
    assert released.code == 0 and record(repo, "x")["state"] == "released", released.err


def test_an_old_record_fetched_from_another_clone_is_foreign_by_its_registration(tmp_path: Path) -> None:
    clones, wt = preserved_in_a(tmp_path)
    drop_clone_field(clones.a, "x")
    share_records(clones)
    assert rows(clones.b)["x"]["location"] == "foreign"  # its folder is A's linked worktree
    work, refs = worktree_files(wt), all_refs(clones.b)
    refused = harn(clones.b, "reclaim", "x", "--discard", "--yes")
    assert refused.code == 3 and str(clones.a) in refused.err, refused.err
    assert worktree_files(wt) == work and all_refs(clones.b) == refs
    assert rows(clones.a)["x"]["location"] == "here"


def test_the_branch_guard_does_not_send_to_a_reclaim_that_would_refuse(tmp_path: Path) -> None:
    clones, _ = preserved_in_a(tmp_path)
    git(clones.a, "push", "-q", "origin", "harnery/ws/x")
    share_records(clones)
    git(clones.b, "fetch", "-q", "origin", "harnery/ws/x:harnery/ws/x")  # merged: its tip is main's
    install_hooks(clones.b)
    deleted = git_run(clones.b, "branch", "-D", "harnery/ws/x")  # B's own copy; A's work is in A
    assert deleted.returncode == 0, deleted.stderr
    assert rows(clones.b)["x"]["location"] == "foreign"
