"""The adapters against the real CLIs: Claude Code and Codex CLI as
``.ci/run`` installs them from npm (the versions it pins, listed in the
README), run with no network (``unshare -n``) and no credentials, through
the adapters' exact argv and through ``git harn workflow run`` / ``check``.

Each test is one bullet of what the real CLIs do (issue 22); the comments
say what the CLI printed when these tests were written. Bounded the way a
run bounds them: Claude Code's own retries with ``CLAUDE_CODE_MAX_RETRIES``
(about 180 s at its default of 10), codex's reconnects by the idle clock.
Skipped, with the reason, where the CLIs or ``unshare -n`` are not there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from git_harn.tasks.config import AgentSettings, parse_toml, workflow_settings
from git_harn.workflow.agents import adapters
from git_harn.workflow.agents.adapters import codex
from git_harn.workflow.agents.adapters.starter import SECTIONS
from git_harn.workflow.agents.retries import run_in_place
from git_harn.workflow.agents.stages import AgentSession
from tests.kit.adapter_fakes import agent, created, install
from tests.kit.harn import assert_valid, harn
from tests.kit.real_clis import FAKE_CLAUDE_KEY, FAKE_CODEX_KEY, command, env, needs_real_clis, scrub
from tests.kit.workflow_repo import setup

pytestmark = [pytest.mark.real_cli, needs_real_clis()]

CLAUDE_SESSION = "0b3f5c2e-1111-4222-a401-444455556666"  # "a401": once read as HTTP 401
CODEX_THREAD = "0199aaaa-bbbb-7ccc-a429-eeeeeeeeeeee"  # "a429": once read as HTTP 429


def real(adapter: str, stage: str = "plan", **more: Any) -> AgentSettings:
    """The real CLI with no network; a claude that starts slowly on a busy machine is not idle."""
    more.setdefault("idleTimeout", 40.0)
    return dataclasses.replace(agent(adapter, stage, **more), command=command(adapter))


def _log(outcome: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(outcome.agentRun["log"]).read_text().splitlines()]


def test_claude_without_a_key_is_an_auth_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an assistant event with top-level error "authentication_failed", model "<synthetic>", text
    # "Not logged in · Please run /login"; a result subtype "success", is_error true; exit 1 in 1-3 s
    kit = install(tmp_path, monkeypatch)
    scrub(monkeypatch, tmp_path)
    started = time.monotonic()
    outcome = kit.run(real("claude"))
    assert time.monotonic() - started < 20
    assert (outcome.fault, outcome.exitCode, outcome.faultKind) == ("auth", 77, "claude-authentication_failed")
    assert "Not logged in · Please run /login" in outcome.detail
    synthetic = [e for e in _log(outcome) if e["type"] == "assistant"]
    assert synthetic and synthetic[0]["error"] == "authentication_failed"
    assert synthetic[0]["message"]["model"] == "<synthetic>"
    result = next(e for e in _log(outcome) if e["type"] == "result")
    assert (result["subtype"], result["is_error"], result["total_cost_usd"]) == ("success", True, 0)


def test_claude_with_a_key_and_no_network_is_infra_network_unreachable(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # api_retry events with error "unknown", error_status null and float delays (10 of them, about
    # 180 s, by default), then "API Error: Unable to connect to API (ConnectionRefused)" as a synthetic
    # assistant message with top-level error "server_error"; exit 1
    kit = install(tmp_path, monkeypatch)
    scrub(monkeypatch, tmp_path, ANTHROPIC_API_KEY=FAKE_CLAUDE_KEY, CLAUDE_CODE_MAX_RETRIES="2")
    started = time.monotonic()
    outcome = kit.run(real("claude"), timeout=60)
    assert time.monotonic() - started < 45
    assert (outcome.fault, outcome.faultKind) == ("infra", "claude-network-unreachable"), outcome.detail
    assert "network unreachable" in outcome.detail and "Unable to connect to API" in outcome.detail
    retries = [e for e in _log(outcome) if e.get("subtype") == "api_retry"]
    assert len(retries) == 2 and all(e["error_status"] is None for e in retries)


@pytest.mark.skipif(os.geteuid() != 0, reason="Claude Code refuses to bypass permissions as root only")
@pytest.mark.parametrize("args", [["--dangerously-skip-permissions"], ["--permission-mode", "bypassPermissions"],
                                  ["--allow-dangerously-skip-permissions"]])
def test_claude_as_root_without_is_sandbox_is_a_config_fault_tried_once(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       args: list[str]) -> None:
    # one stderr line, "--dangerously-skip-permissions cannot be used with root/sudo privileges for
    # security reasons", exit 1 in about 1.5 s; IS_SANDBOX=yes or true is refused the same way
    kit = install(tmp_path, monkeypatch)
    scrub(monkeypatch, tmp_path, IS_SANDBOX="yes")
    kit.ctx.stage_attempts = 3
    outcome = run_in_place(kit.ctx, real("claude", args=args), 1, 30)
    assert (outcome.fault, outcome.exitCode, outcome.tries) == ("config", 78, 1), outcome.detail
    assert "cannot be used with root/sudo privileges" in outcome.detail


def test_claude_resume_of_a_missing_session_is_infra_and_the_next_attempt_starts_afresh(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # only a result: subtype "error_during_execution", errors ["No conversation found with session ID: …"],
    # neither result nor terminal_reason; the same words on stderr; exit 1
    kit = install(tmp_path, monkeypatch)
    scrub(monkeypatch, tmp_path, ANTHROPIC_API_KEY=FAKE_CLAUDE_KEY, CLAUDE_CODE_MAX_RETRIES="0")
    kit.ctx.sessions["plan"] = AgentSession(CLAUDE_SESSION, "claude", faulted=True)
    outcome = kit.run(real("claude"), attempt=2)
    assert outcome.agentRun is not None and outcome.agentRun["resumed"] is True
    assert (outcome.fault, outcome.faultKind) == ("infra", "claude-session-not-found"), outcome.detail
    assert f"No conversation found with session ID: {CLAUDE_SESSION}" in outcome.detail
    assert "plan" not in kit.ctx.sessions
    result = next(e for e in _log(outcome) if e["type"] == "result")
    assert result["subtype"] == "error_during_execution" and result["errors"] and "result" not in result


@pytest.mark.parametrize("key", [{}, {"CODEX_API_KEY": FAKE_CODEX_KEY}, {"OPENAI_API_KEY": FAKE_CODEX_KEY}])
def test_codex_without_login_or_network_is_infra_network_unreachable_within_the_idle_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: dict[str, str]) -> None:
    # the -o file is created empty at once; thread.started, turn.started, then "Reconnecting... n/5 (stream
    # disconnected before completion: failed to lookup address information: Try again)" every 5-8 s, an
    # item.completed of type "error", then "Reconnecting... waiting for network" every ~30 s for ever;
    # stderr: a WARNING line and timestamped ERROR lines ("failed to connect to Responses WebSocket",
    # "failed to refresh available models: request timed out" with a key)
    kit = install(tmp_path, monkeypatch)
    scrub(monkeypatch, tmp_path, **key)
    started = time.monotonic()
    outcome = kit.run(real("codex", idleTimeout=8.0), timeout=60)
    assert time.monotonic() - started < 30
    assert (outcome.fault, outcome.faultKind) == ("infra", "codex-network-unreachable"), outcome.detail
    assert "network unreachable" in outcome.detail
    [answer] = (kit.ctx.scratch / "stages").glob("*/8.1-plan-1.answer.json")  # the attempt's own folder [T4]
    assert answer.exists() and answer.read_text() == ""  # an empty -o file is no report
    assert kit.report(outcome)["fault"]["class"] == "infra"


def test_codex_resume_of_a_missing_thread_is_no_provider_fault(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # "Error: thread/resume: thread/resume failed: no rollout found for thread id … (code -32600)", exit 1
    kit = install(tmp_path, monkeypatch)
    scrub(monkeypatch, tmp_path)
    kit.ctx.sessions["plan"] = AgentSession(CODEX_THREAD, "codex", faulted=True)
    outcome = kit.run(real("codex", idleTimeout=20.0), attempt=2, timeout=60)
    assert (outcome.fault, outcome.faultKind) == ("infra", "codex-session-not-found"), outcome.detail
    assert f"no rollout found for thread id {CODEX_THREAD}" in outcome.detail
    assert "plan" not in kit.ctx.sessions


def _starter_args(cli: str) -> list[tuple[str, ...]]:
    """The args of each stage of ``workflow init --agent <cli>``."""
    parsed = workflow_settings(parse_toml(SECTIONS[cli].encode(), "starter"), "starter")
    return [settings.args for settings in parsed.agents.values()]


def test_claude_accepts_the_argv_of_every_adapter_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a key the CLI parses its whole command line and then says it is not logged in: an auth
    fault, never the config fault an unknown option or value makes (the last case shows that it would)."""
    kit = install(tmp_path, monkeypatch)
    scrub(monkeypatch, tmp_path)
    for args in _starter_args("claude"):
        settings = real("claude", model="sonnet", maxTurns=3, maxBudgetUsd=0.5, args=args)
        assert kit.run(settings).fault == "auth", args
    kit.ctx.sessions["plan"] = AgentSession(CLAUDE_SESSION, "claude", faulted=True)
    resumed = kit.run(real("claude", model="sonnet"), attempt=2)  # it looks the session up before the login
    assert resumed.agentRun is not None and resumed.agentRun["resumed"]
    assert resumed.faultKind == "claude-session-not-found", resumed.detail
    refused = kit.run(real("claude", args=["--permission-mode", "no-such-mode"]))
    assert refused.fault == "config", refused.detail


