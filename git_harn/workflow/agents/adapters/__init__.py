"""Adapters: a coding agent CLI (Claude Code, Codex CLI) turned into a
well-behaved stage agent.

An adapter builds the CLI's argv (never a shell; the prompt goes on stdin,
never on the command line), forces the stage's report schema through the
CLI's own option, keeps the event stream as a log beside the stage's
report, remembers the session, and translates the end of the run into the
ordinary stage protocol, so the one ``stages.judge`` decides:

- a valid answer → the report at ``$HARN_REPORT``, exit 0;
- a provider fault → a fault report ``{"fault": {"class": "provider", …}}``, exit 75;
- an auth fault → a fault report of class ``auth``, exit 77;
- a config fault (the CLI refused its command line or setup, or is not
  there: it will refuse again) → a fault report of class ``config``, exit 78;
- an infra fault → the stage's time-out as such, or an ``infra`` fault
  report and a non-zero exit (a death or an idle stream);
- a final event without an answer → no report, the CLI's exit code.

Part of the workflow layer (layer 5): imports tasks/, the shared helpers
and its own modules (``preflight`` also the workflow's config, git/'s child environment
and the bounded commands).
It builds no git argv.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_harn.files import atomic_write, unlink_entry
from git_harn.proc import NEVER_STARTS, Finished
from git_harn.tasks.config import AgentSettings
from git_harn.workflow.agents.adapters import claude, codex
from git_harn.workflow.agents.adapters.classify import (
    AUTH,
    CONFIG,
    INFRA,
    PROVIDER,
    Signals,
    Usage,
    Verdict,
    classify,
    last_lines,
)
from git_harn.workflow.agents.adapters.classify import (
    SESSION_NOT_FOUND as SESSION_NOT_FOUND,
)
from git_harn.workflow.agents.adapters.schema import REPORT_NOTE, strict_schema, to_report
from git_harn.workflow.agents.adapters.stream import Streamed, run_stream

EX_SOFTWARE = 70  # an infra fault with no exit code of its own (idle, or exit 0 without a final event)
EX_TEMPFAIL = 75  # provider fault
EX_NOPERM = 77  # auth fault
EX_CONFIG = 78  # config fault: the CLI refused its command line or setup, or is not there
EXIT_FOR_FAULT = {PROVIDER: EX_TEMPFAIL, AUTH: EX_NOPERM, CONFIG: EX_CONFIG}


@dataclass
class Call:
    """One run of one stage agent through its adapter."""

    agent: AgentSettings
    stage: str
    cwd: Path
    prompt: str
    env: dict[str, str]
    report: Path
    prefix: Path  # the CLI's own files: <prefix>.schema.json, .answer.json (and by default the event log)
    timeout: float
    idle: float
    resume: str | None = None
    on_start: Callable[[int], None] | None = None
    # the sandbox (workspace/sandbox.confine): the CLI's argv and environment -> the argv to run
    confine: Callable[[list[str], Mapping[str, str]], list[str]] | None = None
    unconfined: Callable[[int | None], int | None] | None = None  # the exit code as it is without the sandbox
    # the event stream, which the host writes and the CLI never needs: None is <prefix>.events.jsonl
    log: Path | None = None


@dataclass
class AgentRun:
    """What the adapter saw, for the stage outcome and the task result."""

    adapter: str
    log: str
    finished: Finished
    verdict: Verdict
    sessionId: str | None = None
    resumed: bool = False
    cliExitCode: int | None = None
    usage: Usage = field(default_factory=Usage)
    events: int = 0

    def shown(self) -> dict[str, Any]:
        return {"adapter": self.adapter, "log": self.log, "sessionId": self.sessionId, "resumed": self.resumed,
                "cliExitCode": self.cliExitCode, "events": self.events, "signal": self.verdict.why,
                "fault": self.verdict.fault, "resetAt": self.verdict.reset_at, "usage": self.usage.shown()}


@dataclass(frozen=True)
class LoginCheck:
    """One CLI's own login check, run before a workflow creates anything."""

    adapter: str
    argv: list[str]
    skipped: str | None = None  # why the check cannot see the credential the CLI will use


