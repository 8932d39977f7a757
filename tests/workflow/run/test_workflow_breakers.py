"""Circuit breakers (issue 21, defect 6): an auth fault stops new starts; a
provider limit with a reset time holds them until then, or is waited out
with ``--wait-for-provider``."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

from tests.kit.harn import all_refs, assert_valid, harn
from tests.kit.runners import start
from tests.kit.workflow_repo import WF, setup

THREE = "# R\n\n- [ ] 1.1 First\n- [ ] 1.3 Second\n- [ ] 1.4 Third\n"


def test_the_first_auth_fault_stops_new_starts_and_running_tasks_finish(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=THREE)
    wf.script({"1.1:plan": "auth", "1.3:plan": "sleep:2", "1.4:plan": "auth"})
    result = wf.run("--parallel", "2", "--json")
    assert result.code == 3, result.err
    doc = result.json()
    assert_valid(doc, "workflow-result")
    tasks = {t["taskId"]: t["status"] for t in doc["tasks"]}
    assert tasks == {"1.1": "auth-fault", "1.3": "done"}  # today: 1.4 started too, and failed the same way
    skipped = {s["taskId"]: s["reason"] for s in doc["skipped"]}
    assert skipped == {"1.4": "auth-fault-halt"}
    assert not [e for e in wf.log() if e["task"] == "1.4"]  # no agent of 1.4 ever ran
    assert doc["halted"].startswith("auth fault at plan of task 1.1")
    preflight = json.dumps(["git-harn", "workflow", "check", "--live", "--remote", "origin", "--base", "main"])
    assert f"[agents.preflight] command = {preflight}" in doc["halted"]
    assert doc["breakers"]["auth"]["taskId"] == "1.1"
    assert "- [x] 1.3" in wf.remote_file("docs/roadmap.md")


def test_a_provider_limit_holds_new_starts_until_its_reset(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=THREE)
    wf.script({"1.1:plan": "provider-reset:600"})
    result = wf.run("--json")
    doc = result.json()
    tasks = {t["taskId"]: t["status"] for t in doc["tasks"]}
    assert tasks == {"1.1": "provider-fault"}  # today: 1.3 and 1.4 started into the same limit
    assert {s["taskId"]: s["reason"] for s in doc["skipped"]} == dict.fromkeys(("1.3", "1.4"), "provider-fault-halt")
    assert "relaunch after" in doc["halted"] and "--wait-for-provider" in doc["halted"]
    limit = doc["breakers"]["providerLimits"][0]
    assert limit["taskId"] == "1.1" and limit["until"].endswith("Z")


def test_wait_for_provider_waits_for_the_reset_then_goes_on(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=THREE)
    wf.script({"1.1:plan": "provider-reset:3"})
    result = wf.run("--wait-for-provider=60")  # piped: progress as plain lines on stderr
    doc = harn(wf.work, "workflow", "show", "--json").json()
    assert_valid(doc, "workflow-result")
    tasks = {t["taskId"]: t["status"] for t in doc["tasks"]}
    assert tasks == {"1.1": "provider-fault", "1.3": "done", "1.4": "done"}
    waits = doc["breakers"]["waits"]
    assert len(waits) == 1 and waits[0]["waitedSeconds"] >= 1
    assert "waiting for the provider of" in result.err  # progress is shown
    started = min(e["t"] for e in wf.log() if e["task"] == "1.3")
    faulted = max(e["t"] for e in wf.log() if e["task"] == "1.1")
    assert started - faulted >= 1.5  # nothing started before the reset


def test_a_reset_beyond_the_bound_is_not_waited_for(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=THREE)
    wf.script({"1.1:plan": "provider-reset:600"})
    doc = wf.run("--wait-for-provider=2m", "--json").json()
    assert {s["taskId"]: s["reason"] for s in doc["skipped"]} == dict.fromkeys(("1.3", "1.4"), "provider-fault-halt")
    assert doc["breakers"]["waits"] == []


def test_a_bad_wait_bound_is_bad_input_and_creates_nothing(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=THREE)
    before = all_refs(wf.work)
    bad = wf.run("--wait-for-provider=soon")
    assert bad.code == 2 and "--wait-for-provider" in bad.err
    assert all_refs(wf.work) == before


# --- the halts' next step runs as printed [L4] ---------------------------------------------


def _run_as_printed(wf: WF, command: str) -> subprocess.CompletedProcess[str]:
    assert command.startswith("git harn ")
    ran = subprocess.run(shlex.split(command), cwd=wf.work, capture_output=True, text=True, timeout=240,
                         check=False)
    assert ran.returncode == 0, (command, ran.stdout, ran.stderr)
    return ran


def test_the_auth_halt_advises_the_relaunch_that_starts_the_tasks_it_left(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=THREE)
    wf.script({"1.1:plan": "auth"})
    done = wf.run()
    assert done.code == 3
    assert "next: git harn workflow run\n" in done.out  # the run's own step, printed with its why
    doc = harn(wf.work, "workflow", "show", "--json").json()
    assert_valid(doc, "workflow-result")
    assert doc["next"]["command"] == "git harn workflow run" and "credential" in doc["next"]["why"]
    wf.script({})  # the credential works again
    _run_as_printed(wf, doc["next"]["command"])
    roadmap = wf.remote_file("docs/roadmap.md")
    assert all(f"- [x] {task}" in roadmap for task in ("1.1", "1.3", "1.4")), roadmap


def test_the_provider_halt_advises_a_relaunch_that_waits_for_the_reset(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=THREE)
    wf.script({"1.1:plan": "provider-reset:5", "1.3:plan": "provider-reset:5"})
    doc = wf.run("--json").json()  # no wait asked: 1.3 and 1.4 are left
    assert {s["taskId"] for s in doc["skipped"]} == {"1.3", "1.4"}
    command = doc["next"]["command"]
    assert command.startswith("git harn workflow run --wait-for-provider=") and "reset" in doc["next"]["why"]
    assert int(command.rpartition("=")[2]) >= 60  # the reset time and a margin, never less
    wf.script({})  # the reset time passed (the wait itself: test_wait_for_provider_waits_for_the_reset_then_goes_on)
    _run_as_printed(wf, command)
    roadmap = wf.remote_file("docs/roadmap.md")
    assert all(f"- [x] {task}" in roadmap for task in ("1.1", "1.3", "1.4")), roadmap


def test_a_signal_ends_the_wait_for_the_provider_and_starts_nothing(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=THREE)
    wf.script({"1.1:plan": "provider-reset:900"})
    with start(wf.work, "workflow", "run", "--wait-for-provider=1h") as runner:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not [e for e in wf.log() if e["task"] == "1.1"]:
            time.sleep(0.1)
        time.sleep(2)  # past the task's end: the runner holds its starts for the reset time
        began = time.monotonic()
        _, err = runner.stop()
        assert time.monotonic() - began < 30, err  # not the 15 minutes to the reset
    assert runner.proc.returncode != 0
    assert "waiting for the provider of" in err
    doc = harn(wf.work, "workflow", "show", "--json").json()
    assert_valid(doc, "workflow-result")
    assert doc["outcome"] == "workflow-interrupted" and doc["runnerState"] is None
    assert not [e for e in wf.log() if e["task"] in ("1.3", "1.4")]  # nothing started after the signal
