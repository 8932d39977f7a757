"""Circuit breakers (issue 21, defect 6): an auth fault stops new starts; a
provider limit with a reset time holds them until then, or is waited out
with ``--wait-for-provider``."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import all_refs, assert_valid, harn
from wfrepo import setup

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
