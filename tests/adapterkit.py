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
from helpers import git, make_repo

from git_harn.git import open_repo
from git_harn.tasks.config import AgentSettings
from git_harn.workflow.stages import Agents, StageOutcome, TaskContext, run_stage, stage_file_stem

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


def codex_ok(report: Any = None) -> list[dict[str, Any]]:
    return [codex_started(), {"event": {"type": "turn.started"}}, codex_item("working"), codex_completed(),
            {"answer": report or PLAN_OK}]