def login_checks(agents: Iterable[AgentSettings], env: Mapping[str, str]) -> list[LoginCheck]:
    """The login check of each distinct adapter CLI among ``agents``: ``claude
    auth status``, ``codex login status`` (skipped when ``CODEX_API_KEY`` is
    set: ``codex exec`` reads it, the status command cannot see it)."""
    checks: list[LoginCheck] = []
    for agent in agents:
        if agent.adapter not in (claude.NAME, codex.NAME) or agent.command is None:
            continue
        argv = claude.status_argv(agent) if agent.adapter == claude.NAME else codex.status_argv(agent)
        if any(check.argv == argv for check in checks):
            continue
        skipped = (f"{codex.KEY_VARIABLE} is set, which codex exec reads and codex login status cannot see"
                   if agent.adapter == codex.NAME and env.get(codex.KEY_VARIABLE) else None)
        checks.append(LoginCheck(agent.adapter, argv, skipped))
    return checks


def _write_json(path: Path, document: dict[str, Any]) -> None:
    """The agent can write the run folder: a fresh private file renamed over
    ``path``, never a write through whatever it left there."""
    atomic_write(path, json.dumps(document, ensure_ascii=False).encode("utf-8"))


def _ending(call: Call, signals: Signals, streamed: Streamed, verdict: Verdict) -> Finished:
    """The run as the stage protocol sees it (see the module's docstring)."""
    stderr = streamed.stderr
    if verdict.fault is None:
        if signals.answer is not None:
            _write_json(call.report, to_report(call.stage, signals.answer))
            return Finished(0, b"", stderr, streamed.seconds)
        words = f": {verdict.message}" if verdict.message else ""
        note = f"\n{call.agent.adapter}: the final event carried no report ({verdict.why}){words}\n".encode()
        return Finished(streamed.exit_code, b"", stderr + note, streamed.seconds)
    if verdict.fault == INFRA and streamed.timed_out:
        return Finished(None, b"", stderr, streamed.seconds, timed_out=True)
    _write_json(call.report, {"fault": {"class": verdict.fault, "httpStatus": verdict.http_status,
                                        "message": verdict.message, "resetAt": verdict.reset_at}})
    code = EXIT_FOR_FAULT.get(verdict.fault) or streamed.exit_code or EX_SOFTWARE
    note = f"\n{call.agent.adapter}: {verdict.fault} fault ({verdict.why}): {verdict.message}\n".encode()
    return Finished(code, b"", stderr + note, streamed.seconds)


def run(call: Call) -> AgentRun:
    """Run the CLI once and translate how it ended."""
    adapter = call.agent.adapter
    log = call.log if call.log is not None else Path(f"{call.prefix}.events.jsonl")
    answer = Path(f"{call.prefix}.answer.json")
    unlink_entry(log)
    unlink_entry(answer)
    signals = Signals()
    preassigned: str | None
    if adapter == claude.NAME:
        argv, preassigned = claude.argv(call.agent, call.stage, call.resume)

        def feed(event: dict[str, Any]) -> None:
            claude.feed(signals, event)
    else:
        schema = Path(f"{call.prefix}.schema.json")
        _write_json(schema, strict_schema(call.stage))
        argv, preassigned = codex.argv(call.agent, call.cwd, schema, answer, call.resume), call.resume

        def feed(event: dict[str, Any]) -> None:
            codex.feed(signals, event)
    prompt = f"{call.prompt.rstrip()}\n\n{REPORT_NOTE}\n".encode()
    confined = call.confine(argv, call.env) if call.confine is not None else argv
    streamed = run_stream(confined, call.cwd, stdin=prompt, env=call.env, log=log, timeout=call.timeout,
                          idle=call.idle, on_event=feed, on_start=call.on_start, progress=lambda: signals.last_progress,
                          given_up=lambda: signals.gave_up)
    if confined is not argv and call.unconfined is not None:
        streamed.exit_code = call.unconfined(streamed.exit_code)
    if streamed.start_error is not None:
        verdict = Verdict(CONFIG if streamed.start_errno in NEVER_STARTS else INFRA, "could not start",
                          streamed.start_error)
        finished = Finished(None, b"", b"", 0.0, start_error=streamed.start_error, start_errno=streamed.start_errno)
    else:
        if adapter == codex.NAME:
            codex.read_answer(signals, answer)
        stderr = streamed.stderr.decode("utf-8", "replace")[-4000:]
        if call.resume is not None and any(marker in last_lines(stderr, 5).lower()
                                           for marker in (claude.NO_SESSION, codex.NO_THREAD)):
            signals.session_missing = True
        verdict = classify(signals, exit_code=streamed.exit_code, timed_out=streamed.timed_out,
                           idle=streamed.idle, stderr=stderr, cli=adapter)
        finished = _ending(call, signals, streamed, verdict)
    return AgentRun(adapter, str(log), finished, verdict, signals.session_id or preassigned,
                    call.resume is not None, streamed.exit_code, signals.usage, streamed.events)
