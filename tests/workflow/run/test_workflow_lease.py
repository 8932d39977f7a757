"""One live runner per clone, remote and base (issue 21, defect 1) [L2].

A second ``workflow run`` for the same remote and base in a clone is refused
(exit 3) naming the live one, and creates nothing; a run on another base
never takes a live run's branch for a survivor, in any mode.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from git_harn import schemas
from git_harn.git.repo import open_repo
from git_harn.store import lease as leases
from git_harn.workflow.model import config
from git_harn.workflow.run.launch import run_workflow
from tests.kit.harn import all_refs, assert_valid, git, harn, make_repo, record
from tests.kit.runners import start, wait_for_log
from tests.kit.workflow_repo import setup

ROADMAP = "# R\n\n- [ ] 1.1 Held by a live run\n- [ ] 1.3 Free\n"


def _hanging(wf) -> None:  # type: ignore[no-untyped-def]
    wait_for_log(wf.log, lambda log: any(e["event"] == "hanging" for e in log))


def test_a_second_run_on_the_same_base_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    wf.script({"1.1:implement": "commit-hang"})
    with start(wf.work, "workflow", "run", "--json") as first:
        _hanging(wf)
        live = [name for name in all_refs(wf.work) if name.startswith("refs/harnery/workflows/")]
        assert len(live) == 1
        live_id = live[0].rsplit("/", 1)[1]
        before = all_refs(wf.work)

        second = harn(wf.work, "workflow", "run")  # today: it runs, takes 1.3 and skips 1.1 as a survivor
        assert second.code == 3, second.err
        assert f"workflow {live_id} is running on origin/main in this clone" in second.err
        assert "nothing was started" in second.err
        assert all_refs(wf.work) == before  # no record, branch, claim or run record
        as_json = harn(wf.work, "workflow", "run", "--json")
        assert as_json.code == 3 and live_id in as_json.json()["error"]["message"]

        out, _ = first.stop()
    assert first.proc.returncode == 3
    assert json.loads(out)["interrupted"] is True
    # the first run's lease is gone with it: a third run may start
    assert harn(wf.work, "workflow", "run", "--dry-run").code == 0


def test_a_live_runs_branch_is_never_a_survivor_in_any_mode(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    wf.push_change({"note.txt": "another base\n"}, "note")  # makes the clone the helper pushes from
    git(tmp_path / "other", "push", "-q", "origin", "main:other")
    git(wf.work, "fetch", "-q", "origin")
    wf.script({"1.1:implement": "commit-hang"})
    with start(wf.work, "workflow", "run") as first:
        _hanging(wf)
        run_id = next(name.rsplit("/", 1)[1] for name in all_refs(wf.work) if name.startswith("refs/harnery/runs/"))
        workspace = record(wf.work, run_id)
        tip = git(wf.work, "rev-parse", "roadmap-1.1")

        other = harn(wf.work, "workflow", "run", "--base", "other", "--max-tasks", "1",
                     "--resume-partial-branches", "--resume-mode", "continue", "--json")
        doc = other.json()
        assert_valid(doc, "workflow-result")
        skipped = {s["taskId"]: s for s in doc["skipped"]}
        assert skipped["1.1"]["reason"] == "live-run", doc["skipped"]  # today: resumed as a survivor
        assert run_id in skipped["1.1"]["detail"]
        assert "roadmap-1.1" not in doc["recovery"]["candidates"]
        assert all(t["taskId"] != "1.1" for t in doc["tasks"])
        # the live run's workspace and branch are as they were
        assert record(wf.work, run_id)["state"] == workspace["state"] == "active"
        assert git(wf.work, "rev-parse", "roadmap-1.1") == tip
        assert git(Path(workspace["path"]), "symbolic-ref", "HEAD") == "refs/heads/roadmap-1.1"
        first.stop()


def test_a_runner_whose_pid_was_reused_is_gone_and_its_lease_is_taken_over(tmp_path: Path) -> None:
    """The pid in a dead runner's lease now belongs to another live process
    (ours, started by this test): its start time differs, so the runner is
    gone, the next run settles it and takes the lease, and the other process
    is never signalled [L3]."""
    from tests.kit.runners import alive, at_failpoint

    wf = setup(tmp_path, roadmap=ROADMAP)
    runner = at_failpoint(wf.work, "workflow-stage-plan", "workflow", "run")
    runner.kill_group()
    common = Path(git(wf.work, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    [lease] = (common / "harnery" / "locks").glob("runner-*.lock")
    owner = json.loads(lease.read_text())
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        lease.write_text(json.dumps({**owner, "pid": stranger.pid}))  # the same pid, another process
        listed = harn(wf.work, "workflow", "list", "--json").json()
        assert [w["runnerState"] for w in listed["workflows"]] == ["gone"]
        rerun = wf.run("--json")
        assert rerun.code == 0, rerun.err
        doc = rerun.json()
        assert_valid(doc, "workflow-result")
        assert [s["workflowId"] for s in doc["settled"]] == [owner["workflowId"]]
        assert alive(stranger.pid)  # a reused pid is never signalled
        assert {t["taskId"]: t["status"] for t in doc["tasks"]} == {"1.1": "done", "1.3": "done"}
    finally:
        stranger.kill()
        stranger.wait()


def test_an_ended_group_is_dropped_from_the_lease_file_at_the_next_write_and_never_taken_for_a_live_one(
        tmp_path: Path) -> None:
    """Each agent's start writes the lease (its group named for settling);
    its end writes nothing. The ended group the file still names until the
    next start is not alive, so a settle signals nothing for it."""
    from git_harn.git.repo import open_repo
    from git_harn.store import lease as leases
    from git_harn.store.procs import Group, process_start, this_process

    repo = open_repo(make_repo(tmp_path / "repo"))
    held = leases.take(repo, "origin", "main", "wf-test", this_process())
    first = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        held.note_group(first.pid, process_start(first.pid))
        on_disk = json.loads(held.path.read_text())
        assert [g["pgid"] for g in on_disk["groups"]] == [first.pid]
    finally:
        first.kill()
        first.wait()
    before = held.path.stat().st_mtime_ns, held.path.stat().st_ino
    held.drop_group(first.pid)
    assert (held.path.stat().st_mtime_ns, held.path.stat().st_ino) == before  # no write for an end
    (left,) = leases.leases(repo)
    assert [g.pgid for g in left.groups()] == [first.pid] and not any(g.alive() for g in left.groups())
    second = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        held.note_group(second.pid, process_start(second.pid))
        assert [g["pgid"] for g in json.loads(held.path.read_text())["groups"]] == [second.pid]
        assert Group(second.pid, process_start(second.pid)).alive()
    finally:
        second.kill()
        second.wait()
    held.release()
    assert not held.path.exists()


def test_a_group_whose_leader_ended_while_others_of_it_run_is_dropped_from_the_file_at_once(
        tmp_path: Path) -> None:
    """A gate that leaves a server running in the background ends, its group
    does not: the lease file stops naming the group when the gate ends, so no
    later settle or doctor takes those processes for this run's."""
    import contextlib
    import os
    import signal

    from git_harn.git.repo import open_repo
    from git_harn.store import lease as leases
    from git_harn.store.procs import process_start, this_process

    repo = open_repo(make_repo(tmp_path / "repo"))
    held = leases.take(repo, "origin", "main", "wf-test", this_process())
    gate = subprocess.Popen(["sh", "-c", "sleep 120 >/dev/null 2>&1 & exit 0"], start_new_session=True)
    try:
        held.note_group(gate.pid, process_start(gate.pid))
        gate.wait()
        held.drop_group(gate.pid)
        assert json.loads(held.path.read_text())["groups"] == []
        (left,) = leases.leases(repo)
        assert list(left.groups()) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(gate.pid, signal.SIGKILL)  # the group this test started


def test_a_run_that_fails_right_after_taking_its_lease_leaves_none(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever fails after the lease is taken (here: no thread to load the
    schemas in) releases it, so the next run is not refused."""
    wf = setup(tmp_path, roadmap=ROADMAP)
    monkeypatch.chdir(wf.work)

    def no_thread() -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(schemas, "preload", no_thread)
    with pytest.raises(RuntimeError, match="new thread"):
        run_workflow(open_repo(wf.work), config.Options())
    assert leases.leases(open_repo(wf.work)) == []
