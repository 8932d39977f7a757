"""The Codex CLI adapter: a fake `codex` replays recorded `codex exec --json`
streams and writes its -o file as the real one does (only after
turn.completed); codex exits 0 or 1, so the stream decides."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.kit.adapter_fakes import (
    CODEX_FALLBACK,
    CODEX_WAITING,
    PLAN_OK,
    agent,
    codex_completed,
    codex_error,
    codex_failed,
    codex_item,
    codex_no_network,
    codex_ok,
    codex_started,
    install,
)

REVIEW = {"verdict": "changes-requested", "summary": "one thing",
          "findings": [{"severity": "blocking", "text": "fix it", "path": ""},
                       {"severity": "advisory", "text": "nit", "path": "src/app.py"}]}


def test_clean_success_reads_the_o_file_as_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([codex_ok()])
    outcome = kit.run(agent("codex", model="gpt-5-codex", args=["--sandbox", "workspace-write"]))
    assert (outcome.ok, outcome.fault, outcome.exitCode) == (True, None, 0), outcome.detail
    assert kit.report(outcome) == PLAN_OK
    call = kit.calls()[0]
    argv = call["argv"][1:]
    assert argv[:4] == ["exec", "--json", "-C", str(kit.ctx.worktree)]
    assert argv[-1] == "-" and "resume" not in argv
    assert argv[argv.index("--model") + 1] == "gpt-5-codex"
    assert argv[-3:-1] == ["--sandbox", "workspace-write"]
    schema = json.loads(Path(argv[argv.index("--output-schema") + 1]).read_text())
    assert schema == {"type": "object", "properties": {"ok": {"type": "boolean"}, "summary": {"type": "string"}},
                      "required": ["ok", "summary"], "additionalProperties": False}
    run = outcome.agentRun
    assert run is not None
    assert run["sessionId"].startswith("thread-") and run["resumed"] is False
    assert run["usage"] == {"inputTokens": 2000, "outputTokens": 300, "cachedInputTokens": 500,
                            "costUsd": None, "turns": 1}
    log = Path(run["log"])
    assert [json.loads(line)["type"] for line in log.read_text().splitlines()] == [
        "thread.started", "turn.started", "item.completed", "turn.completed"]
    # the prompt went on stdin (closed after it, or codex would wait), never on the command line
    assert "Adapt; rm -rf /" in call["stdin"]
    assert not any("rm -rf" in word or "UNTRUSTED" in word for word in call["argv"])


def test_a_review_answer_in_the_strict_shape_becomes_a_protocol_report(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([codex_ok(REVIEW)])
    outcome = kit.run(agent("codex", stage="review"), reviewer=2)
    assert outcome.fault is None and outcome.ok is False  # changes requested
    report = kit.report(outcome)
    assert report["findings"] == [{"severity": "blocking", "text": "fix it"},
                                  {"severity": "advisory", "text": "nit", "path": "src/app.py"}]
    schema = json.loads(Path(kit.calls()[0]["argv"][kit.calls()[0]["argv"].index("--output-schema") + 1])
                        .read_text())
    finding = schema["properties"]["findings"]["items"]
    assert finding["additionalProperties"] is False and finding["required"] == ["severity", "text", "path"]


@pytest.mark.parametrize(("text", "fault"), [
    ("exceeded retry limit, last status: 429 Too Many Requests", "provider"),
    ("You've hit your usage limit. Upgrade to Pro or try again in 2 hours 5 minutes.", "provider"),
    ("We're currently experiencing high demand, which may cause temporary errors.", "provider"),
    ("unexpected status 401 Unauthorized: Missing bearer or basic authentication in header", "auth"),
    ("Your access token could not be refreshed (refresh_token_invalidated). Please log out and sign in again.",
     "auth"),
    ("Missing environment variable: `OPENAI_API_KEY`.", "auth"),
])
def test_turn_failed_texts_are_classified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                                          fault: str) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[codex_started(), {"event": {"type": "turn.started"}}, codex_error(text), codex_failed(text),
                   {"exit": 1}]])
    outcome = kit.run(agent("codex"))
    assert (outcome.ok, outcome.fault, outcome.exitCode) == (False, fault, 75 if fault == "provider" else 77)
    report = kit.report(outcome)
    assert report["fault"]["class"] == fault and report["fault"]["message"] == text
    if "try again in 2 hours" in text:
        reset = time.mktime(time.strptime(report["fault"]["resetAt"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        assert abs(reset - (time.time() + 7500)) < 120


def test_an_auth_error_printed_before_any_event_is_an_auth_fault(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[{"stderr": "Error: Missing environment variable: `OPENAI_API_KEY`."}, {"exit": 1}]])
    outcome = kit.run(agent("codex"))
    assert (outcome.fault, outcome.exitCode) == ("auth", 77)


def test_a_missing_o_file_is_an_invalid_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[codex_started(), codex_item("done"), codex_completed()]])
    outcome = kit.run(agent("codex"))
    assert (outcome.ok, outcome.fault, outcome.faultKind, outcome.exitCode) == (False, "infra", "invalid-report", 0)
    assert "final event without a report" in outcome.detail
    assert kit.report(outcome) is None


def test_an_o_file_without_turn_completed_is_not_believed(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[codex_started(), codex_item("done"), {"answer": PLAN_OK}, {"exit": 0}]])
    outcome = kit.run(agent("codex"))
    assert (outcome.fault, outcome.exitCode) == ("infra", 70)
    assert "without a final event" in outcome.detail


def test_exit_one_after_a_valid_answer_is_the_ordinary_path(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[*codex_ok(), {"exit": 1}]])
    outcome = kit.run(agent("codex"))
    assert (outcome.ok, outcome.fault, outcome.exitCode) == (True, None, 0)
    assert outcome.agentRun is not None and outcome.agentRun["cliExitCode"] == 1


def test_errors_codex_retried_through_do_not_make_a_fault(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[codex_started(), codex_error("Reconnecting... 1/5 (stream disconnected: 503)"),
                   *codex_ok()[1:]]])
    outcome = kit.run(agent("codex"))
    assert (outcome.ok, outcome.fault) == (True, None)


def test_retries_then_silence_is_a_provider_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[codex_started(), codex_item("working"),
                   codex_error("Reconnecting... 2/5 (unexpected status 429 Too Many Requests)"), {"sleep": 60}]])
    outcome = kit.run(agent("codex", idleTimeout=1.0))
    assert (outcome.fault, outcome.exitCode) == ("provider", 75)
    assert "retried" in outcome.detail


def test_a_death_without_a_final_event_is_an_infra_fault(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[codex_started(), codex_item("working"), {"stderr": "thread 'main' panicked"}, {"exit": 101}]])
    outcome = kit.run(agent("codex"))
    assert (outcome.fault, outcome.exitCode) == ("infra", 101)
    assert kit.report(outcome)["fault"] == {"class": "infra", "httpStatus": None, "resetAt": None,
                                            "message": "codex exited with 101 without a final event | "
                                                       "thread 'main' panicked"}


def test_a_retry_after_a_fault_resumes_the_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[codex_started(), codex_item("half way"), {"exit": 1}], codex_ok()])
    first = kit.run(agent("codex"), attempt=1)
    assert first.fault == "infra" and first.agentRun is not None
    thread = first.agentRun["sessionId"]
    second = kit.run(agent("codex"), attempt=2)
    assert (second.ok, second.fault) == (True, None), second.detail
    argv = kit.calls()[1]["argv"]
    assert argv[-3:] == ["resume", thread, "-"]
    assert second.agentRun is not None and second.agentRun["resumed"] is True
    assert second.agentRun["sessionId"] == thread
    # the two reviewers are two sessions: reviewer 1's fault is not resumed by reviewer 2
    kit.scenario([[], [], [codex_started(), {"exit": 1}], codex_ok(REVIEW)])  # calls 3 and 4
    assert kit.run(agent("codex", stage="review"), attempt=1, reviewer=1).fault == "infra"
    assert kit.run(agent("codex", stage="review"), attempt=2, reviewer=2).fault is None
    assert "resume" not in kit.calls()[3]["argv"]


# --- the real CLI's shapes (codex-cli 0.171.0, no network) ------------------------------------------

def test_an_error_item_is_an_error_never_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reconnects, then an error item, then silence: before, the item cleared the errors, so the idle
    time-out said only "idle"; now the detail says the network could not be reached."""
    kit = install(tmp_path, monkeypatch)
    kit.scenario([codex_no_network(waiting=False)])
    started = time.monotonic()
    outcome = kit.run(agent("codex", idleTimeout=1.5))
    assert time.monotonic() - started < 15
    assert (outcome.fault, outcome.faultKind) == ("infra", "codex-network-unreachable"), outcome.detail
    assert CODEX_FALLBACK in outcome.detail or "failed to lookup address" in outcome.detail


