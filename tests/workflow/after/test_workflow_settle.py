"""Runs that end, and what a dead run left settled (issue 21, defects 2, 3
and 8) [L3] [P1] [P6].

Each test kills the runner's whole process group (git-harn and every git it
runs) at a failpoint, as an out-of-memory kill or a container stop does,
then looks at what is left and runs what an operator would run next.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.kit.harn import all_refs, assert_valid, git, harn, make_repo, record, ref
from tests.kit.runners import at_failpoint
from tests.kit.workflow_repo import WF, setup

ROADMAP = "# R\n\n- [ ] 1.1 First\n- [ ] 1.3 Second\n"


def _records(wf: WF) -> list[str]:
    return sorted(name.rsplit("/", 1)[1] for name in all_refs(wf.work) if name.startswith("refs/harnery/workflows/"))


def _killed_at(wf: WF, point: str, *args: str, env: dict[str, str] | None = None) -> str:
    """Run until ``point``, kill the whole group there; the dead run's workflow id."""
    runner = at_failpoint(wf.work, point, "workflow", "run", *args, env=env)
    runner.kill_group()
    found = _records(wf)
    assert len(found) == 1, found
    return found[0]


def _statuses(wf: WF) -> dict[str, str]:
    status = harn(wf.work, "status", "--all", "--json")
    assert status.code == 0, status.err
    return {w["runId"]: w["state"] for w in status.json()["workspaces"]}


def _old(path: Path) -> None:
    """A lock file left a while ago, as a killed git leaves it."""
    then = time.time() - 60
    os.utime(path, (then, then))


# --- defect 3: a killed run says "running" for ever ---------------------------------


