"""Notifications (issue 47 item 2): ``harn.notify`` or ``--notify`` is run
with one JSON event on stdin when the run finishes, halts, a task ends
needing a person, or the spending limit is reached; never from the
repository's config [T1]; in the background, bounded, with a scrubbed
environment; a notifier that hangs or fails never delays or fails the run."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from git_harn.schemas import schema_errors
from git_harn.workflow.model.result import TaskResult
from git_harn.workflow.run.notify import halt_reason, needs_person, run_event, task_event
from tests.kit.adapter_fakes import PLAN_OK, claude_init, claude_result, fake_cli_env
from tests.kit.addenda_repo import make, script
from tests.kit.fault_repo import fault_setup, faults
from tests.kit.harn import assert_valid, git, harn
from tests.kit.recovery_repo import ONE, RESUME, survivor, wf_with
from tests.kit.workflow_repo import WF, config_text, setup, sigterm_when_hanging

NOTIFIER = r'''import json, os, sys, time
out = sys.argv[1]
doc = json.loads(sys.stdin.read())
with open(os.path.join(out, f"{time.time_ns()}-{os.getpid()}.json"), "w") as f:
    json.dump({"event": doc, "env": dict(os.environ), "argv": sys.argv[2:]}, f)
'''


def notifier(tmp: Path, *extra: str) -> tuple[str, Path]:
    """A notifier that keeps each event it is given, with its environment: its command line, and its folder."""
    script = tmp / "notifier.py"
    script.write_text(NOTIFIER)
    out = tmp / "told"
    out.mkdir()
    return shlex.join([sys.executable, str(script), str(out), *extra]), out


def told(out: Path, count: int, seconds: float = 30) -> list[dict[str, Any]]:
    """The events delivered, once ``count`` have been (they are delivered in the background)."""
    deadline = time.monotonic() + seconds
    while len(list(out.glob("*.json"))) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # one more would show now
    found = [json.loads(p.read_text()) for p in out.glob("*.json")]
    for seen in found:
        assert_valid(seen["event"], "workflow-event")
    # each is delivered by a process of its own: in the order they were made, not always as they arrive
    return sorted(found, key=lambda seen: _ORDER.index(seen["event"]["event"]))


_ORDER = ["run-waiting", "spending-limit", "task-needs-person", "run-halted", "run-finished"]


def notify_log(wf: WF, workflow_id: str, lines: int, seconds: float = 30) -> list[str]:
    path = wf.work / ".git" / "harnery" / "workflow" / workflow_id / "notify.log"
    deadline = time.monotonic() + seconds
    while (not path.exists() or len(path.read_text().splitlines()) < lines) and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.read_text().splitlines() if path.exists() else []


def _told_needs_person_then_finished(out: Path, task: dict[str, Any], reason: str) -> None:
    """The notifier was told that ``task`` needs a person, for ``reason``,
    with the task's own next step, and then that the run finished."""
    events = [seen["event"] for seen in told(out, 2)]
    assert [(e["event"], e["reason"], e["taskId"]) for e in events] == [
        ("task-needs-person", reason, task["taskId"]), ("run-finished", None, None)]
    assert events[0]["next"] == task["next"]


