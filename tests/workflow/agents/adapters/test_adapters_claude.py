"""The Claude Code adapter: a fake `claude` replays recorded stream-json
streams; the stage outcome, the report at $HARN_REPORT and the kept log say
what the adapter made of them. The exit code alone never decides."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.kit.adapter_fakes import (
    CLAUDE_NO_NETWORK,
    CLAUDE_NOT_LOGGED_IN,
    CLAUDE_ROOT_REFUSAL,
    PLAN_OK,
    agent,
    claude_assistant,
    claude_failed_result,
    claude_init,
    claude_no_network,
    claude_no_session,
    claude_not_logged_in,
    claude_ok,
    claude_refused,
    claude_result,
    claude_synthetic,
    install,
)


def test_clean_success_writes_structured_output_as_the_report_and_keeps_the_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([claude_ok()])
    outcome = kit.run(agent("claude", model="claude-sonnet", maxTurns=30, maxBudgetUsd=2.5,
                            args=["--permission-mode", "acceptEdits"]))
    assert (outcome.ok, outcome.fault, outcome.exitCode) == (True, None, 0), outcome.detail
    assert outcome.summary == "planned it"
    assert kit.report(outcome) == PLAN_OK
    run = outcome.agentRun
    assert run is not None
    call = kit.calls()[0]
    argv = call["argv"][1:]
    assert argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--model") + 1] == "claude-sonnet"
    assert argv[argv.index("--max-turns") + 1] == "30"
    assert argv[argv.index("--max-budget-usd") + 1] == "2.5"
    assert argv[-2:] == ["--permission-mode", "acceptEdits"]
    schema = json.loads(argv[argv.index("--json-schema") + 1])
    assert schema["additionalProperties"] is False and schema["required"] == ["ok", "summary"]
    # the session was pre-assigned and is what the stream named
    assert run["sessionId"] == argv[argv.index("--session-id") + 1] and run["resumed"] is False
    assert run["usage"] == {"inputTokens": 1000, "outputTokens": 200, "cachedInputTokens": 75,
                            "costUsd": 0.0123, "turns": 4}
    # the event stream is kept, line for line, beside the stage's report
    log = Path(run["log"])
    assert log.parent == kit.ctx.scratch and log.name == "8.1-plan-1.events.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["type"] for e in lines] == ["system", "assistant", "result"]
    assert run["events"] == 3


def test_the_prompt_goes_on_stdin_never_on_the_command_line(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([claude_ok()])
    kit.run(agent("claude"))
    call = kit.calls()[0]
    assert "Adapt; rm -rf /" in call["stdin"] and "UNTRUSTED TASK CONTEXT" in call["stdin"]
    assert "output schema" in call["stdin"]
    assert not any("rm -rf" in word or "UNTRUSTED" in word or "ExecPlan" in word for word in call["argv"])
    assert call["env"]["HARN_STAGE"] == "plan" and call["cwd"] == str(kit.ctx.worktree)


@pytest.mark.parametrize(("status", "fault", "code"), [(429, "provider", 75), (529, "provider", 75),
                                                         (500, "provider", 75), (401, "auth", 77)])
def test_is_error_with_api_error_status_is_classified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      status: int, fault: str, code: int) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), claude_result(is_error=True, subtype="error_during_execution", status=status,
                                                text=f"API Error: {status}")]])
    outcome = kit.run(agent("claude"))
    assert (outcome.ok, outcome.fault, outcome.exitCode) == (False, fault, code), outcome.detail
    assert f"HTTP {status}" in outcome.detail
    report = kit.report(outcome)
    assert report["fault"]["class"] == fault and report["fault"]["httpStatus"] == status


def test_subtype_success_with_is_error_true_is_not_a_success(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), claude_result(PLAN_OK, is_error=True, subtype="success", status=529,
                                                text="API Error: Repeated 529 Overloaded errors")]])
    outcome = kit.run(agent("claude"))
    assert (outcome.ok, outcome.fault, outcome.exitCode) == (False, "provider", 75)
    assert kit.report(outcome)["fault"]["httpStatus"] == 529


@pytest.mark.parametrize("text", ["Invalid API key · Please run /login", "OAuth token has expired",
                                  "Failed to authenticate. API Error: 401"])
def test_auth_texts_are_auth_faults_even_with_exit_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        text: str) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), claude_assistant(text),
                   claude_result(is_error=True, subtype="success", text=text), {"exit": 0}]])
    outcome = kit.run(agent("claude"))
    assert (outcome.fault, outcome.exitCode) == ("auth", 77), outcome.detail
    assert kit.report(outcome)["fault"]["class"] == "auth"


def test_rejected_rate_limit_then_silence_is_a_provider_fault_at_the_idle_timeout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    resets = 1893456000  # 2030-01-01T00:00:00Z
    kit.scenario([[claude_init(), {"event": {"type": "rate_limit_event", "rate_limit_info": {
        "status": "rejected", "resetsAt": resets, "rateLimitType": "five_hour"}}}, {"sleep": 60}]])
    started = time.monotonic()
    outcome = kit.run(agent("claude", idleTimeout=1.0))
    assert time.monotonic() - started < 15  # the idle clock, not the stage's 30 s
    assert (outcome.fault, outcome.exitCode) == ("provider", 75), outcome.detail
    fault = kit.report(outcome)["fault"]
    assert fault["class"] == "provider" and fault["resetAt"] == "2030-01-01T00:00:00Z"
    assert outcome.agentRun is not None and outcome.agentRun["cliExitCode"] is None
    pid = kit.calls()[0]["pid"]
    assert not Path(f"/proc/{pid}").exists()  # its process group was killed


def test_an_idle_stream_without_rate_limits_is_an_infra_fault(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), claude_assistant("thinking"), {"sleep": 60}]])
    outcome = kit.run(agent("claude", idleTimeout=1.0))
    assert (outcome.fault, outcome.exitCode) == ("infra", 70)
    assert "idle" in outcome.detail and kit.report(outcome)["fault"]["class"] == "infra"


def test_retries_against_a_rate_limit_then_death_is_a_provider_fault(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    retry = {"event": {"type": "system", "subtype": "api_retry", "attempt": 3, "max_retries": 10,
                       "retry_delay_ms": 4000, "error_status": 429, "error": "rate_limit", "session_id": "$SESSION"}}
    kit.scenario([[claude_init(), claude_assistant("working"), retry, retry, {"exit": 1}]])
    outcome = kit.run(agent("claude"))
    assert (outcome.fault, outcome.exitCode) == ("provider", 75)
    assert "retried" in outcome.detail


def test_a_retry_that_worked_does_not_make_a_success_a_fault(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    retry = {"event": {"type": "system", "subtype": "api_retry", "attempt": 1, "error_status": 529,
                       "error": "overloaded"}}
    kit.scenario([[claude_init(), retry, claude_assistant("back"), claude_result(PLAN_OK)]])
    outcome = kit.run(agent("claude"))
    assert (outcome.ok, outcome.fault) == (True, None)


def test_exit_zero_without_a_final_event_is_an_infra_fault(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), claude_assistant("half way"), {"exit": 0}]])
    outcome = kit.run(agent("claude"))
    assert (outcome.ok, outcome.fault, outcome.exitCode) == (False, "infra", 70)
    assert "without a final event" in outcome.detail


def test_exit_one_after_a_valid_result_is_the_ordinary_path(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[*claude_ok(), {"stderr": "error: something while shutting down"}, {"exit": 1}]])
    outcome = kit.run(agent("claude"))
    assert (outcome.ok, outcome.fault, outcome.exitCode) == (True, None, 0), outcome.detail
    assert outcome.agentRun is not None and outcome.agentRun["cliExitCode"] == 1
    assert kit.report(outcome) == PLAN_OK


def test_a_final_event_without_structured_output_is_an_invalid_report(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), claude_result(None, text="I did it, trust me")]])
    outcome = kit.run(agent("claude"))
    assert (outcome.ok, outcome.fault, outcome.faultKind) == (False, "infra", "invalid-report")
    assert "final event without a report" in outcome.detail


def test_an_answer_off_the_schema_is_refused_by_the_judge(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), claude_result({"ok": "yes", "summary": 3})]])
    outcome = kit.run(agent("claude"))
    assert (outcome.ok, outcome.fault, outcome.faultKind) == (False, "infra", "invalid-report")
    assert "does not match the plan report schema" in outcome.detail


def test_the_stage_timeout_kills_a_chatty_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), *[step for _ in range(100) for step in (claude_assistant("."), {"sleep": 0.2})]]])
    outcome = kit.run(agent("claude", idleTimeout=5.0), timeout=1.5)
    assert outcome.fault == "infra" and "timed out" in outcome.detail
    assert outcome.agentRun is not None and outcome.agentRun["signal"] == "time-out"


def test_a_retry_after_a_fault_resumes_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), claude_assistant("half way"), {"exit": 1}], claude_ok(), claude_ok()])
    first = kit.run(agent("claude"), attempt=1)
    assert first.fault == "infra" and first.agentRun is not None
    session = first.agentRun["sessionId"]
    second = kit.run(agent("claude"), attempt=2)
    assert (second.ok, second.fault) == (True, None)
    argv = kit.calls()[1]["argv"]
    assert argv[argv.index("--resume") + 1] == session and "--session-id" not in argv
    assert second.agentRun is not None and second.agentRun["resumed"] is True
    assert second.agentRun["sessionId"] == session
    assert kit.report(second) == PLAN_OK
    # after a success, a later attempt (a new round) starts afresh
    third = kit.run(agent("claude"), attempt=3)
    assert "--resume" not in kit.calls()[2]["argv"] and third.agentRun is not None
    assert third.agentRun["resumed"] is False


def test_a_missing_executable_is_a_config_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([claude_ok()])
    missing = agent("claude")
    outcome = kit.run(type(missing)(**{**missing.__dict__, "command": [str(tmp_path / "no-such-claude")]}))
    assert (outcome.fault, outcome.faultKind) == ("config", "claude-could-not-start")
    assert "could not start" in outcome.detail and "No such file or directory" in outcome.detail


def test_a_session_that_cannot_be_resumed_is_started_afresh_next_time(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), {"exit": 1}],
                  [{"stderr": "No conversation found with session ID"}, {"exit": 1}],
                  claude_ok()])
    assert kit.run(agent("claude"), attempt=1).fault == "infra"
    resumed = kit.run(agent("claude"), attempt=2)
    assert resumed.fault == "infra" and "--resume" in kit.calls()[1]["argv"]
    fresh = kit.run(agent("claude"), attempt=3)
    assert fresh.ok and "--resume" not in kit.calls()[2]["argv"] and "--session-id" in kit.calls()[2]["argv"]


# --- the real CLI's shapes (Claude Code 2.1.197, no network, no credentials) -------------------------

def test_no_key_is_an_auth_fault_from_the_top_level_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([claude_not_logged_in()])
    outcome = kit.run(agent("claude"))
    assert (outcome.fault, outcome.exitCode, outcome.faultKind) == ("auth", 77, "claude-authentication_failed")
    assert CLAUDE_NOT_LOGGED_IN in outcome.detail
    assert outcome.agentRun is not None and outcome.agentRun["usage"]["costUsd"] == 0.0  # an integer cost


def test_connection_refused_after_null_status_retries_is_infra_network_unreachable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([claude_no_network(retries=3)])
    outcome = kit.run(agent("claude"))
    assert (outcome.fault, outcome.faultKind) == ("infra", "claude-network-unreachable"), outcome.detail
    assert "network unreachable" in outcome.detail and CLAUDE_NO_NETWORK in outcome.detail
    report = kit.report(outcome)
    assert report["fault"]["class"] == "infra" and CLAUDE_NO_NETWORK in report["fault"]["message"]


@pytest.mark.parametrize("error", ["rate_limit", "overloaded", "server_error", "billing_error"])
def test_a_provider_error_on_the_assistant_event_is_a_provider_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    error: str) -> None:
    kit = install(tmp_path, monkeypatch)
    text = "API Error: the request was refused"
    kit.scenario([[claude_init(), claude_synthetic(error, text), claude_failed_result(text), {"exit": 1}]])
    outcome = kit.run(agent("claude"))
    assert (outcome.fault, outcome.exitCode) == ("provider", 75), outcome.detail
    assert text in outcome.detail


def test_resuming_a_missing_session_reads_errors_and_starts_afresh_next(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The session id holds "a401": no auth fault is read out of it."""
    kit = install(tmp_path, monkeypatch)
    session = "0b3f5c2e-1111-4222-a401-444455556666"
    kit.scenario([[claude_init(), {"exit": 1}], claude_no_session(session), claude_ok()])
    kit.ctx.sessions.clear()
    first = kit.run(agent("claude"), attempt=1)
    assert first.fault == "infra"
    kit.ctx.sessions["plan"].id = session
    resumed = kit.run(agent("claude"), attempt=2)
    assert kit.calls()[1]["argv"][kit.calls()[1]["argv"].index("--resume") + 1] == session
    assert (resumed.fault, resumed.faultKind) == ("infra", "claude-session-not-found"), resumed.detail
    assert f"No conversation found with session ID: {session}" in resumed.detail
    assert "plan" not in kit.ctx.sessions  # dropped: the next attempt starts afresh
    fresh = kit.run(agent("claude"), attempt=3)
    assert fresh.ok and "--session-id" in kit.calls()[2]["argv"]


@pytest.mark.parametrize("line", [CLAUDE_ROOT_REFUSAL, "error: unknown option '--no-such-flag'"])
def test_a_refusal_that_will_repeat_is_a_config_fault_with_the_clis_words(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          line: str) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([claude_refused(line)])
    outcome = kit.run(agent("claude"))
    assert (outcome.fault, outcome.exitCode) == ("config", 78), outcome.detail
    assert line in outcome.detail and kit.report(outcome)["fault"]["class"] == "config"


def test_statuses_are_never_read_out_of_a_session_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), {"stderr": "resuming 0b3f5c2e-1111-4222-a401-444455556666 (a429, 0529)"},
                   {"exit": 1}]])
    outcome = kit.run(agent("claude"))
    assert (outcome.fault, outcome.faultKind) == ("infra", "claude-no-final-event"), outcome.detail
    assert "exited with 1 without a final event | resuming 0b3f5c2e" in outcome.detail
