"""`git harn sync` among three clones of a bare remote: records and notes
converge, diverged chains merge the same way everywhere, nothing is lost."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from git_harn.git import open_repo
from git_harn.sync.summary import SUMMARY_REF
from git_harn.workflow.ledger import record as workflow_record
from tests.kit.harn import assert_valid, git, harn, record
from tests.kit.sync_world import (
    World,
    actions,
    add_note,
    add_record,
    chain,
    change_record,
    harnery_refs,
    make_world,
    read_note,
    sync,
)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def test_new_records_in_each_clone_converge_in_one_round_each(world: World) -> None:
    for clone, run_id in zip(world.clones, ("ra", "rb", "rc"), strict=True):
        add_record(clone, run_id)
    for clone, run_id in zip(world.clones, ("ra", "rb", "rc"), strict=True):
        done = sync(clone)
        assert done["rounds"] == 1 and done["outcome"] == "synced"
        mine = f"refs/harnery/runs/{run_id}"
        assert actions(done)[mine] == "ahead" and mine in {e["ref"] for e in done["refs"] if e["pushed"]}
    for clone in world.clones[:2]:
        assert sync(clone)["rounds"] == 1
    expected = harnery_refs(world.remote)
    assert set(expected) == {f"refs/harnery/runs/{r}" for r in ("ra", "rb", "rc")}
    for clone in world.clones:
        assert harnery_refs(clone) == expected
        # The runs, and the summary read or pushed (the next one is its child).
        assert all(ref.startswith("refs/harnery-remotes/origin/runs/")
                   or ref == "refs/harnery-remotes/origin/" + SUMMARY_REF.removeprefix("refs/harnery/")
                   for ref in git(clone, "for-each-ref", "--format=%(refname)",
                                  "refs/harnery-remotes/").split())


def test_record_changed_on_two_clones_merges_alike_and_owner_fields_win(world: World,
                                                                        tmp_path: Path) -> None:
    started = harn(world.a, "start", "r1", "--json")
    assert started.code == 0, started.err
    sync(world.a)
    sync(world.b)
    second = tmp_path / "second.git"
    git(tmp_path, "clone", "-q", "--bare", str(world.remote), str(second))
    for clone in (world.a, world.b):
        git(clone, "remote", "add", "second", str(second))
    # The owner (alpha) releases its workspace; beta writes its own view of the run.
    assert harn(world.a, "cleanup", "r1", "--yes").code == 0
    beta_event = change_record(world.b, "r1", "review", state="preserved_dirty",
                               reason="beta thinks it is dirty", reviewedBy="beta")
    alpha_chain, beta_chain = chain(world.a, "refs/harnery/runs/r1"), chain(world.b, "refs/harnery/runs/r1")
    assert sync(world.a)["pushedCount"] == 1  # origin: alpha's side
    assert sync(world.b, "second")["pushedCount"] == 1  # second: beta's side
    on_alpha = sync(world.a, "second")  # alpha merges beta's side ...
    on_beta = sync(world.b)  # ... and beta merges alpha's, each on its own
    assert actions(on_alpha)["refs/harnery/runs/r1"] == "merged"
    assert actions(on_beta)["refs/harnery/runs/r1"] == "merged"
    merged = git(world.a, "rev-parse", "refs/harnery/runs/r1")
    assert git(world.b, "rev-parse", "refs/harnery/runs/r1") == merged
    parents = git(world.a, "rev-list", "--parents", "-n", "1", merged).split()[1:]
    assert parents == sorted(parents) and len(parents) == 2
    assert alpha_chain | beta_chain <= chain(world.a, merged)  # no event lost
    result = record(world.a, "r1")
    assert result["state"] == "released" and result["host"] == "alpha"  # the owner's fields
    assert result["reviewedBy"] == "beta"  # a field only beta changed is kept
    assert result["diverged"]["decidedBy"] == "owner" and "state" in result["diverged"]["fields"]
    assert result["diverged"]["hosts"] == ["alpha", "beta"]
    assert_valid(result, "run-record")
    log = harn(world.b, "log", "r1", "--json").json()
    assert beta_event in {e["commit"] for e in log["events"]}
    assert {"review", "released", "merged"} <= {e["event"] for e in log["events"]}
    assert log["diverged"]["winner"] in parents
    assert "diverged" in harn(world.b, "log", "r1").out
    status = harn(world.c, "status", "--all", "--json")
    assert status.code == 0
    sync(world.c)
    shown = harn(world.c, "status", "--all", "--json").json()
    assert_valid(shown, "status")
    assert shown["workspaces"][0]["diverged"]["decidedBy"] == "owner"
    assert "diverged: written on alpha, beta" in harn(world.c, "status", "--all").out


def test_note_members_added_on_two_clones_are_both_kept(world: World) -> None:
    head = git(world.a, "rev-parse", "HEAD")
    add_note(world.a, head, "gates", {"passed": True})
    add_note(world.b, head, "assessment", {"classification": "adopt-complete"})
    sync(world.a)
    assert actions(sync(world.b))["refs/harnery/notes"] == "merged"
    assert actions(sync(world.a))["refs/harnery/notes"] == "fast-forward"
    for clone in (world.a, world.b):
        assert read_note(clone, head) == {"gates": {"passed": True},
                                          "assessment": {"classification": "adopt-complete"}}
    assert "refs/harnery/notes" in git(world.b, "config", "--get-all", "notes.displayRef")


def test_note_member_changed_on_two_clones_follows_the_later_side(world: World) -> None:
    head = git(world.a, "rev-parse", "HEAD")
    add_note(world.a, head, "gates", {"v": 0})
    sync(world.a)
    sync(world.b)
    add_note(world.a, head, "gates", {"v": "alpha"})
    add_note(world.b, head, "gates", {"v": "beta"})
    tips = {clone: git(clone, "log", "-1", "--format=%ct %H", "refs/harnery/notes") for clone in (world.a, world.b)}
    later = max(tips, key=lambda clone: (int(tips[clone].split()[0]), tips[clone].split()[1]))
    winner = "alpha" if later == world.a else "beta"
    loser_tip = tips[world.b if later == world.a else world.a].split()[1]
    sync(world.a)
    sync(world.b)
    sync(world.a)
    for clone in (world.a, world.b):
        assert read_note(clone, head)["gates"] == {"v": winner}
    # The other value stays in the notes history, a parent of the merge.
    assert git(world.a, "merge-base", "--is-ancestor", loser_tip, "refs/harnery/notes") == ""
    loser_value = json.loads(git(world.a, "show", f"{loser_tip}:{head}"))
    assert loser_value["gates"]["v"] != winner


def test_note_on_a_commit_this_clone_lacks_is_kept(world: World) -> None:
    git(world.a, "switch", "-q", "-c", "local-only")
    (world.a / "only.txt").write_text("alpha only\n")
    git(world.a, "add", "only.txt")
    git(world.a, "commit", "-q", "-m", "never pushed")
    private = git(world.a, "rev-parse", "HEAD")
    add_note(world.a, private, "gates", {"passed": False})
    sync(world.a)
    sync(world.b)
    assert subprocess_fails(world.b, "cat-file", "-e", private)
    head = git(world.b, "rev-parse", "HEAD")
    add_note(world.b, head, "gates", {"passed": True})
    sync(world.b)
    sync(world.a)
    for clone in (world.a, world.b):
        assert read_note(clone, private) == {"gates": {"passed": False}}
        assert read_note(clone, head) == {"gates": {"passed": True}}


def subprocess_fails(repo: Path, *args: str) -> bool:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False).returncode != 0


def test_quiescence_after_every_clone_synced_twice(world: World) -> None:
    head = git(world.a, "rev-parse", "HEAD")
    add_record(world.a, "shared")
    sync(world.a)
    for index, clone in enumerate(world.clones):
        add_record(clone, f"own-{index}")
        add_note(clone, head, f"kind{index}", index)
        if index:
            sync(clone)
            change_record(clone, "shared", "touch", **{f"seenBy{index}": True})
    change_record(world.a, "shared", "touch", state="preserved_dirty")
    for _ in range(2):
        for clone in world.clones:
            sync(clone)
    expected = harnery_refs(world.remote)
    for clone in world.clones:
        assert harnery_refs(clone) == expected
    objects = {clone: git(clone, "count-objects") for clone in world.clones}
    for clone in world.clones:
        again = sync(clone)
        assert set(again["counts"]) == {"same"} and again["pushedCount"] == 0
        assert harnery_refs(clone) == expected
    assert harnery_refs(world.remote) == expected
    assert {clone: git(clone, "count-objects") for clone in world.clones} == objects
    shared = record(world.c, "shared")
    assert shared["state"] == "preserved_dirty" and shared["seenBy1"] and shared["seenBy2"]
    assert read_note(world.c, head) == {"kind0": 0, "kind1": 1, "kind2": 2}


def test_plain_fetch_prune_with_the_configured_refspec_deletes_no_record(world: World) -> None:
    configured = sync(world.a, "--configure")
    assert configured["outcome"] == "configured"
    spec = "+refs/harnery/*:refs/harnery-remotes/origin/*"
    assert spec in git(world.a, "config", "--get-all", "remote.origin.fetch").split("\n")
    assert git(world.a, "config", "--get-all", "remote.origin.push", check=False) == ""
    assert sync(world.a, "--configure")["refspec"] == spec
    assert git(world.a, "config", "--get-all", "remote.origin.fetch").split("\n").count(spec) == 1
    add_record(world.b, "theirs")
    sync(world.b)
    sync(world.a)
    add_record(world.a, "mine")
    git(world.a, "fetch", "-q", "origin")  # a plain fetch updates the tracking refs
    assert git(world.a, "rev-parse", "refs/harnery-remotes/origin/runs/theirs")
    before = harnery_refs(world.a)
    git(world.remote, "update-ref", "-d", "refs/harnery/runs/theirs")  # a third party deletes it
    git(world.a, "fetch", "-q", "--prune", "origin")
    assert harnery_refs(world.a) == before and "refs/harnery/runs/mine" in before
    assert git(world.a, "for-each-ref", "refs/harnery-remotes/origin/runs/theirs") == ""
    done = sync(world.a)  # and sync puts back what the remote lost
    assert {"refs/harnery/runs/theirs", "refs/harnery/runs/mine"} <= {
        e["ref"] for e in done["refs"] if e["pushed"]}
    assert git(world.remote, "rev-parse", "refs/harnery/runs/theirs") == before["refs/harnery/runs/theirs"]


def test_gc_prune_now_keeps_every_event(world: World) -> None:
    add_record(world.a, "r1")
    sync(world.a)
    sync(world.b)
    change_record(world.a, "r1", "alpha-side", attempts=2)
    change_record(world.b, "r1", "beta-side", reviewedBy="beta")
    head = git(world.a, "rev-parse", "HEAD")
    add_note(world.a, head, "gates", {"v": "a"})
    add_note(world.b, head, "gates", {"v": "b"})
    events = chain(world.a, "refs/harnery/runs/r1") | chain(world.b, "refs/harnery/runs/r1")
    notes = chain(world.a, "refs/harnery/notes") | chain(world.b, "refs/harnery/notes")
    sync(world.a)
    sync(world.b)
    sync(world.a)
    for repo in (world.a, world.b, world.remote):
        git(repo, "reflog", "expire", "--expire=now", "--all")
        git(repo, "gc", "-q", "--prune=now")
        for oid in events | notes:
            assert not subprocess_fails(repo, "cat-file", "-e", oid), (repo, oid)
    assert events <= chain(world.a, "refs/harnery/runs/r1")
    assert record(world.a, "r1")["attempts"] == 2 and record(world.a, "r1")["reviewedBy"] == "beta"


def test_shallow_clone_is_refused(world: World, tmp_path: Path) -> None:
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{world.remote}", str(shallow))
    result = harn(shallow, "sync")
    assert result.code == 2 and "shallow" in result.err
    assert harnery_refs(world.remote) == {}


def test_unknown_remote_is_bad_input(world: World) -> None:
    result = harn(world.a, "sync", "nowhere")
    assert result.code == 2 and "nowhere" in result.err


def test_another_hosts_workspace_is_refused_and_seen_released_after_its_sync(world: World) -> None:
    assert harn(world.a, "start", "r1").code == 0
    sync(world.a)
    sync(world.b)
    shown = harn(world.b, "status", "--json").json()["workspaces"]
    assert [(w["runId"], w["location"], w["host"]) for w in shown] == [("r1", "remote", "alpha")]
    assert "remote (alpha)" in harn(world.b, "status").out
    for verb in (["reclaim", "r1", "--yes"], ["cleanup", "r1", "--yes"]):
        refused = harn(world.b, *verb)
        assert refused.code == 3 and "alpha" in refused.err, refused.err
    assert record(world.b, "r1")["state"] == "active"
    assert harn(world.a, "cleanup", "r1", "--yes").code == 0
    sync(world.a)
    for clone in (world.b, world.c):
        sync(clone)
        assert record(clone, "r1")["state"] == "released"
        assert harn(clone, "status", "--all", "--json").json()["workspaces"][0]["state"] == "released"


def test_dry_run_fetches_and_tells_but_changes_no_record(world: World) -> None:
    add_record(world.a, "mine")
    add_record(world.b, "theirs")
    sync(world.b)
    before = harnery_refs(world.a)
    done = sync(world.a, "--dry-run")
    assert done["outcome"] == "dry-run" and done["pushedCount"] == 0
    assert actions(done) == {"refs/harnery/runs/mine": "ahead", "refs/harnery/runs/theirs": "new"}
    assert harnery_refs(world.a) == before
    assert "refs/harnery/runs/mine" not in harnery_refs(world.remote)


def test_salvage_branches_are_shared_fast_forward_only(world: World) -> None:
    git(world.a, "branch", "harnery/salvage/r1")
    git(world.b, "branch", "harnery/salvage/r2")
    assert "refs/heads/harnery/salvage/r1" not in actions(sync(world.a))
    assert actions(sync(world.a, "--salvage"))["refs/heads/harnery/salvage/r1"] == "ahead"
    (world.b / "b.txt").write_text("beta\n")
    git(world.b, "add", "b.txt")
    git(world.b, "commit", "-q", "-m", "beta work")
    git(world.b, "branch", "-f", "harnery/salvage/r2")
    done = sync(world.b, "--salvage")
    assert actions(done)["refs/heads/harnery/salvage/r1"] == "new"
    assert git(world.b, "rev-parse", "refs/remotes/origin/harnery/salvage/r1")
    git(world.a, "commit", "-q", "--allow-empty", "-m", "alpha work")
    git(world.a, "branch", "-f", "harnery/salvage/r2", "HEAD")  # diverges from beta's r2
    sync(world.a, "--salvage", expect=3)
    assert git(world.a, "rev-parse", "harnery/salvage/r2") == git(world.a, "rev-parse", "HEAD")
    assert git(world.remote, "rev-parse", "refs/heads/harnery/salvage/r2") == \
        git(world.b, "rev-parse", "harnery/salvage/r2")


def _workflow_commit(repo: Path, content: dict[str, object], parent: str | None, event: str = "event") -> str:
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=json.dumps(content),
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=repo, input=f"100644 blob {blob}\tworkflow.json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    message = f"{event}: written by a test\n\nHarnery-Workflow: w1\nHarnery-Event: {event}\n"
    return git(repo, "commit-tree", tree, "-m", message, *(["-p", parent] if parent else []))


def test_workflow_chains_sync_like_run_records(world: World) -> None:
    ref = "refs/harnery/workflows/w1"
    root = _workflow_commit(world.a, {"workflowId": "w1", "host": "alpha", "stage": "plan"}, None)
    git(world.a, "update-ref", ref, root)
    sync(world.a)
    sync(world.b)
    assert git(world.b, "rev-parse", ref) == root
    git(world.a, "update-ref", ref, _workflow_commit(
        world.a, {"workflowId": "w1", "host": "alpha", "stage": "review"}, root, "review"), root)
    git(world.b, "update-ref", ref, _workflow_commit(
        world.b, {"workflowId": "w1", "host": "alpha", "stage": "plan", "seen": "beta"}, root, "seen"), root)
    sync(world.a)
    assert actions(sync(world.b))[ref] == "merged"
    merged = json.loads(git(world.b, "show", f"{ref}:workflow.json"))
    assert merged["stage"] == "review" and merged["seen"] == "beta"
    # The record's history shows both sides of the merge, and what came before.
    events = [e["event"] for e in workflow_record.events(open_repo(world.b), "w1")]
    assert events[0] == "merged" and sorted(events[1:]) == ["event", "review", "seen"]


def _event(repo: Path, content: dict[str, object], parent: str, host: str) -> str:
    """A workflow record event as git-harn writes it: its host in a trailer."""
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=json.dumps(content),
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=repo, input=f"100644 blob {blob}\tworkflow.json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    return git(repo, "commit-tree", tree, "-p", parent, "-m", f"event\n\nHarnery-Host: {host}",
               env={"GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z"})


def test_a_closed_workflow_record_merges_with_its_runners_host_as_owner(world: World) -> None:
    """Issue 21: a workflow record's owner is its runner's host; the side where
    the owner closed it wins the fields both sides changed."""
    ref = "refs/harnery/workflows/w2"
    running = {"workflowId": "w2", "runner": {"host": "alpha", "pid": 1}, "outcome": "workflow-running"}
    root = _workflow_commit(world.a, running, None)
    git(world.a, "update-ref", ref, root)
    sync(world.a)
    sync(world.b)
    closed = _event(world.a, {**running, "outcome": "workflow-interrupted", "closed": {"by": "wf-next"}}, root,
                    "alpha")
    # beta's side wins by the later-update rule (no updatedAt: the greater commit id) unless the owner counts
    for n in range(50):
        other = _event(world.b, {**running, "outcome": "workflow-done", "seen": n}, root, "beta")
        if other > closed:
            break
    git(world.a, "update-ref", ref, closed, root)
    git(world.b, "update-ref", ref, other, root)
    sync(world.a)
    assert actions(sync(world.b))[ref] == "merged"
    merged = json.loads(git(world.b, "show", f"{ref}:workflow.json"))
    assert merged["outcome"] == "workflow-interrupted"  # today: beta's, decided by the later commit id
    assert merged["diverged"]["owner"] == "alpha" and merged["diverged"]["decidedBy"] == "owner"
    assert merged["closed"] == {"by": "wf-next"} and merged["seen"] == n  # both histories kept [P1]


def test_sync_remote_comes_from_config(world: World) -> None:
    git(world.a, "config", "harn.syncRemote", "elsewhere")
    result = harn(world.a, "sync")
    assert result.code == 2 and "elsewhere" in result.err
