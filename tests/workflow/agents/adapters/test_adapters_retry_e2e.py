"""End to end: an adapter agent that faults is retried in place and resumes
its session. A real `git harn workflow run` against a bare remote, with a
fake `claude` / `codex` on PATH for the implement stage; the plan and review
stages are the scripted agents of ``tests.kit.workflow_repo``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.kit.adapter_fakes import (
    claude_assistant,
    claude_init,
    claude_result,
    codex_completed,
    codex_item,
    codex_started,
    fake_cli_env,
)
from tests.kit.harn import assert_valid, ref
from tests.kit.workflow_repo import WF, config_text, setup

BUILT = {"ok": True, "summary": "built it on the second try"}


def _fake_bin(tmp: Path) -> tuple[dict[str, str], Path]:
    return fake_cli_env(tmp)


def _wf(tmp: Path, task: str, adapter: str) -> WF:
    """Plan and review by the scripted agent, implement by the adapter."""
    agents = tmp / "agents"
    text = config_text(agents, workflow="stageTimeout = 60\n")
    start = text.index("[agents.implement]")
    end = text.index("[agents.review]")
    implement = f'[agents.implement]\nadapter = "{adapter}"\n\n'
    return setup(tmp, roadmap=f"# R\n\n- [ ] {task} Retried in place\n",
                 config=text[:start] + implement + text[end:])


def _calls(calls_dir: Path) -> list[dict[str, Any]]:
    found = sorted((calls_dir / "calls").glob("*.json"), key=lambda p: int(p.stem))
    return [json.loads(p.read_text()) for p in found]


def _landed(wf: WF, doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    assert_valid(doc, "workflow-result")
    task: dict[str, Any] = doc["tasks"][0]
    assert (task["taskId"], task["status"]) == (task_id, "done"), (task["stage"], task["detail"])
    assert f"- [x] {task_id}" in wf.remote_file("docs/roadmap.md")
    assert ref(wf.work, f"refs/heads/roadmap-{task_id}") is None  # cleanup deleted the landed branch
    assert doc["faultMetrics"] == {"infraRetries": 1, "infraFaults": 0, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}
    assert task["infraRetries"] == 1 and task["fault"] is None
    implement = task["stages"]["implement"]
    assert (implement["ok"], implement["fault"], implement["tries"]) == (True, None, 2), implement
    assert implement["summary"] == BUILT["summary"]
    # a writing stage's retry is its next attempt
    assert implement["attempt"] == 2 and task["attempts"]["implement"] == 2
    return task


def _two_logs(task: dict[str, Any], first_types: list[str], second_types: list[str]) -> None:
    """Both attempts' event streams are kept, in order, and are what each attempt printed."""
    logs = task["agentLogs"]
    assert len(logs) == 2 and len(set(logs)) == 2, logs
    assert task["stages"]["implement"]["agentRun"]["log"] == logs[1]
    kept = [[json.loads(line)["type"] for line in Path(p).read_text().splitlines()] for p in logs]
    assert kept == [first_types, second_types]
    assert [Path(p).name for p in logs] == [f"{task['taskId']}-implement-{n}.events.jsonl" for n in (1, 2)]
    assert task["usage"]["runs"] == 2


@pytest.mark.usefixtures("unsandboxed")  # it reads the agent's pid, its own PID namespace's under the sandbox
def test_an_idle_claude_implement_is_retried_and_resumes_its_session(tmp_path: Path) -> None:
    env, calls_dir = _fake_bin(tmp_path)
    wf = _wf(tmp_path, "31.1", "claude")
    (calls_dir / "scenario.json").write_text(json.dumps({"runs": [
        [claude_init(), claude_assistant("thinking hard"), {"sleep": 60}],  # then silence: idle
        [claude_init(), {"work": "implement"}, claude_assistant("done"), claude_result(BUILT)],
    ]}))
    done = wf.run("--json", "--idle-timeout", "1", env=env, timeout=120)
    doc = done.json()
    assert done.code == 0, (done.err, [(t["status"], t["stage"], t["detail"]) for t in doc["tasks"]])
    task = _landed(wf, doc, "31.1")
    assert wf.remote_file("work-31.1.txt") == "done by claude"
    first, second = _calls(calls_dir)
    assert not Path(f"/proc/{first['pid']}").exists()  # the idle CLI's group was killed
    session = first["argv"][first["argv"].index("--session-id") + 1]
    assert "--resume" not in first["argv"]
    assert second["argv"][second["argv"].index("--resume") + 1] == session
    assert "--session-id" not in second["argv"]
    assert first["env"]["HARN_STAGE"] == second["env"]["HARN_STAGE"] == "implement"
    assert (first["env"]["HARN_ATTEMPT"], second["env"]["HARN_ATTEMPT"]) == ("1", "2")
    assert first["cwd"] == second["cwd"]  # the same worktree, in place
    run = task["stages"]["implement"]["agentRun"]
    assert (run["adapter"], run["resumed"], run["sessionId"]) == ("claude", True, session)
    _two_logs(task, ["system", "assistant"], ["system", "assistant", "result"])
    assert doc["settings"]["idleTimeout"] == 1


