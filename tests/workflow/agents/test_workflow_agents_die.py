"""Agents do not outlive their runner (issue 21, defect 4) [L3].

Agents run in process groups of their own, so a runner killed with its
whole process group takes none of them down by itself: the run's watchdog
ends them, and settling a dead run ends whatever a dead watchdog left. The
busy refusal names the command that does.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.kit.harn import all_refs, harn, record
from tests.kit.runners import alive, start, wait_for_log
from tests.kit.workflow_repo import WF, setup

# the agents report their pids, which a PID namespace would make their own (conftest.unsandboxed)
pytestmark = pytest.mark.usefixtures("unsandboxed")


def _family(wf: WF) -> tuple[int, int]:
    """(agent, its child) once the agent hangs with a child in its group."""
    wait_for_log(wf.log, lambda log: any(e["event"] == "hanging" for e in log))
    found = json.loads((wf.agents / "family-1.1-implement").read_text())
    return found["agent"], found["child"]


def _gone(pids: tuple[int, ...], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def test_an_agent_and_its_children_die_with_a_killed_runner(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    wf.script({"1.1:implement": "family-hang"})
    runner = start(wf.work, "workflow", "run")
    family = _family(wf)
    runner.kill_group()  # git-harn and its gits; the agent's group is its own
    assert _gone(family, 10), "the agent's process group outlived its runner"  # today: it runs 120 s on


def test_settle_ends_what_a_dead_run_left_and_the_busy_refusal_names_it(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    wf.script({"1.1:implement": "family-hang"})
    runner = start(wf.work, "workflow", "run", env={"HARN_WATCHDOG": "off"})  # as if the watchdog died too
    family = _family(wf)
    runner.kill_group()
    assert all(alive(pid) for pid in family)
    workflow_id = next(n.rsplit("/", 1)[1] for n in all_refs(wf.work) if n.startswith("refs/harnery/workflows/"))
    run_id = f"{workflow_id}-1.1"
    busy = harn(wf.work, "reclaim", run_id)
    assert busy.code == 1, busy.err
    advised = f"git harn workflow settle {workflow_id}"
    assert advised in busy.err  # today: "may still run", and nothing says how to stop it

    settled = harn(wf.work, *advised.split()[2:], "--json")  # exactly as advised
    assert settled.code == 0, settled.err
    doc = settled.json()
    assert {g["pgid"] for g in doc["groupsEnded"]} == {family[0]}
    assert _gone(family, 5)
    assert doc["closed"] is True and doc["workspaces"][0]["action"] == "survivor"
    assert record(wf.work, run_id)["state"] == "preserved_unmerged"  # the plan it committed is kept
    assert harn(wf.work, "workflow", "show", workflow_id, "--json").json()["outcome"] == "workflow-interrupted"
    again = harn(wf.work, "workflow", "settle", workflow_id, "--json")  # nothing left: a no-op
    assert again.code == 0 and again.json()["closed"] is False and not again.json()["groupsEnded"]


def test_a_group_whose_leader_pid_went_to_another_process_is_never_signalled(tmp_path: Path) -> None:
    import subprocess
    import sys

    from git_harn.store.procs import Group, end_groups, process_start

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        start = process_start(proc.pid)
        assert start
        reused = Group(proc.pid, str(int(start) - 1))  # as recorded for an earlier process with that pid
        assert not reused.alive() and end_groups([reused], grace=0.5) == []
        assert alive(proc.pid)
        ours = Group(proc.pid, start)
        assert ours.alive() and end_groups([ours], grace=2) == [ours]
        assert proc.wait(timeout=10) == -15  # SIGTERM was enough
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_gate_dies_with_a_killed_runner(tmp_path: Path) -> None:
    import sys

    from tests.kit.workflow_repo import config_text

    marker = tmp_path / "gate.pid"
    hang = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    gates = json.dumps([[sys.executable, "-c", hang]])
    config = config_text(tmp_path / "agents").replace(
        '[gates]\ncommands = [["sh", "-c", "test ! -e broken"]]\n', f"[gates]\ncommands = {gates}\n")
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n", config=config)
    runner = start(wf.work, "workflow", "run")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (marker.exists() and marker.read_text()):
        time.sleep(0.05)
    gate = int(marker.read_text())
    assert alive(gate)
    runner.kill_group()  # the gate runs in a group of its own, as agents do
    assert _gone((gate,), 10), "the gate outlived its runner"