def test_errors_do_not_keep_the_idle_clock_alive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    retry = codex_error("Reconnecting... 2/5 (stream disconnected before completion: 503 Service Unavailable)")
    kit.scenario([[codex_started(), {"event": {"type": "turn.started"}},
                   *[step for _ in range(40) for step in (retry, {"sleep": 0.25})]]])
    started = time.monotonic()
    outcome = kit.run(agent("codex", idleTimeout=2.0))
    assert time.monotonic() - started < 8  # an error every 0.25 s is not progress: idle after 2 s
    assert (outcome.fault, outcome.exitCode) == ("provider", 75) and "retried" in outcome.detail


def test_waiting_for_network_ends_the_run_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([codex_no_network(waiting=True)])
    started = time.monotonic()
    outcome = kit.run(agent("codex", idleTimeout=30.0))
    assert time.monotonic() - started < 10  # not the idle clock: codex said it would wait for ever
    assert (outcome.fault, outcome.faultKind, outcome.exitCode) == ("infra", "codex-network-unreachable", 70)
    assert CODEX_WAITING in outcome.detail
    [answer] = (kit.ctx.scratch / "stages").glob("*/8.1-plan-1.answer.json")  # the attempt's own folder
    assert answer.exists() and answer.read_text() == ""  # created empty at once, as the real one does
    assert kit.report(outcome)["fault"]["class"] == "infra"