def test_a_killed_run_is_shown_interrupted_and_the_next_run_closes_it(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    dead = _killed_at(wf, "workflow-stage-implement")

    listed = harn(wf.work, "workflow", "list", "--json")
    assert_valid(listed.json(), "workflow-list")
    entry = listed.json()["workflows"][0]
    # Issue 45 item 2: a dashboard reading outcome sees the derived one; the recorded one is kept beside it.
    assert entry["outcome"] == "workflow-interrupted" and entry["runnerState"] == "gone"
    assert entry["recordedOutcome"] == "workflow-running" and entry["recordedSummary"] == "running"
    assert entry["summary"].startswith("interrupted (runner gone)") and f"workflow settle {dead}" in entry["summary"]
    assert "interrupted (runner gone)" in harn(wf.work, "workflow", "list").out
    shown = harn(wf.work, "workflow", "show", dead, "--json").json()
    assert_valid(shown, "workflow-result")
    assert shown["runnerState"] == "gone" and shown["runner"]["pid"] > 0
    assert (shown["outcome"], shown["recordedOutcome"]) == ("workflow-interrupted", "workflow-running")
    assert shown["summary"] == entry["summary"] and shown["recordedSummary"] == "running"
    human = harn(wf.work, "workflow", "show", dead).out
    assert "interrupted (runner gone)" in human
    advised = next(line.removeprefix("next: ") for line in human.splitlines() if line.startswith("next: "))
    assert advised == f"git harn workflow settle {dead}"
    settled = harn(wf.work, *advised.split()[2:], "--json")  # exactly as printed
    assert settled.code == 0, settled.err
    assert_valid(settled.json(), "workflow-settle")
    assert settled.json()["closed"] is True and settled.json()["workspaces"][0]["action"] == "survivor"
    assert "next: " not in harn(wf.work, "workflow", "show", dead).out  # nothing left to do

    rerun = wf.run("--json")
    doc = rerun.json()
    assert_valid(doc, "workflow-result")
    assert doc["settled"] == []  # settled already, by the command
    closed = harn(wf.work, "workflow", "show", dead, "--json").json()
    assert_valid(closed, "workflow-result")
    assert closed["outcome"] == "workflow-interrupted" and closed["interrupted"] is True
    assert closed["closed"]["by"] == "git harn workflow settle" and closed["closed"]["tasksLeft"] == ["1.1"]
    left = closed["tasks"][0]
    assert left["status"] == "halted" and "the runner died during implement" in left["detail"]
    # the closing event is appended, the dead runner's history kept [P3]
    history = git(wf.work, "log", "--format=%s", f"refs/harnery/workflows/{dead}").splitlines()
    assert history[0].startswith("interrupted:") and history[-1].startswith("start:")
    # nothing is running and nothing is active
    listed = harn(wf.work, "workflow", "list", "--json").json()["workflows"]
    assert all(w["outcome"] != "workflow-running" for w in listed)
    assert "active" not in _statuses(wf).values()


def test_a_closed_record_reaches_other_clones_through_sync(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    dead = _killed_at(wf, "workflow-stage-plan")
    assert harn(wf.work, "sync").code == 0
    other = tmp_path / "other-clone"
    git(tmp_path, "clone", "-q", str(wf.remote), str(other))
    assert harn(other, "sync").code == 0
    seen = harn(other, "workflow", "show", dead, "--json").json()
    assert seen["outcome"] == "workflow-interrupted" and seen["runnerState"] == "gone"  # same host: provably dead
    assert seen["recordedOutcome"] == "workflow-running"

    wf.run()  # closes it
    assert harn(wf.work, "sync").code == 0
    assert harn(other, "sync").code == 0
    closed = harn(other, "workflow", "show", dead, "--json").json()
    assert closed["outcome"] == "workflow-interrupted" and closed["runnerState"] is None
    assert closed["recordedOutcome"] == "workflow-interrupted"  # ended: nothing derived
    assert git(other, "rev-parse", f"refs/harnery/workflows/{dead}") == git(
        wf.work, "rev-parse", f"refs/harnery/workflows/{dead}")
    host = git(wf.work, "log", "-1", "--format=%(trailers:key=Harnery-Host,valueonly)",
               f"refs/harnery/workflows/{dead}")
    assert host.strip()


def test_another_hosts_silent_run_is_shown_stale(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    git(wf.work, "config", "harn.host", "build-7")
    dead = _killed_at(wf, "workflow-stage-plan")
    assert harn(wf.work, "sync").code == 0
    other = tmp_path / "other-clone"
    git(tmp_path, "clone", "-q", str(wf.remote), str(other))
    assert harn(other, "sync").code == 0
    time.sleep(1.2)
    listed = harn(other, "workflow", "list", "--stale-after", "1", "--json").json()
    assert listed["workflows"][0]["runnerState"] == "stale"
    assert listed["workflows"][0]["outcome"] == "workflow-running"  # not provably dead: as recorded
    assert "stale (no heartbeat for" in harn(other, "workflow", "list", "--stale-after", "1").out
    fresh = harn(other, "workflow", "list", "--json").json()  # harn.workflowStaleAfter, default 1800 s
    assert fresh["workflows"][0]["runnerState"] == "live"
    refused = harn(other, "workflow", "settle", dead)
    assert refused.code == 3 and "another clone" in refused.err


# --- defect 2: a killed integration leaves workspaces stuck -------------------------------


def test_a_task_that_landed_before_the_kill_is_released_without_salvage(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    dead = _killed_at(wf, "integrate-after-push")
    landed = git(wf.remote, "log", "--format=%H", "-1", "--grep", "Harnery-Task: 1.1", "main")
    assert landed  # the squash is on the remote; the runner died before it said so
    run_id = f"{dead}-1.1"
    assert record(wf.work, run_id)["state"] == "active"
    tip = git(wf.work, "rev-parse", "roadmap-1.1")

    rerun = wf.run("--json")
    assert rerun.code == 0, rerun.err
    doc = rerun.json()
    settled = doc["settled"][0]["workspaces"][0]
    assert settled["landed"] == landed and settled["action"] == "released-landed"
    assert record(wf.work, run_id)["state"] == "released"
    assert not [name for name in all_refs(wf.work) if name.startswith("refs/heads/harnery/salvage/")]  # today: salvaged
    assert ref(wf.work, "refs/harnery/integrated/1.1") == tip  # the agent's commits stay reachable [P1]
    assert ref(wf.work, "refs/heads/roadmap-1.1") is None
    closed = harn(wf.work, "workflow", "show", dead, "--json").json()
    assert closed["tasks"][0]["status"] == "done" and landed[:12] in closed["tasks"][0]["detail"]
    # 1.1 landed once, 1.3 by the rerun; the roadmap has both ticked
    squashes = git(wf.remote, "log", "--format=%(trailers:key=Harnery-Task,valueonly)", "main").split()
    assert sorted(squashes) == ["1.1", "1.3"]
    assert "- [x] 1.1" in wf.remote_file("docs/roadmap.md") and "- [x] 1.3" in wf.remote_file("docs/roadmap.md")
    assert "active" not in _statuses(wf).values()


def test_an_interrupted_builtin_integration_that_pushed_nothing_is_an_ordinary_survivor(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    dead = _killed_at(wf, "integrate-after-commit")
    tip = git(wf.work, "rev-parse", "roadmap-1.1")
    run_id = f"{dead}-1.1"
    workspace = Path(record(wf.work, run_id)["path"])
    assert git(workspace, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"  # detached for the integration

    # git-harn reads the remote itself: nothing landed, so no operator is needed
    rerun = wf.run("--resume-partial-branches", "--resume-mode", "continue", "--json")
    assert rerun.code == 0, rerun.err
    doc = rerun.json()
    settled = doc["settled"][0]["workspaces"][0]
    assert settled["landed"] is None and settled["action"] == "survivor"
    assert settled["state"] == "preserved_unmerged"
    assert doc["tasks"][0]["status"] == "done" and doc["tasks"][0]["runId"] == run_id
    assert git(wf.remote, "log", "--format=%(trailers:key=Harnery-Task,valueonly)", "main").split() == ["1.1"]
    assert git(wf.work, "merge-base", "--is-ancestor", tip, "refs/harnery/integrated/1.1", check=False) == ""


def test_a_workspace_whose_branch_is_gone_is_cleaned_up_as_its_dry_run_says(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    dead = _killed_at(wf, "integrate-after-commit")
    run_id = f"{dead}-1.1"
    workspace = Path(record(wf.work, run_id)["path"])
    tip = git(wf.work, "rev-parse", "roadmap-1.1")
    git(wf.work, "branch", "-D", "roadmap-1.1")  # gone while the worktree is detached at its tip

    dry = harn(wf.work, "cleanup", run_id, "--json")
    assert dry.code == 0, dry.err
    real = harn(wf.work, "cleanup", run_id, "--yes", "--json")  # today: exit 3, "cannot freeze the intent"
    assert real.code == 3, real.err
    assert real.json()["state"] == dry.json()["wouldBe"] == "preserved_unmerged"
    assert git(workspace, "rev-parse", "HEAD") == tip  # the work stays where it was [P1]
    assert record(wf.work, run_id)["frozenIntent"]["oid"] == tip


def test_reclaim_never_leaves_a_branch_it_recreated(tmp_path: Path) -> None:
    # A workspace on a branch git-harn did not make (as a resumed survivor's is), whose
    # branch is deleted while its worktree is detached, as a killed integration leaves it.
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    git(repo, "branch", "roadmap-9.14")
    started = harn(repo, "start", "r1", "--branch", "roadmap-9.14", "--json")
    assert started.code == 0, started.err
    workspace = Path(started.json()["path"])
    (workspace / "work.txt").write_text("the agent's work\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "work")
    git(workspace, "switch", "-q", "--detach")
    git(repo, "branch", "-D", "roadmap-9.14")

    done = harn(repo, "reclaim", "r1", "--json")
    assert done.code == 0, done.err
    assert ref(repo, "refs/heads/roadmap-9.14") is None, done.out  # today: "kept: git-harn did not create it"
    salvage = done.json()["salvage"]
    assert "work.txt" in git(repo, "ls-tree", "-r", "--name-only", salvage["oid"])  # the work is kept [P1]


# --- defect 8: locks a killed run leaves jam later runs ------------------------------------


def test_a_packed_refs_lock_a_dead_run_left_is_removed_and_the_rerun_lands(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n  Requires: 1.1\n")
    _killed_at(wf, "integrate-after-push")
    lock = Path(git(wf.work, "rev-parse", "--path-format=absolute", "--git-common-dir")) / "packed-refs.lock"
    lock.write_text("")  # what a git killed mid-delete leaves
    _old(lock)

    rerun = wf.run("--json")
    assert rerun.code == 0, rerun.err  # today: 1.2 "failed at integrate: cannot delete … packed-refs.lock"
    assert f"removed {lock}" in rerun.err
    assert not lock.exists()
    doc = rerun.json()
    assert [(t["taskId"], t["status"]) for t in doc["tasks"]] == [("1.2", "done")]
    assert ref(wf.work, "refs/heads/roadmap-1.2") is None and ref(wf.work, "refs/heads/integrate-1-2") is None
    assert "active" not in _statuses(wf).values()  # and status --all --json exits 0


def test_a_lock_the_kill_left_a_moment_before_the_rerun_is_waited_out_and_removed(tmp_path: Path) -> None:
    """A rerun started right after the kill finds the lock still fresh: it
    waits until the lock is old enough to be no live git's, then removes it
    (it used to be left in place and the rerun ended with exit 3)."""
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n  Requires: 1.1\n")
    _killed_at(wf, "integrate-after-push")
    common = Path(git(wf.work, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    lock = common / "refs" / "harnery" / "notes.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")  # a notes write of the dead run, killed a moment ago

    rerun = wf.run("--json")
    assert rerun.code == 0, rerun.err
    assert f"removed {lock}" in rerun.err and not lock.exists()
    assert [(t["taskId"], t["status"]) for t in rerun.json()["tasks"]] == [("1.2", "done")]


def test_discard_clears_the_index_lock_a_dead_runs_agent_left(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    dead = _killed_at(wf, "workflow-stage-gates")
    run_id = f"{dead}-1.1"
    workspace = Path(record(wf.work, run_id)["path"])
    admin = Path(git(workspace, "rev-parse", "--absolute-git-dir"))
    (admin / "index.lock").write_text("")  # an agent's git commit, killed
    _old(admin / "index.lock")
    (workspace / "notes.txt").write_text("written by the agent, not committed\n")

    done = harn(wf.work, "workflow", "discard", "1.1", "--yes", "--json")
    assert done.code == 0, done.err  # today: 3, "no dead run of git-harn left it"
    assert not (admin / "index.lock").exists()
    salvage = done.json()["workspaces"][0]["salvage"]
    assert "notes.txt" in git(wf.work, "show", "--name-only", "--format=", salvage["oid"])


def test_a_ref_clean_up_that_fails_after_the_push_leaves_the_task_landed(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    # A lock file a git killed mid-delete left, fresh (so no one may take it for a dead run's):
    # git can create and move refs beside it, but delete none.
    lock = Path(git(wf.work, "rev-parse", "--path-format=absolute", "--git-common-dir")) / "packed-refs.lock"
    lock.write_text("")

    result = wf.run("--json")
    doc = result.json()
    task = doc["tasks"][0]
    assert task["status"] == "done", task["detail"]  # today: failed at integrate, "cannot delete …"
    assert git(wf.remote, "log", "--format=%(trailers:key=Harnery-Task,valueonly)", "main").split() == ["1.1"]
    assert "the clean-up of integrate-1-1 failed" in result.err  # the leftover ref is reported
    assert "integrate-1-1" in task["integration"]["summary"]
    assert "active" not in _statuses(wf).values()  # the workspace was released; only its branch is left
    assert ref(wf.work, "refs/heads/integrate-1-1") and ref(wf.work, "refs/heads/roadmap-1.1")

    lock.unlink()  # the operator's git (or time) clears it; the next run settles what was left
    again = wf.run()
    assert again.code == 0, again.err
    assert ref(wf.work, "refs/heads/integrate-1-1") is None and ref(wf.work, "refs/heads/roadmap-1.1") is None
    assert "deleted integrate-1-1, left when task 1.1 landed" in again.err
    assert ref(wf.work, "refs/harnery/integrated/1.1")  # the agent's commits stay reachable [P1]
