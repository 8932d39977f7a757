"""From what an agent CLI printed to a fault class, never from the exit code alone.

An adapter's parser collects :class:`Signals` while the stream runs; when
it ends, :func:`classify` decides, in this order:

1. auth signals (HTTP 401/403, "Invalid API key", "401 Unauthorized" …) → ``auth``;
2. provider signals (HTTP 429, 5xx, 529, "exceeded retry limit", "high
   demand", a rejected ``rate_limit_event`` …) → ``provider``, with the
   reset time when the CLI named one;
3. a time-out, an idle stream or a death without a final event → ``infra``,
   unless the last events were retries against a rate limit (``provider``);
4. a final event: the ordinary path, with the report when it holds one.

A final event that carries a valid report wins over everything else: a
rate limit the CLI retried through, or a non-zero exit after the answer,
does not undo work that finished.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from git_harn.proc import exit_words

AUTH, PROVIDER, INFRA = "auth", "provider", "infra"

AUTH_STATUSES = (401, 403)
PROVIDER_STATUSES = (429, 500, 502, 503, 504, 529)

AUTH_TEXTS = (
    "invalid api key", "oauth token has expired", "failed to authenticate", "authentication_error",
    "401 unauthorized", "403 forbidden", "refresh_token_invalidated", "refresh token",
    "missing environment variable: `openai_api_key`", "missing environment variable: openai_api_key",
    "please run /login", "not logged in", "please log in",
)
PROVIDER_TEXTS = (
    "exceeded retry limit", "you've hit your usage limit", "you've hit your limit", "usage limit",
    "high demand", "overloaded", "rate limit", "rate_limit", "too many requests", "service unavailable",
    "internal server error", "bad gateway", "capacity",
)
_STATUS = re.compile(r"(?<![\d.])(401|403|429|500|502|503|504|529)(?![\d.])")
_AGAIN_IN = re.compile(r"try again in\s+((?:\d+\s*(?:days?|hours?|minutes?|mins?|seconds?|secs?)[\s,and]*)+)",
                       re.IGNORECASE)
_UNIT = {"d": 86400, "h": 3600, "m": 60, "s": 1}
MAX_TEXTS = 20


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def reset_in_text(text: str) -> str | None:
    """``try again in 2 hours 5 minutes`` → the ISO time it names, else None."""
    found = _AGAIN_IN.search(text)
    if found is None:
        return None
    seconds = sum(int(n) * _UNIT[unit[0].lower()]
                  for n, unit in re.findall(r"(\d+)\s*([a-zA-Z]+)", found.group(1)))
    return iso(time.time() + seconds) if seconds else None


@dataclass
class Usage:
    inputTokens: int = 0
    outputTokens: int = 0
    cachedInputTokens: int = 0
    costUsd: float | None = None
    turns: int | None = None

    def shown(self) -> dict[str, Any]:
        return {"inputTokens": self.inputTokens, "outputTokens": self.outputTokens,
                "cachedInputTokens": self.cachedInputTokens, "costUsd": self.costUsd, "turns": self.turns}


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def add_tokens(usage: Usage, raw: object, cached_keys: tuple[str, ...]) -> None:
    if not isinstance(raw, dict):
        return
    usage.inputTokens += _int(raw.get("input_tokens"))
    usage.outputTokens += _int(raw.get("output_tokens"))
    usage.cachedInputTokens += sum(_int(raw.get(key)) for key in cached_keys)


@dataclass
class Signals:
    """What one stream showed. ``texts`` and ``statuses`` hold only the
    trailing errors: progress after an error (a retry that worked) clears them."""

    session_id: str | None = None
    final: bool = False  # the CLI's final event arrived
    final_error: bool = False  # … and it says the run failed
    answer: dict[str, Any] | None = None  # the structured answer, when there is one
    texts: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    rate_limited: bool = False  # a rate limit rejected the last request
    retrying: bool = False  # the last events were the CLI's own retries
    reset_at: str | None = None
    usage: Usage = field(default_factory=Usage)
    what: str = ""  # the deciding signal, for people: "api_error_status 429", "idle", …

    def error(self, text: str, status: int | None = None) -> None:
        if text and len(self.texts) < MAX_TEXTS:
            self.texts.append(text[:2000])
        if status is not None:
            self.statuses.append(status)

    def progress(self) -> None:
        self.texts.clear()
        self.statuses.clear()
        self.retrying = False


@dataclass
class Verdict:
    fault: str | None  # auth | provider | infra | None (the ordinary path)
    why: str  # the signal that decided, for the stage detail
    message: str = ""
    http_status: int | None = None
    reset_at: str | None = None


def _statuses(signals: Signals, stderr: str) -> list[int]:
    found = list(signals.statuses)
    for text in [*signals.texts, stderr]:
        found += [int(s) for s in _STATUS.findall(text)]
    return found


def _text_hit(texts: list[str], needles: tuple[str, ...]) -> str | None:
    for text in texts:
        low = text.lower()
        if any(needle in low for needle in needles):
            return text
    return None


def classify(signals: Signals, *, exit_code: int | None, timed_out: bool, idle: bool, stderr: str,
             cli: str) -> Verdict:
    """The fault class of one CLI run (see the module's docstring for the order)."""
    if signals.final and not signals.final_error and signals.answer is not None:
        return Verdict(None, "final event with a report")
    texts = [*signals.texts, stderr] if stderr else list(signals.texts)
    statuses = _statuses(signals, stderr)
    auth_status = next((s for s in statuses if s in AUTH_STATUSES), None)
    auth_text = _text_hit(texts, AUTH_TEXTS)
    if auth_status is not None or auth_text is not None:
        why = f"HTTP {auth_status}" if auth_status is not None else "an authentication error"
        return Verdict(AUTH, why, (auth_text or f"{cli} reported HTTP {auth_status}")[:500], auth_status)
    provider_status = next((s for s in statuses if s in PROVIDER_STATUSES), None)
    provider_text = _text_hit(texts, PROVIDER_TEXTS)
    reset = signals.reset_at or next((r for r in map(reset_in_text, texts) if r), None)
    if signals.rate_limited or provider_status is not None or provider_text is not None:
        why = ("a rejected rate_limit_event" if signals.rate_limited else
               f"HTTP {provider_status}" if provider_status is not None else "a provider error")
        if signals.retrying:
            why += " while the CLI retried"
        message = provider_text or f"{cli} was refused by its provider ({why})"
        return Verdict(PROVIDER, why, message[:500], provider_status, reset)
    if timed_out:
        return Verdict(INFRA, "time-out", f"{cli} ran out of time")
    if idle:
        return Verdict(INFRA, "idle", f"{cli} printed no event for the idle time-out; its process group was killed")
    if not signals.final:
        how = exit_words(exit_code) if exit_code is not None else "died"
        return Verdict(INFRA, "no final event", f"{cli} {how} without a final event")
    return Verdict(None, "final event without a report")