def test_codex_accepts_the_argv_of_every_adapter_setting(tmp_path: Path) -> None:
    """codex parses the adapter's whole argv, resume included, before --help takes over (exit 0); an
    unknown option or value is refused first (exit 2)."""
    schema, answer = tmp_path / "schema.json", tmp_path / "answer.json"
    schema.write_text("{}")
    cases = [(args, resume) for args in _starter_args("codex") for resume in (None, CODEX_THREAD)]
    for args, resume in cases:
        argv = codex.argv(real("codex", model="gpt-5-codex", args=args), tmp_path, schema, answer, resume)
        assert argv[-1] == "-"
        done = subprocess.run([*argv[:-1], "--help"], capture_output=True, text=True, env=env(tmp_path),
                              timeout=30, check=False)
        assert done.returncode == 0, (args, resume, done.stderr)
    bad = codex.argv(real("codex", args=("--sandbox", "no-such-mode")), tmp_path, schema, answer, None)
    done = subprocess.run([*bad[:-1], "--help"], capture_output=True, text=True, env=env(tmp_path), timeout=30,
                          check=False)
    assert done.returncode == 2 and "invalid value" in done.stderr


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_the_clis_own_login_checks_refuse_in_seconds(tmp_path: Path, cli: str) -> None:
    # claude auth status --text: "Not logged in. Run claude auth login to authenticate.", exit 1;
    # codex login status: "Not logged in" (stderr, after a WARNING line), exit 1, keys or not
    (check,) = adapters.login_checks([real(cli)], {})
    started = time.monotonic()
    done = subprocess.run(check.argv, capture_output=True, text=True, env=env(tmp_path), timeout=30, check=False)
    assert time.monotonic() - started < 10
    assert done.returncode == 1 and "Not logged in" in done.stdout + done.stderr