def test_an_empty_o_file_after_turn_completed_is_no_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[codex_started(), codex_item("done"), codex_completed()]])
    outcome = kit.run(agent("codex"))
    [answer] = (kit.ctx.scratch / "stages").glob("*/8.1-plan-1.answer.json")  # the attempt's own folder
    assert answer.read_text() == ""
    assert (outcome.fault, outcome.faultKind) == ("infra", "invalid-report") and kit.report(outcome) is None


def test_a_thread_id_with_429_in_it_is_no_provider_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    thread = "0199aaaa-bbbb-7ccc-a429-eeeeeeeeeeee"
    kit.scenario([[codex_started(), {"exit": 1}],
                  [{"stderr": f"Error: thread/resume: thread/resume failed: no rollout found for thread id {thread} "
                              "(code -32600)"}, {"exit": 1}], codex_ok()])
    assert kit.run(agent("codex"), attempt=1).fault == "infra"
    kit.ctx.sessions["plan"].id = thread
    resumed = kit.run(agent("codex"), attempt=2)
    assert kit.calls()[1]["argv"][-3:] == ["resume", thread, "-"]
    assert (resumed.fault, resumed.faultKind) == ("infra", "codex-session-not-found"), resumed.detail
    assert "no rollout found" in resumed.detail and "plan" not in kit.ctx.sessions


@pytest.mark.parametrize("line", ["error: unexpected argument '--bogus' found",
                                  "error: invalid value 'bogus' for '--sandbox <SANDBOX_MODE>'"])
def test_a_refused_command_line_is_a_config_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[{"stderr": line}, {"stderr": "For more information, try '--help'."}, {"exit": 2}]])
    outcome = kit.run(agent("codex"))
    assert (outcome.fault, outcome.exitCode) == ("config", 78) and line in outcome.detail


def test_a_cli_killed_by_a_signal_is_described_by_the_signals_name(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[codex_started(), codex_item("working"), {"kill": 15}]])
    outcome = kit.run(agent("codex"))
    assert outcome.fault == "infra" and "codex was killed by SIGTERM without a final event" in outcome.detail
    assert "-15" not in outcome.detail  # it said "codex exited with -15"
