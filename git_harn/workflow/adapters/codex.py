"""Codex CLI as a stage agent: ``codex exec --json … -``.

The prompt goes on stdin (``-``), which is closed after it, or codex waits;
``--output-schema`` forces the last message into the report's shape and
``-o`` writes it to a file, only after ``turn.completed``. The session is
the ``thread_id`` of ``thread.started``; a retry after a fault runs ``codex
exec … resume <id> -``. The signals: ``turn.completed`` (``usage``),
``turn.failed`` (``error.message``) and ``error`` (``message``, also for
errors codex retries itself); codex exits 0 or 1 and reports no cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from git_harn.errors import HarnError
from git_harn.files import loads_json, read_private
from git_harn.tasks.config import AgentSettings
from git_harn.workflow.adapters.classify import Signals, add_tokens

NAME = "codex"
CACHED = ("cached_input_tokens",)
MAX_ANSWER = 1 << 20


def argv(agent: AgentSettings, cwd: Path, schema: Path, answer: Path, resume: str | None) -> list[str]:
    """The argv: never the prompt, which goes on stdin."""
    assert agent.command is not None
    words = [*agent.command, "exec", "--json", "-C", str(cwd), "--output-schema", str(schema), "-o", str(answer)]
    if agent.model:
        words += ["--model", agent.model]
    words += list(agent.args)
    if resume:
        words += ["resume", resume]
    return [*words, "-"]


def _message(value: object) -> str:
    if isinstance(value, dict):
        value = value.get("message")
    return value if isinstance(value, str) else ""


def feed(signals: Signals, event: dict[str, Any]) -> None:
    """Take one stream event into ``signals``."""
    kind = event.get("type")
    if kind == "thread.started" and signals.session_id is None and isinstance(event.get("thread_id"), str):
        signals.session_id = event["thread_id"]
    elif kind == "error":
        text = _message(event)
        signals.retrying = signals.retrying or "retry" in text.lower() or "reconnecting" in text.lower()
        signals.error(text or "error")
    elif kind == "turn.failed":
        signals.final_error = True
        signals.error(_message(event.get("error")) or "turn.failed")
    elif kind == "turn.completed":
        signals.final = True
        add_tokens(signals.usage, event.get("usage"), CACHED)
        signals.usage.turns = (signals.usage.turns or 0) + 1
    elif isinstance(kind, str) and (kind.startswith("item.") or kind == "turn.started"):
        signals.progress()


def read_answer(signals: Signals, answer: Path) -> None:
    """The ``-o`` file, once the turn completed: the structured answer."""
    if not signals.final or signals.final_error:
        return
    try:
        document = loads_json(read_private(answer, MAX_ANSWER))
    except (OSError, HarnError, ValueError):  # absent, a link, too large, not JSON: no answer
        return
    signals.answer = document if isinstance(document, dict) else None
