"""From what an agent CLI printed to a fault class, never from the exit code alone.

An adapter's parser collects :class:`Signals` while the stream runs (the
structured fields first: claude's top-level ``error`` on an assistant
event, ``api_error_status``, ``errors[]``; codex's error items); when it
ends, :func:`classify` decides, in this order:

1. a configuration refusal that will repeat (root without ``IS_SANDBOX=1``,
   an unknown flag, an invalid value), printed before any final event →
   ``config``: never retried;
2. auth signals (``authentication_failed``, HTTP 401/403, "Invalid API
   key", "Not logged in" …) → ``auth``;
3. structured provider signals (HTTP 429, 5xx, 529, a rejected
   ``rate_limit_event``, claude's ``rate_limit``/``overloaded``/
   ``server_error``) → ``provider``, with the reset time when the CLI
   named one;
4. a network that cannot be reached ("Unable to connect to API", "waiting
   for network", a failed DNS lookup) → ``infra``, *network unreachable*;
5. provider texts ("exceeded retry limit", "high demand" …) → ``provider``;
6. a time-out, an idle stream or a death without a final event → ``infra``,
   unless the last events were retries against a rate limit (``provider``);
7. a final event: the ordinary path, with the report when it holds one.

A final event that carries a valid report wins over everything else: a
rate limit the CLI retried through, or a non-zero exit after the answer,
does not undo work that finished. HTTP statuses come from structured
fields, or from text only as a whole word next to a word that says it is
a status ("HTTP 429", "status: 503", "401 Unauthorized"), never from the
digits inside a session id. Whatever the class, the verdict's message
keeps the CLI's own words: the last error it printed and the last lines
of its stderr.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from git_harn.proc import exit_words

AUTH, PROVIDER, INFRA, CONFIG = "auth", "provider", "infra", "config"
NETWORK = "network unreachable"
SESSION_NOT_FOUND = "session not found"

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
NETWORK_TEXTS = (
    "unable to connect", "connectionrefused", "connection refused", "failed to lookup address",
    "waiting for network", "network is unreachable", "error sending request", "failed to connect",
    "enotfound", "econnrefused", "getaddrinfo", "dns error", "request timed out",
)
CONFIG_TEXTS = (
    "cannot be used with root/sudo privileges", "error: unknown option", "error: unexpected argument",
    "error: invalid value", "error: option '", "error: a value is required", "error: unknown command",
    "error: too many arguments", "error loading config.toml", "not inside a trusted directory",
)
NOISE = "WARNING: proceeding, even though"  # codex's warning about its helper binaries, on every command
_CODE = r"401|403|429|500|502|503|504|529"
_STATUS = re.compile(  # a whole word: no letter, digit, hyphen or dot touches it (ids are made of those)
    rf"(?:\b(?:http|status|code|api error)\b[\s:=#]*(?<![\w.-])({_CODE})(?![\w-]|\.\d))"
    rf"|(?:(?<![\w.-])({_CODE})\s+(?:unauthorized|forbidden|too many requests|internal server error|bad gateway"
    rf"|service unavailable|gateway time-?out|overloaded))",
    re.IGNORECASE)
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


# More tokens than any agent run reads (a million runs of a million-token
# context): a count past it is a lie, counted as this bound, so that its
# price is a float past any spending limit, never an OverflowError.
MAX_TOKENS = 10 ** 12


def _int(value: object) -> int:
    return min(value, MAX_TOKENS) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def add_tokens(usage: Usage, raw: object, cached_keys: tuple[str, ...]) -> None:
    if not isinstance(raw, dict):
        return
    usage.inputTokens += _int(raw.get("input_tokens"))
    usage.outputTokens += _int(raw.get("output_tokens"))
    usage.cachedInputTokens += sum(_int(raw.get(key)) for key in cached_keys)


@dataclass
class Signals:
    """What one stream showed. ``texts``, ``statuses`` and the structured
    flags hold only the trailing errors: progress after an error (a retry
    that worked) clears them. ``last_error`` keeps the CLI's last error
    text for the detail, and ``last_progress`` (monotonic seconds) is what
    the idle clock reads: errors and retries are not progress."""

    session_id: str | None = None
    final: bool = False  # the CLI's final event arrived
    final_error: bool = False  # … and it says the run failed
    answer: dict[str, Any] | None = None  # the structured answer, when there is one
    texts: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    auth: bool = False  # a structured auth error (claude's authentication_failed)
    provider: bool = False  # a structured provider error (rate_limit, overloaded, server_error …)
    network: bool = False  # the CLI could not reach its API
    gave_up: bool = False  # the CLI said it stopped trying but would wait for ever (codex: waiting for network)
    session_missing: bool = False  # --resume / resume named a session the CLI does not have
    rate_limited: bool = False  # a rate limit rejected the last request
    retrying: bool = False  # the last events were the CLI's own retries
    reset_at: str | None = None
    last_error: str = ""
    last_progress: float = field(default_factory=time.monotonic)
    usage: Usage = field(default_factory=Usage)
    what: str = ""  # the deciding signal, for people: "api_error_status 429", "idle", …

    def error(self, text: str, status: int | None = None) -> None:
        if text and len(self.texts) < MAX_TEXTS:
            self.texts.append(text[:2000])
        if text:
            self.last_error = text[:2000]
        if status is not None:
            self.statuses.append(status)
        if text and is_network(text):
            self.network = True

    def progress(self) -> None:
        self.texts.clear()
        self.statuses.clear()
        self.retrying = self.auth = self.provider = self.network = False
        self.last_progress = time.monotonic()


@dataclass
class Verdict:
    fault: str | None  # auth | provider | infra | config | None (the ordinary path)
    why: str  # the signal that decided, for the stage detail
    message: str = ""  # the CLI's own words, with what decided
    http_status: int | None = None
    reset_at: str | None = None


def is_network(text: str) -> bool:
    low = text.lower()
    return any(needle in low for needle in NETWORK_TEXTS)


def statuses_in(text: str) -> list[int]:
    """HTTP statuses a text names as such (never digits inside an id)."""
    return [int(a or b) for a, b in _STATUS.findall(text)]


def _statuses(signals: Signals, stderr: str) -> list[int]:
    found = list(signals.statuses)
    for text in [*signals.texts, stderr]:
        found += statuses_in(text)
    return found


def _text_hit(texts: list[str], needles: tuple[str, ...]) -> str | None:
    """The first text that holds a needle; of a text of many lines (stderr), the line."""
    for text in texts:
        for line in text.splitlines() or [text]:
            low = line.lower()
            if any(needle in low for needle in needles):
                return line.strip() if "\n" in text else text
    return None


def _config_line(stderr: str) -> str | None:
    """The line of stderr in which the CLI refused its own command line or setup: a parser's
    ``error: …`` starts its line (a log line that quotes one does not count)."""
    for line in stderr.splitlines():
        low = line.strip().lower()
        if any(low.startswith(needle) if needle.startswith("error") else needle in low for needle in CONFIG_TEXTS):
            return line.strip()
    return None


def said(text: str) -> list[str]:
    """The lines of a CLI's output that say something (not the warning codex prints on every command)."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith(NOISE)]