def test_a_claude_implement_that_dies_without_a_final_event_is_resumed(tmp_path: Path) -> None:
    env, calls_dir = _fake_bin(tmp_path)
    wf = _wf(tmp_path, "31.2", "claude")
    (calls_dir / "scenario.json").write_text(json.dumps({"runs": [
        [claude_init(), claude_assistant("half way"), {"exit": 0}],  # exit 0, but no result event
        [claude_init(), {"work": "implement"}, claude_result(BUILT)],
    ]}))
    done = wf.run("--json", "--idle-timeout", "5", env=env)
    doc = done.json()
    assert done.code == 0, (done.err, [(t["status"], t["stage"], t["detail"]) for t in doc["tasks"]])
    task = _landed(wf, doc, "31.2")
    first, second = _calls(calls_dir)
    session = first["argv"][first["argv"].index("--session-id") + 1]
    assert second["argv"][second["argv"].index("--resume") + 1] == session
    run = task["stages"]["implement"]["agentRun"]
    assert run["resumed"] is True and run["sessionId"] == session
    _two_logs(task, ["system", "assistant"], ["system", "result"])


def test_a_codex_implement_that_dies_is_resumed_with_exec_resume(tmp_path: Path) -> None:
    env, calls_dir = _fake_bin(tmp_path)
    wf = _wf(tmp_path, "31.3", "codex")
    (calls_dir / "scenario.json").write_text(json.dumps({"runs": [
        [codex_started(), {"event": {"type": "turn.started"}}, codex_item("half way"), {"exit": 1}],
        [codex_started(), {"event": {"type": "turn.started"}}, {"work": "implement"}, codex_item("done"),
         codex_completed(), {"answer": BUILT}],
    ]}))
    done = wf.run("--json", "--idle-timeout", "5", env=env)
    doc = done.json()
    assert done.code == 0, (done.err, [(t["status"], t["stage"], t["detail"]) for t in doc["tasks"]])
    task = _landed(wf, doc, "31.3")
    assert wf.remote_file("work-31.3.txt") == "done by codex"
    first, second = _calls(calls_dir)
    thread = f"thread-{first['pid']}"  # what the fake named in thread.started
    assert "resume" not in first["argv"]
    argv = second["argv"]
    assert argv[1] == "exec" and argv[-3:] == ["resume", thread, "-"], argv
    run = task["stages"]["implement"]["agentRun"]
    assert (run["adapter"], run["resumed"], run["sessionId"]) == ("codex", True, thread)
    _two_logs(task, ["thread.started", "turn.started", "item.completed"],
              ["thread.started", "turn.started", "item.completed", "turn.completed"])


def test_a_rate_limit_then_silence_keeps_the_reset_time_the_cli_named(tmp_path: Path) -> None:
    """The adapter parses resetsAt; the idle time-out ends the stage; the task
    still says when the provider takes work again (issue 23 item 7)."""
    env, calls_dir = _fake_bin(tmp_path)
    wf = _wf(tmp_path, "31.7", "claude")
    (calls_dir / "scenario.json").write_text(json.dumps({"runs": [
        [claude_init(), {"event": {"type": "rate_limit_event", "rate_limit_info": {
            "status": "rejected", "resetsAt": 1893456000, "rateLimitType": "five_hour"}}}, {"sleep": 60}],
    ]}))
    done = wf.run("--json", "--idle-timeout", "1", env=env, timeout=120)
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert (task["status"], task["fault"]) == ("provider-fault", "provider"), task["detail"]
    assert "reset at 2030-01-01T00:00:00Z" in task["detail"], task["detail"]
    implement = task["stages"]["implement"]
    assert (implement["fault"], implement["resetAt"]) == ("provider", "2030-01-01T00:00:00Z")
    assert len(_calls(calls_dir)) == 1  # a provider fault is not retried