def test_a_run_that_finishes_says_so_once_with_a_valid_event_and_a_scrubbed_environment(tmp_path: Path) -> None:
    command, out = notifier(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 Only\n")
    done = wf.run("--json", "--notify", command, env={"ANTHROPIC_API_KEY": "sk-secret", "GIT_AUTHOR_NAME": "someone"})
    assert done.code == 0, done.err
    doc = done.json()
    [seen] = told(out, 1)
    event = seen["event"]
    assert (event["event"], event["reason"], event["workflowId"]) == ("run-finished", None, doc["workflowId"])
    assert event["outcome"] == "workflow-done" and event["what"] == doc["summary"] and event["next"] is None
    assert "ANTHROPIC_API_KEY" not in seen["env"] and "GIT_AUTHOR_NAME" not in seen["env"]
    assert "PATH" in seen["env"]
    assert notify_log(wf, doc["workflowId"], 1)[0].endswith("001-run-finished.json: delivered")


def test_a_refused_task_and_an_auth_halt_are_told_each_once_with_the_next_step(tmp_path: Path) -> None:
    command, out = notifier(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 Refused\n- [ ] 1.2 No login\n- [ ] 1.3 Never started\n")
    wf.script({"1.1:review": "never-approve", "1.2:plan": "auth"})
    done = wf.run("--json", "--notify", command)
    assert done.code == 3, done.err
    doc = done.json()
    events = [seen["event"] for seen in told(out, 2)]
    assert [(e["event"], e["reason"], e["taskId"]) for e in events] == [
        ("task-needs-person", "refused", "1.1"), ("run-halted", "auth", None)]
    refused = next(t for t in doc["tasks"] if t["taskId"] == "1.1")
    assert events[0]["next"] == refused["next"] and events[0]["branch"] == "roadmap-1.1"
    assert events[1]["what"] == doc["halted"] and events[1]["next"] == doc["next"]


def test_a_task_failed_at_review_by_the_hosts_check_is_told(tmp_path: Path) -> None:
    command, out = notifier(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 7.3 Reviewed\n")
    wf.script({"review": "approve-and-scribble"})  # the reviewers approve but leave files in the worktree
    done = wf.run("--json", "--notify", command)
    assert done.code == 3, done.err
    (task,) = done.json()["tasks"]
    assert (task["state"], task["stage"]) == ("failed", "review"), task
    events = [seen["event"] for seen in told(out, 2)]
    assert [(e["event"], e["reason"], e["taskId"]) for e in events] == [
        ("task-needs-person", "failed-after-review", "7.3"), ("run-finished", None, None)]
    assert events[0]["next"] == task["next"] and events[0]["what"].startswith("task 7.3 failed-after-review at review")


def test_a_failed_task_its_assessor_leaves_to_a_person_is_told_continue_manual(tmp_path: Path) -> None:
    verdict = tmp_path / "assessor.py"
    verdict.write_text("import json, sys\njson.load(sys.stdin)\n"
                       "print(json.dumps({'classification': 'continue-manual', 'reasons': ['a person must look'],\n"
                       "                  'missingEvidence': ['needs a person'], 'residualRisk': []}))\n")
    extra = f"\n[agents.assess]\ncommand = {json.dumps([sys.executable, str(verdict)])}\n"
    wf = fault_setup(tmp_path, "# R\n\n- [ ] 21.1 Faulty\n", extra=extra)
    faults(wf, {"21.1:implement": "partial"})
    command, out = notifier(tmp_path)
    done = wf.run("--json", "--notify", command)
    (task,) = done.json()["tasks"]
    assert task["assessment"]["classification"] == "continue-manual", task
    _told_needs_person_then_finished(out, task, "continue-manual")


def test_a_run_stopped_by_sigterm_is_told_interrupted(tmp_path: Path) -> None:
    command, out = notifier(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 Hangs\n")
    wf.script({"1.1:implement": "hang"})
    code, stdout, _, _ = sigterm_when_hanging(wf, ["--json", "--notify", command], 1)
    assert code == 3
    doc = json.loads(stdout)
    [seen] = told(out, 1)
    event = seen["event"]
    assert (event["event"], event["reason"], event["what"]) == ("run-halted", "interrupted", doc["halted"])
    assert event["outcome"] == "workflow-interrupted"


def test_a_task_proposed_as_a_pull_request_is_told(tmp_path: Path) -> None:
    command, out = notifier(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 Proposed\n")
    done = wf.run("--json", "--land", "pull-request", "--notify", command)
    assert done.code == 0, done.err
    (task,) = done.json()["tasks"]
    assert task["state"] == "proposed", task
    _told_needs_person_then_finished(out, task, "proposed")


def test_a_provider_halt_is_told_with_its_reset_time(tmp_path: Path) -> None:
    command, out = notifier(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 Limited\n- [ ] 1.2 Later\n")
    wf.script({"1.1:plan": "provider-reset:3600"})
    done = wf.run("--json", "--notify", command)
    assert done.code == 3, done.err
    doc = done.json()
    [seen] = told(out, 1)
    event = seen["event"]
    assert (event["event"], event["reason"]) == ("run-halted", "provider")
    assert event["resetAt"] == doc["breakers"]["providerLimits"][0]["until"]
    assert event["next"] == doc["next"] and "--wait-for-provider" in event["next"]["command"]


def test_a_wait_for_a_provider_is_told_with_its_reset_time_and_the_run_goes_on(tmp_path: Path) -> None:
    command, out = notifier(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 Limited\n- [ ] 1.2 After the reset\n")
    wf.script({"1.1:plan": "provider-reset:3"})
    done = wf.run("--json", "--wait-for-provider=60", "--notify", command)
    doc = done.json()
    assert {t["taskId"]: t["status"] for t in doc["tasks"]} == {"1.1": "provider-fault", "1.2": "done"}, done.err
    events = [seen["event"] for seen in told(out, 2)]
    assert [(e["event"], e["reason"]) for e in events] == [("run-waiting", "provider"), ("run-finished", None)]
    assert events[0]["resetAt"] == doc["breakers"]["waits"][0]["until"] and events[0]["next"]["command"] is None


def test_a_tamper_halt_is_told(tmp_path: Path) -> None:
    command, out = notifier(tmp_path)
    py, agent = sys.executable, str(tmp_path / "agents" / "agent.py")
    # the plan stage plants a program in the shared git config, then plans honestly [T2]
    tamper = ["sh", "-c", 'git config core.fsmonitor /bin/false && exec "$0" "$@"', py, agent, "plan"]
    config = config_text(tmp_path / "agents").replace(f"command = [{json.dumps(py)}, {json.dumps(agent)}, \"plan\"]",
                                                      f"command = {json.dumps(tamper)}")
    assert "fsmonitor" in config
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 Hostile\n- [ ] 1.2 Never started\n", config=config)
    done = wf.run("--json", "--notify", command)
    assert done.code == 3, done.err
    doc = done.json()
    assert doc["tasks"][0]["status"] == "tamper-fault", doc["tasks"][0]
    [seen] = told(out, 1)
    event = seen["event"]
    assert (event["event"], event["reason"], event["what"]) == ("run-halted", "tamper", doc["halted"])
    assert event["next"] == doc["next"]


def test_a_spending_limit_is_told_as_it_is_reached_and_the_halt_after(tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    (calls / "scenario.json").write_text(json.dumps({
        "stage:plan": [claude_init(), {"work": "plan"}, claude_result(PLAN_OK, cost=3.0)]}))
    config = ('[workflow]\nstageTimeout = 60\n[agents.plan]\nadapter = "claude"\n[agents.implement]\n'
              'adapter = "claude"\n[agents.review]\nadapter = "claude"\n[agents.integrate]\ncommand = "builtin"\n'
              '[gates]\ncommands = [["true"]]\n')
    command, out = notifier(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 Dear\n- [ ] 9.2 Later\n", config=config)
    done = wf.run("--json", "--max-cost-usd", "2", "--notify", command, env=env)
    assert done.code == 3, done.err
    doc = done.json()
    events = [seen["event"] for seen in told(out, 2)]
    assert [(e["event"], e["reason"]) for e in events] == [("spending-limit", "budget"), ("run-halted", "budget")]
    assert (events[0]["spentUsd"], events[0]["limitUsd"], events[0]["taskId"]) == (3.0, 2.0, "9.1")
    assert events[1]["next"] == doc["next"] and events[1]["next"]["command"].endswith("--max-cost-usd 4")


def test_a_notifier_that_hangs_or_fails_never_delays_or_fails_the_run(tmp_path: Path) -> None:
    hang = shlex.join([sys.executable, "-c", "import time; time.sleep(300)"])
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 Only\n")
    started = time.monotonic()
    done = wf.run("--json", "--notify", hang, env={"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "harn.notifyTimeout",
                                                   "GIT_CONFIG_VALUE_0": "2"})
    took = time.monotonic() - started
    assert done.code == 0, done.err
    assert took < 60, took
    workflow_id = done.json()["workflowId"]
    line = notify_log(wf, workflow_id, 1)
    assert line and line[0].endswith(f"001-run-finished.json: failed: {sys.executable} was stopped after 2 s "
                                     "(harn.notifyTimeout)"), line
    for failing, said in ((shlex.join([sys.executable, "-c", "raise SystemExit(7)"]), "exited with 7"),
                          ("/nonexistent/notifier", "could not start")):
        other = setup(tmp_path / said.replace(" ", "-"), roadmap="# R\n\n- [ ] 1.1 Only\n")
        again = other.run("--json", "--notify", failing)
        assert again.code == 0 and again.json()["outcome"] == "workflow-done", again.err
        logged = notify_log(other, again.json()["workflowId"], 1)
        assert logged and said in logged[0], logged


def test_harn_notify_is_read_from_the_operators_config_only(tmp_path: Path) -> None:
    command, out = notifier(tmp_path, "global")
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n")
    (tmp_path / "agent").mkdir()
    planted, planted_out = notifier(tmp_path / "agent", "planted")
    git(wf.work, "config", "harn.notify", planted)  # what an agent in a worktree could write
    done = wf.run("--json", "--max-tasks", "1")
    assert done.code == 0, done.err
    time.sleep(2)
    assert not list(planted_out.glob("*.json")) and not list(out.glob("*.json"))  # the repository's: never run
    checked = harn(wf.work, "workflow", "check", "--json").json()  # and the check says it is ignored
    assert {"key": "harn.notify", "scope": "local"} in checked["ignored"]
    operator = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "harn.notify", "GIT_CONFIG_VALUE_0": command}
    again = wf.run("--json", env=operator)
    assert again.code == 0, again.err
    [seen] = told(out, 1)
    assert seen["argv"] == ["global"] and not list(planted_out.glob("*.json"))


def test_a_notify_command_that_is_no_command_line_is_bad_input(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 Only\n")
    before = git(wf.work, "for-each-ref")
    done = wf.run("--notify", "say 'unclosed")
    assert done.code == 2 and done.err.startswith("git harn: error: --notify: ") and done.err.count("\n") == 1
    assert git(wf.work, "for-each-ref") == before


# --- every kind and reason, as the run's documents make them --------------------------------

RUN = {"workflowId": "wf-1", "remote": "origin", "base": "main", "summary": "2 tasks: 1 done, 1 failed",
       "outcome": "workflow-incomplete", "tasks": [], "next": {"command": "git harn workflow run", "why": "go on"}}


@pytest.mark.parametrize(("more", "reason"), [
    ({"blocked": "auth-preflight-failed", "halted": "auth preflight"}, "auth"),
    ({"breakers": {"auth": {"taskId": "1"}, "tamper": {"taskId": "2"}}, "halted": "tamper"}, "tamper"),
    ({"breakers": {"spending": {"reached": {"taskId": "1"}, "spentUsd": 5, "limitUsd": 4}}, "halted": "x"}, "budget"),
    ({"breakers": {"gaveUp": "claude", "providerLimits": [{"agent": "claude", "until": "2030-01-01T00:00:00Z",
                                                           "taskId": "1"}]}, "halted": "x"}, "provider"),
    ({"recovery": {"unresolved": [{"branch": "roadmap-1"}]}, "halted": "needs-operator-recovery: 1"},
     "needs-operator-recovery"),
    ({"interrupted": True, "halted": "interrupted by Ctrl-C"}, "interrupted"),
    ({"halted": "no further task selected"}, "halted"),
    ({}, None),
])
def test_each_halt_has_its_reason(more: dict[str, Any], reason: str | None) -> None:
    event = run_event({**RUN, **more})
    assert not schema_errors(event, "workflow-event")
    assert event["reason"] == reason and event["event"] == ("run-halted" if reason else "run-finished")
    assert halt_reason({**RUN, **more})[0] == reason
    if reason == "provider":
        assert event["resetAt"] == "2030-01-01T00:00:00Z"


@pytest.mark.parametrize(("fields", "reason"), [
    ({"state": "manual-merge-ready", "status": "manual-merge-ready", "stage": "addendum"}, "manual-merge-ready"),
    ({"state": "proposed", "status": "proposed", "stage": "integrate"}, "proposed"),
    ({"state": "refused", "status": "failed", "stage": "review"}, "refused"),
    ({"state": "failed", "status": "failed", "stage": "review"}, "failed-after-review"),
    ({"state": "failed", "status": "failed", "stage": "implement",
      "assessment": {"classification": "continue-manual"}}, "continue-manual"),
    ({"state": "failed", "status": "failed", "stage": "implement"}, None),
    ({"state": "done", "status": "done", "stage": "done"}, None),
])
def test_each_task_that_needs_a_person_has_its_reason(fields: dict[str, Any], reason: str | None) -> None:
    tr = TaskResult(taskId="1.1", title="t", branch="roadmap-1.1", runId="wf-1-1.1", detail="d",
                    next={"command": "git harn integrate roadmap-1.1", "why": "check it"}, **fields)
    assert needs_person(tr) == reason
    event = task_event(RUN, tr)
    if reason is None:
        assert event is None
        return
    assert event is not None and not schema_errors(event, "workflow-event")
    assert (event["event"], event["reason"], event["taskId"], event["next"]) == (
        "task-needs-person", reason, "1.1", tr.next)


def test_a_run_that_leaves_survivors_unresolved_is_told_needs_operator_recovery(tmp_path: Path) -> None:
    wf = wf_with(tmp_path, roadmap=ONE)
    survivor(wf)
    command, out = notifier(tmp_path)
    done = wf.run("--json", *RESUME, "--resume-mode", "assess", "--notify", command)
    assert done.code == 3, done.err
    doc = done.json()
    [seen] = told(out, 1)
    event = seen["event"]
    assert (event["event"], event["reason"], event["what"]) == ("run-halted", "needs-operator-recovery",
                                                               doc["halted"])
    unresolved = doc["recovery"]["unresolved"][0]["next"]
    assert event["next"] == (doc["next"] if (doc.get("next") or {}).get("command") else unresolved)


def test_an_addendum_ready_for_a_manual_merge_is_told(tmp_path: Path) -> None:
    wf = make(tmp_path, "# R\n\n- [x] 2.1 Landed\n  - [ ] addendum 1: polish it\n")
    script(wf, {"addendum": "mmr"})
    (tmp_path / "notifier").mkdir()
    command, out = notifier(tmp_path / "notifier")
    done = wf.run("--json", "--notify", command)
    assert done.code == 3, done.err
    (task,) = done.json()["tasks"]
    events = [seen["event"] for seen in told(out, 2)]
    assert [(e["event"], e["reason"], e["taskId"]) for e in events] == [
        ("task-needs-person", "manual-merge-ready", "2.1-addendum-1"), ("run-finished", None, None)]
    assert events[0]["next"] == task["next"] and events[0]["next"]["command"].startswith("git harn integrate ")
