"""SIGTERM mid-run: agents' process groups stopped, every task's place
recorded, every workspace left to cleanup, nothing lost [P1] [P6]."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.kit.fault_repo import fault_setup, faults, runs
from tests.kit.harn import alive, descendants, git, harn, is_python_of_git_harn, ref
from tests.kit.workflow_repo import setup, sigterm_when_hanging

# the agents report their pids, which a PID namespace would make their own (conftest.unsandboxed)
pytestmark = pytest.mark.usefixtures("unsandboxed")


def test_sigterm_mid_run_stops_agents_and_loses_nothing(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 12.1 Has work when stopped\n- [ ] 12.2 Stopped while planning\n")
    wf.script({"12.1:implement": "commit-hang", "12.2:plan": "hang"})
    code, out, err, hanging = sigterm_when_hanging(wf, ["--parallel", "2", "--json"], 2)
    assert code == 3, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["outcome"] == "workflow-interrupted"
    assert doc["halted"].startswith("interrupted by")
    tasks = {t["taskId"]: t for t in doc["tasks"]}
    assert (tasks["12.1"]["status"], tasks["12.1"]["stage"]) == ("halted", "implement")
    assert (tasks["12.2"]["status"], tasks["12.2"]["stage"]) == ("halted", "plan")
    for entry in hanging:  # the agents' process groups are gone
        assert not alive(entry["pid"])
    # 12.1's commit is kept: its workspace was preserved by cleanup, the branch holds the work
    assert tasks["12.1"]["workspace"]["state"] == "preserved_unmerged"
    tip = ref(wf.work, "refs/heads/roadmap-12.1")
    assert tip and "work-12.1.txt" in git(wf.work, "show", "--name-only", "--format=", tip)
    assert Path(tasks["12.1"]["workspace"]["path"]).is_dir()
    # the record says where each task stood
    shown = harn(wf.work, "workflow", "show", doc["workflowId"], "--json").json()
    assert {t["taskId"]: t["stage"] for t in shown["tasks"]} == {"12.1": "implement", "12.2": "plan"}
    assert shown["interrupted"] is True
    # one commit per event [L3]: each task's end has its own, before the run's finish
    subjects = git(wf.work, "log", "--reverse", "--format=%s", f"refs/harnery/workflows/{doc['workflowId']}")
    events = [line.split(":")[0] for line in subjects.splitlines()]
    assert events.count("task-halted") == 2 and events[-1] == "finish", events
    assert "- [ ] 12.1" in wf.remote_file("docs/roadmap.md")
    status = harn(wf.work, "status", "--json").json()
    assert status is not None


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return "gone"


def test_sigterm_while_shutdown_waits_for_a_running_task_stops_its_agent(tmp_path: Path) -> None:
    """An error leaves the loop (another writer holds the lock of the run's record ref)
    while 21.2's agent still runs; git-harn stops itself at the shutdown
    failpoint and gets SIGTERM there. The agent is stopped at once and its
    stage never starts again (before, the signal left the process waiting on
    a task that went on, timed out and started its next attempt)."""
    wf = fault_setup(tmp_path, "# R\n\n- [ ] 21.1 Overwrites\n- [ ] 21.2 Hangs\n",
                     workflow="stageTimeout = 20\nstageAttempts = 3\n")
    faults(wf, {"21.1:plan": "lock-record", "21.2:plan": "hang"})
    env = {**os.environ, "HARN_FAILPOINT": "workflow-shutdown", "HARN_FAILPOINT_MODE": "stop"}
    proc = subprocess.Popen(["git", "harn", "workflow", "run", "--parallel", "2", "--json"], cwd=wf.work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        harn_pid = None
        while time.time() < deadline and harn_pid is None:
            harn_pid = next((p for p in descendants(proc.pid) if is_python_of_git_harn(p) and _state(p) == "T"), None)
            time.sleep(0.1)
        assert harn_pid is not None, "git-harn never reached the shutdown failpoint"
        hanging = [r for r in runs(wf) if r["task"] == "21.2"]
        assert len(hanging) == 1 and alive(hanging[0]["pid"])  # the agent still runs while git-harn waits
        signalled = time.monotonic()
        os.kill(harn_pid, signal.SIGTERM)
        os.kill(harn_pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=45)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert took < 15, (took, err)  # not the stage's 20 s time-out, nor a retry after it
    assert not alive(hanging[0]["pid"])
    children = (wf.agents / "children.log").read_text().split()
    assert children and not any(alive(int(pid)) for pid in children)
    assert [r["run"] for r in runs(wf) if r["task"] == "21.2"] == [1]  # its stage never started again
    assert "cannot update refs/harnery/workflows/" in err and "internal error" not in err  # still reported