def _config(plan: str, review: str, implement: str | None = None) -> str:
    def table(stage: str, cli: str) -> str:
        return f'[agents.{stage}]\nadapter = "{cli}"\ncommand = {json.dumps(command(cli))}\n'
    middle = table("implement", implement) if implement else '[agents.implement]\ncommand = ["true"]\n'
    return (f"[workflow]\nstageTimeout = 60\n\n{table('plan', plan)}\n{middle}\n{table('review', review)}\n"
            '[agents.integrate]\ncommand = "builtin"\n\n[gates]\ncommands = [["true"]]\n')


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_a_run_without_a_credential_stops_after_one_auth_line_with_nothing_created(tmp_path: Path,
                                                                                   cli: str) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.7 Needs a login\n", config=_config(cli, cli, cli))
    before = created(wf.work)
    started = time.monotonic()
    done = wf.run(env=env(tmp_path))
    assert time.monotonic() - started < 30
    said = [line for line in (done.out + done.err).splitlines() if line.strip()]
    assert done.code == 3 and len(said) == 5, said
    assert said[1].startswith("halted: auth preflight unshare -n ") and "Not logged in" in said[1], said
    # the run-level advice: relaunch once the credential works (why on the indented line)
    assert said[2] == "next: git harn workflow run" and "credential" in said[3], said
    assert said[4] == "0 tasks: blocked: auth-preflight-failed"
    assert created(wf.work) == before


def test_live_check_without_network_ends_in_seconds_per_agent_and_says_why(tmp_path: Path) -> None:
    """Logged in by key, so each CLI gets the no-op prompt: claude's retries are cut to one, codex is
    ended by the check's idle bound; both say network unreachable."""
    wf = setup(tmp_path, config=_config("claude", "codex"))
    started = time.monotonic()
    done = harn(wf.work, "workflow", "check", "--live", "--json", timeout=120,
                env=env(tmp_path, ANTHROPIC_API_KEY=FAKE_CLAUDE_KEY, CODEX_API_KEY=FAKE_CODEX_KEY))
    took = time.monotonic() - started
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-check")
    by_stage = {a["stage"]: a for a in doc["agents"]}
    assert took < 60, took  # two live agents, under 30 s each
    for stage in ("plan", "review"):
        live = by_stage[stage]["live"]
        assert live["seconds"] < 30 and (live["fault"], live["signal"]) == ("infra", "network unreachable"), live
        assert "network unreachable" in by_stage[stage]["problems"][0]
