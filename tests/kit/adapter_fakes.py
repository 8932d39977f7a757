"""Shared by the adapter tests: fake `claude` and `codex` on PATH, recorded
event streams in the CLIs' documented formats, and a task context for
calling ``run_stage`` directly on a real repository."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from git_harn.git import open_repo
from git_harn.tasks.config import AgentSettings
from git_harn.workflow.agents.stages import Agents, StageOutcome, TaskContext, run_stage, stage_file_stem
from tests.kit.harn import all_refs, git, make_repo

FAKE = Path(__file__).resolve().parent / "fake_cli.py"
PLAN_OK = {"ok": True, "summary": "planned it"}
SESSION = "0b3f5c2e-1111-4222-8333-444455556666"


@dataclass
class Kit:
    tmp: Path
    calls_dir: Path
    ctx: TaskContext

    def scenario(self, runs: list[list[dict[str, Any]]]) -> None:
        (self.calls_dir / "scenario.json").write_text(json.dumps({"runs": runs}))

    def calls(self) -> list[dict[str, Any]]:
        found = sorted((self.calls_dir / "calls").glob("*.json"), key=lambda p: int(p.stem))
        return [json.loads(p.read_text()) for p in found]

    def run(self, agent: AgentSettings, attempt: int = 1, timeout: float = 30,
            reviewer: int | None = None) -> StageOutcome:
        return run_stage(self.ctx, agent, attempt, timeout, {"round": 1}, reviewer)

    def report(self, outcome: StageOutcome) -> Any:
        stem = stage_file_stem(self.ctx.task_id, outcome.stage, outcome.attempt, outcome.reviewer)
        path = self.ctx.scratch / f"{stem}.report.json"
        return json.loads(path.read_text()) if path.exists() else None


def created(work: Path) -> tuple[dict[str, str], str, list[str]]:
    """Refs, worktrees and git-harn's files of a clone: what a run may create
    (its folders are not: the runner lease's ``locks/`` stays, empty, as
    ``.git/refs/`` does)."""
    harnery = work / ".git" / "harnery"
    files = sorted(str(p.relative_to(harnery)) for p in harnery.rglob("*") if not p.is_dir()) \
        if harnery.exists() else []
    return all_refs(work), git(work, "worktree", "list", "--porcelain"), files


def fake_cli_env(tmp: Path) -> tuple[dict[str, str], Path]:
    """Fake ``claude`` and ``codex`` executables: the environment that puts
    them first on PATH, and the folder where they read scenarios and log calls."""
    bin_dir = tmp / "fakebin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        exe = bin_dir / name
        exe.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
        exe.chmod(0o755)
    calls_dir = tmp / "fake"
    calls_dir.mkdir()
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_CLI_DIR": str(calls_dir)}, calls_dir


def install(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Kit:
    """Fake CLIs first on PATH and a task context on a real repository."""
    env, calls_dir = fake_cli_env(tmp)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    repo_dir = make_repo(tmp / "repo")
    scratch = tmp / "scratch"
    scratch.mkdir()
    ctx = TaskContext(repo=open_repo(repo_dir), workflow_id="wf-test", task_id="8.1", title="Adapt; rm -rf /",
                      requires=[], branch="main", run_id="wf-test-8.1", worktree=repo_dir, remote="origin",
                      base="main", base_oid=git(repo_dir, "rev-parse", "HEAD"), plan_path="docs/execplans/8.1.md",
                      scratch=scratch, agents=Agents(), idle_timeout=5)
    return Kit(tmp, calls_dir, ctx)


def agent(adapter: str, stage: str = "plan", **more: Any) -> AgentSettings:
    return AgentSettings(stage, [adapter], None, "prompt", adapter, tuple(more.pop("args", ())), **more)


# --- recorded streams: Claude Code, `claude -p --output-format stream-json --verbose` ---------------

def claude_init() -> dict[str, Any]:
    return {"event": {"type": "system", "subtype": "init", "session_id": "$SESSION", "cwd": "/w",
                      "tools": ["Bash", "Edit"], "model": "claude-sonnet", "permissionMode": "acceptEdits",
                      "apiKeySource": "none"}}


def claude_assistant(text: str) -> dict[str, Any]:
    return {"event": {"type": "assistant", "session_id": "$SESSION",
                      "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                                  "usage": {"input_tokens": 3, "output_tokens": 2}}}}


def claude_result(structured: Any = None, *, is_error: bool = False, subtype: str = "success",
                  status: int | None = None, text: str = "done", cost: float = 0.0123) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "result", "subtype": subtype, "is_error": is_error, "duration_ms": 1200, "num_turns": 4,
        "result": text, "session_id": "$SESSION", "total_cost_usd": cost, "terminal_reason": "completed",
        "usage": {"input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 50,
                  "cache_creation_input_tokens": 25},
    }
    if structured is not None:
        event["structured_output"] = structured
    if status is not None:
        event["api_error_status"] = status
    return {"event": event}


def claude_ok(report: Any = None) -> list[dict[str, Any]]:
    return [claude_init(), claude_assistant("working"), claude_result(report or PLAN_OK)]


# What Claude Code 2.1.197 printed with no network (`unshare -n`) and no credentials, trimmed to the
# members the adapter reads (tests/workflow/agents/adapters/test_adapters_real.py runs the real one):

def claude_synthetic(error: str, text: str) -> dict[str, Any]:
    """The CLI's own assistant message about a failed request: a top-level
    ``error`` and ``model: "<synthetic>"``."""
    return {"event": {"type": "assistant", "session_id": "$SESSION", "error": error, "parent_tool_use_id": None,
                      "message": {"model": "<synthetic>", "role": "assistant", "stop_reason": "stop_sequence",
                                  "content": [{"type": "text", "text": text}],
                                  "usage": {"input_tokens": 0, "output_tokens": 0}}}}


def claude_failed_result(text: str) -> dict[str, Any]:
    """``subtype: "success"`` with ``is_error: true``, no status, an integer cost."""
    return {"event": {"type": "result", "subtype": "success", "is_error": True, "api_error_status": None,
                      "duration_ms": 172, "num_turns": 1, "result": text, "session_id": "$SESSION",
                      "total_cost_usd": 0, "terminal_reason": "completed",
                      "usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
                                "cache_creation_input_tokens": 0}}}


CLAUDE_NOT_LOGGED_IN = "Not logged in · Please run /login"
CLAUDE_NO_NETWORK = "API Error: Unable to connect to API (ConnectionRefused)"
CLAUDE_ROOT_REFUSAL = "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"


def claude_not_logged_in() -> list[dict[str, Any]]:
    """No key: exit 1 in 1–3 s."""
    return [claude_init(), claude_synthetic("authentication_failed", CLAUDE_NOT_LOGGED_IN),
            claude_failed_result(CLAUDE_NOT_LOGGED_IN), {"exit": 1}]


def claude_api_retry(attempt: int, delay_ms: float) -> dict[str, Any]:
    return {"event": {"type": "system", "subtype": "api_retry", "attempt": attempt, "max_retries": 10,
                      "retry_delay_ms": delay_ms, "error_status": None, "error": "unknown", "session_id": "$SESSION"}}


def claude_no_network(retries: int = 3) -> list[dict[str, Any]]:
    """A key but no network: its own retries (10 by default, about 180 s), then a connection error."""
    return [claude_init(), *[claude_api_retry(n, 567.752964734929 * n) for n in range(1, retries + 1)],
            claude_synthetic("server_error", CLAUDE_NO_NETWORK), claude_failed_result(CLAUDE_NO_NETWORK),
            {"exit": 1}]


def claude_no_session(session: str) -> list[dict[str, Any]]:
    """``--resume`` of a session it does not have: one result with ``errors[]``, no result text."""
    text = f"No conversation found with session ID: {session}"
    return [{"event": {"type": "result", "subtype": "error_during_execution", "duration_ms": 0, "is_error": True,
                       "num_turns": 0, "stop_reason": None, "session_id": session, "total_cost_usd": 0,
                       "usage": {"input_tokens": 0, "output_tokens": 0}, "errors": [text]}},
            {"stderr": text}, {"exit": 1}]


def claude_refused(line: str = CLAUDE_ROOT_REFUSAL) -> list[dict[str, Any]]:
    """As root with a bypass and without IS_SANDBOX=1, or an unknown option: one stderr line, exit 1."""
    return [{"stderr": line}, {"exit": 1}]


# --- recorded streams: Codex CLI, `codex exec --json` ---------------------------------------------

def codex_started() -> dict[str, Any]:
    return {"event": {"type": "thread.started", "thread_id": "$SESSION"}}


def codex_item(text: str) -> dict[str, Any]:
    return {"event": {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": text}}}


def codex_completed() -> dict[str, Any]:
    return {"event": {"type": "turn.completed",
                      "usage": {"input_tokens": 2000, "cached_input_tokens": 500, "output_tokens": 300}}}


def codex_failed(message: str) -> dict[str, Any]:
    return {"event": {"type": "turn.failed", "error": {"message": message}}}


def codex_error(message: str) -> dict[str, Any]:
    return {"event": {"type": "error", "message": message}}


# What codex-cli 0.171.0 printed with no network, logged in or not (it also creates the -o file
# empty at once, as the fake does): reconnects, an error *item*, then "waiting for network" for ever.

CODEX_RECONNECT = ("Reconnecting... {n}/5 (stream disconnected before completion: failed to lookup address "
                   "information: Try again)")
CODEX_FALLBACK = ("Falling back from WebSockets to HTTPS transport. stream disconnected before completion: failed to "
                  "lookup address information: Try again")
CODEX_WAITING = "Reconnecting... waiting for network (Connection failed: error sending request)"
CODEX_STDERR = "2026-12-02T01:00:34.796413Z ERROR codex_api::endpoint::responses_websocket: failed to connect to " \
               "Responses WebSocket stage=Unknown"


def codex_error_item(message: str) -> dict[str, Any]:
    return {"event": {"type": "item.completed", "item": {"id": "item_0", "type": "error", "message": message}}}


def codex_no_network(waiting: bool = True) -> list[dict[str, Any]]:
    steps = [codex_started(), {"event": {"type": "turn.started"}}, {"stderr": CODEX_STDERR},
             *[codex_error(CODEX_RECONNECT.format(n=n)) for n in range(2, 6)], codex_error_item(CODEX_FALLBACK)]
    return [*steps, codex_error(CODEX_WAITING), {"sleep": 60}] if waiting else [*steps, {"sleep": 60}]


def codex_ok(report: Any = None) -> list[dict[str, Any]]:
    return [codex_started(), {"event": {"type": "turn.started"}}, codex_item("working"), codex_completed(),
            {"answer": report or PLAN_OK}]
