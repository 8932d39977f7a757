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
from git_harn.workflow.adapters.classify import Signals, add_tokens, iso
from git_harn.workflow.adapters.schema import strict_schema

NAME = "claude"
CACHED = ("cache_read_input_tokens", "cache_creation_input_tokens")


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
        signals.retrying = True
        signals.error(str(event.get("error") or "api_retry"), _status(event.get("error_status")))
    elif kind == "rate_limit_event":
        raw = event.get("rate_limit_info")
        info: dict[str, Any] = raw if isinstance(raw, dict) else {}
        signals.rate_limited = info.get("status") == "rejected"
        resets = info.get("resetsAt")
        if signals.rate_limited and isinstance(resets, (int, float)) and not isinstance(resets, bool):
            signals.reset_at = iso(resets)
    elif kind == "assistant":
        text = _text(event.get("message"))
        if event.get("error") or text.startswith("API Error"):
            signals.error(text or str(event.get("error")))  # the CLI's synthetic error message
        else:
            signals.progress()
    elif kind == "user":
        signals.progress()
    elif kind == "result":
        _result(signals, event)


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
        reason = event.get("terminal_reason") or event.get("subtype") or "error"
        signals.error(f"{detail or reason}", _status(event.get("api_error_status")))
        return
    signals.progress()
    answer = event.get("structured_output")
    if answer is None and isinstance(event.get("result"), str):
        try:  # an older CLI: the answer only as text
            answer = loads_json(event["result"])
        except ValueError:  # NotJson: not JSON, nested too deeply, a key twice
            answer = None
    signals.answer = answer if isinstance(answer, dict) else None
