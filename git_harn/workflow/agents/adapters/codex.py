"""Codex CLI as a stage agent: ``codex exec --json … -``.

The prompt goes on stdin (``-``), which is closed after it, or codex waits;
``--output-schema`` forces the last message into the report's shape and
``-o`` writes it to a file, only after ``turn.completed``. The session is
the ``thread_id`` of ``thread.started``; a retry after a fault runs ``codex
exec … resume <id> -``. The signals: ``turn.completed`` (``usage``),
``turn.failed`` (``error.message``) and ``error`` (``message``, also for
errors codex retries itself, "Reconnecting… n/5"), an ``item.completed``
whose item has ``type: "error"`` (an error, never progress); codex exits 0
or 1 and reports no cost.

What codex-cli 0.171.0 prints with no network (``unshare -n``), logged in
or not (the tests in ``tests/workflow/agents/adapters/test_adapters_real.py`` run it): it creates
the ``-o`` file empty at once; ``thread.started``, ``turn.started``, then
``error`` events "Reconnecting... 2/5 (stream disconnected before
completion: failed to lookup address information: Try again)" every 5–8 s,
an ``item.completed`` of type ``error`` ("Falling back from WebSockets to
HTTPS transport. …"), then "Reconnecting... waiting for network
(Connection failed: error sending request)" about every 30 s, for ever;
stderr has a WARNING line and timestamped ERROR lines. None of these is
progress, and the adapter ends it at the first "waiting for network" (its
reconnect limit ran out), or the idle clock does. A ``resume`` of a thread it does not
have is one stderr line ("no rollout found for thread id …"), exit 1; an
unknown option is clap's "error: unexpected argument …", exit 2.
``codex login status`` prints "Not logged in" and exits 1 without a cached
login, in well under a second, offline too: the built-in auth preflight
(``CODEX_API_KEY``, which ``codex exec`` reads, never becomes a cached
login, so a set ``CODEX_API_KEY`` passes it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from git_harn.errors import HarnError
from git_harn.files import loads_json, read_private
from git_harn.tasks.config import AgentSettings
from git_harn.workflow.agents.adapters.classify import Signals, add_tokens

NAME = "codex"
CACHED = ("cached_input_tokens",)
MAX_ANSWER = 1 << 20
KEY_VARIABLE = "CODEX_API_KEY"  # codex exec's own key: `codex login status` cannot see it
NO_THREAD = "no rollout found for thread id"
GAVE_UP = "waiting for network"  # its reconnects ran out: it waits for ever, so the adapter ends it


def status_argv(agent: AgentSettings) -> list[str]:
    """The CLI's own login check: exit 0 when it has a cached login."""
    assert agent.command is not None
    return [*agent.command, "login", "status"]


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
        signals.gave_up = signals.gave_up or GAVE_UP in text.lower()
    elif kind == "item.completed" and isinstance(event.get("item"), dict) and event["item"].get("type") == "error":
        signals.error(_message(event["item"]) or "error item")
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
