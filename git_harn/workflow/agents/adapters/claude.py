"""Claude Code as a stage agent: ``claude -p --output-format stream-json``.

The prompt goes on stdin; ``--json-schema`` forces the final ``result``
event to carry ``structured_output``, which becomes the report. A first run
pre-assigns its session (``--session-id``); a retry after a fault resumes it
(``--resume``). The signals: ``result`` (``is_error``, ``api_error_status``,
``subtype``, ``result``, ``total_cost_usd``, ``usage``, ``num_turns``),
``system``/``api_retry`` (``error_status``), and ``rate_limit_event``
(``rate_limit_info.status`` ``rejected``, ``resetsAt`` in epoch seconds).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from git_harn.files import loads_json
from git_harn.tasks.config import AgentSettings
from git_harn.workflow.agents.adapters.classify import Signals, add_tokens, iso
from git_harn.workflow.agents.adapters.schema import strict_schema

NAME = "claude"
CACHED = ("cache_read_input_tokens", "cache_creation_input_tokens")
AUTH_ERRORS = ("authentication_failed",)
PROVIDER_ERRORS = ("rate_limit", "overloaded", "server_error", "billing_error")
NO_SESSION = "no conversation found with session id"
# Claude Code refuses each of these as root unless IS_SANDBOX=1 (exactly "1")
BYPASS_FLAGS = ("--dangerously-skip-permissions", "--allow-dangerously-skip-permissions")
BYPASS_MODE = "bypassPermissions"


def status_argv(agent: AgentSettings) -> list[str]:
    """The CLI's own login check: exit 0 when it has a credential."""
    assert agent.command is not None
    return [*agent.command, "auth", "status", "--text"]


def bypasses_permissions(args: tuple[str, ...] | list[str]) -> str | None:
    """The argument that skips permission checks, in any of its spellings, else None."""
    for at, word in enumerate(args):
        if word in BYPASS_FLAGS or word.split("=", 1)[0] in BYPASS_FLAGS:
            return word
        if word == f"--permission-mode={BYPASS_MODE}" or (
                word == "--permission-mode" and at + 1 < len(args) and args[at + 1] == BYPASS_MODE):
            return f"--permission-mode {BYPASS_MODE}"
    return None


def argv(agent: AgentSettings, stage: str, resume: str | None) -> tuple[list[str], str]:
    """(argv, session id): never the prompt, which goes on stdin."""
    assert agent.command is not None
    session = resume or str(uuid.uuid4())
    words = [*agent.command, "-p", "--output-format", "stream-json", "--verbose",
             "--json-schema", json.dumps(strict_schema(stage), separators=(",", ":"))]
    words += ["--resume", session] if resume else ["--session-id", session]
    if agent.model:
        words += ["--model", agent.model]
    if agent.maxTurns is not None:
        words += ["--max-turns", str(agent.maxTurns)]
    if agent.maxBudgetUsd is not None:
        words += ["--max-budget-usd", f"{agent.maxBudgetUsd:g}"]
    return [*words, *agent.args], session


def _status(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(message: object) -> str:
    """The text blocks of an assistant message."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return ""
    return " ".join(block.get("text", "") for block in message["content"]
                    if isinstance(block, dict) and isinstance(block.get("text"), str))


def feed(signals: Signals, event: dict[str, Any]) -> None:
    """Take one stream event into ``signals``."""
    kind = event.get("type")
    if signals.session_id is None and isinstance(event.get("session_id"), str):
        signals.session_id = event["session_id"]
    if kind == "system" and event.get("subtype") == "api_retry":
        _retry(signals, event)
    elif kind == "rate_limit_event":
        raw = event.get("rate_limit_info")
        info: dict[str, Any] = raw if isinstance(raw, dict) else {}
        signals.rate_limited = info.get("status") == "rejected"
        resets = info.get("resetsAt")
        if signals.rate_limited and isinstance(resets, (int, float)) and not isinstance(resets, bool):
            signals.reset_at = iso(resets)
    elif kind == "assistant":
        text = _text(event.get("message"))
        code = event.get("error")
        if code or text.startswith("API Error"):
            _assistant_error(signals, str(code or ""), text)
        else:
            signals.progress()
    elif kind == "user":
        signals.progress()
    elif kind == "result":
        _result(signals, event)


def _retry(signals: Signals, event: dict[str, Any]) -> None:
    """One of the CLI's own retries: ``error`` is the same code as an assistant
    event's (``unknown`` when it could not connect), ``error_status`` the HTTP status or null."""
    signals.retrying = True
    code, status = str(event.get("error") or "unknown"), _status(event.get("error_status"))
    signals.error(f"api_retry {event.get('attempt', '?')}/{event.get('max_retries', '?')}: {code}"
                  + (f" (HTTP {status})" if status is not None else " (no HTTP status)"), status)
    if code in PROVIDER_ERRORS:
        signals.provider = True


def _assistant_error(signals: Signals, code: str, text: str) -> None:
    """The CLI's synthetic message about a failed request: its top-level
    ``error`` is the class, its text the words (a connection refused comes
    as ``server_error`` too, which ``Signals.error`` reads as the network)."""
    signals.error(text or code)
    if code in AUTH_ERRORS:
        signals.auth = True
    elif code in PROVIDER_ERRORS:
        signals.provider = True


def _result(signals: Signals, event: dict[str, Any]) -> None:
    signals.final = True
    signals.final_error = event.get("is_error") is True or event.get("subtype") != "success"
    add_tokens(signals.usage, event.get("usage"), CACHED)
    cost = event.get("total_cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        signals.usage.costUsd = float(cost)
    if isinstance(event.get("num_turns"), int):
        signals.usage.turns = event["num_turns"]
    if signals.final_error:
        detail = event.get("result") if isinstance(event.get("result"), str) else ""
        raw = event.get("errors")
        errors = [e for e in raw if isinstance(e, str)] if isinstance(raw, list) else []
        reason = event.get("terminal_reason") or event.get("subtype") or "error"
        for text in errors:
            signals.error(text)
            signals.session_missing = signals.session_missing or NO_SESSION in text.lower()
        status = _status(event.get("api_error_status"))
        if detail or not errors:
            signals.error(str(detail or reason), status)
        elif status is not None:
            signals.statuses.append(status)
        return
    signals.progress()
    answer = event.get("structured_output")
    if answer is None and isinstance(event.get("result"), str):
        try:  # an older CLI: the answer only as text
            answer = loads_json(event["result"])
        except ValueError:  # NotJson: not JSON, nested too deeply, a key twice
            answer = None
    signals.answer = answer if isinstance(answer, dict) else None