def last_lines(stderr: str, count: int = 3) -> str:
    """The last lines of stderr that say something."""
    return " | ".join(said(stderr)[-count:])


def _words(first: str, signals: Signals, stderr: str) -> str:
    """The deciding text, then the CLI's last error and last stderr lines, each once."""
    parts: list[str] = []
    for part in (first, signals.last_error, *said(stderr)[-3:]):
        part = part.strip()
        if part and not any(part in seen for seen in parts):
            parts.append(part)
    return " | ".join(parts)[:1000]


def classify(signals: Signals, *, exit_code: int | None, timed_out: bool, idle: bool, stderr: str,
             cli: str) -> Verdict:
    """The fault class of one CLI run (see the module's docstring for the order)."""
    if signals.final and not signals.final_error and signals.answer is not None:
        return Verdict(None, "final event with a report")
    texts = [*signals.texts, stderr] if stderr else list(signals.texts)
    refused = _config_line(stderr) if not signals.final else None
    if refused is not None:
        return Verdict(CONFIG, "a refused configuration", _words(refused, signals, stderr))
    statuses = _statuses(signals, stderr)
    auth_status = next((s for s in statuses if s in AUTH_STATUSES), None)
    auth_text = _text_hit(texts, AUTH_TEXTS)
    if signals.auth or auth_status is not None or auth_text is not None:
        why = ("authentication_failed" if signals.auth else
               f"HTTP {auth_status}" if auth_status is not None else "an authentication error")
        message = auth_text or signals.last_error or f"{cli} reported HTTP {auth_status}"
        return Verdict(AUTH, why, _words(message, signals, stderr), auth_status)
    provider_status = next((s for s in statuses if s in PROVIDER_STATUSES), None)
    reset = signals.reset_at or next((r for r in map(reset_in_text, texts) if r), None)
    if signals.rate_limited or provider_status is not None or (signals.provider and not signals.network):
        return _provider(signals, stderr, cli, provider_status, reset, _text_hit(texts, PROVIDER_TEXTS))
    if signals.network or _text_hit(texts, NETWORK_TEXTS) is not None:
        seen = _text_hit(texts, NETWORK_TEXTS) or signals.last_error
        return Verdict(INFRA, NETWORK, _words(f"{cli} could not reach its API (network unreachable): {seen}",
                                              signals, stderr))
    provider_text = _text_hit(texts, PROVIDER_TEXTS)
    if provider_text is not None:
        return _provider(signals, stderr, cli, None, reset, provider_text)
    return _ended(signals, exit_code=exit_code, timed_out=timed_out, idle=idle, stderr=stderr, cli=cli)


def _provider(signals: Signals, stderr: str, cli: str, status: int | None, reset: str | None,
              text: str | None) -> Verdict:
    why = ("a rejected rate_limit_event" if signals.rate_limited else
           f"HTTP {status}" if status is not None else "a provider error")
    if signals.retrying:
        why += " while the CLI retried"
    message = text or signals.last_error or f"{cli} was refused by its provider ({why})"
    return Verdict(PROVIDER, why, _words(message, signals, stderr), status, reset)


def _ended(signals: Signals, *, exit_code: int | None, timed_out: bool, idle: bool, stderr: str,
           cli: str) -> Verdict:
    """No fault class in what the CLI said: how the process ended decides."""
    if signals.session_missing:
        return Verdict(INFRA, SESSION_NOT_FOUND,
                       _words(f"{cli} does not know the session it was asked to resume", signals, stderr))
    if timed_out:
        return Verdict(INFRA, "time-out", _words(f"{cli} ran out of time", signals, stderr))
    if idle:
        return Verdict(INFRA, "idle", _words(f"{cli} made no progress for the idle time-out; its process group "
                                             f"was killed", signals, stderr))
    if not signals.final:
        how = exit_words(exit_code) if exit_code is not None else "died"
        return Verdict(INFRA, "no final event", _words(f"{cli} {how} without a final event", signals, stderr))
    return Verdict(None, "final event without a report", _words("", signals, stderr))
