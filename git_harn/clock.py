"""The time git-harn writes into records, notes and results, and the waits
it keeps: the spans of time work spent waiting, and why.

A wait (a busy merge lock, a provider's reset time) is said where it happens
(``waiting``) and kept by whoever is timing the current thread
(``keeping_waits``): a workflow task keeps its waits in its timeline; a
thread that nobody times drops them. So the code that waits needs to know
nothing of records.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from git_harn.errors import BadInput

_ISO = "%Y-%m-%dT%H:%M:%SZ"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = r"(\d+)([smhdw]?)"  # compiled on first use (re caches it)


def parse_age(text: str, what: str = "--older-than") -> float:
    """An age: a number of seconds, or with a unit (``90m``, ``12h``, ``30d``, ``2w``)."""
    found = re.fullmatch(_AGE, text.strip())
    if found is None:
        raise BadInput(f"{what} {text!r}: give a number with an optional unit s, m, h, d or w (e.g. 30d)")
    return float(int(found.group(1)) * _UNITS[found.group(2) or "s"])


def _timegm(parts: time.struct_time) -> int:
    # calendar is loaded here, not at start-up: time.strptime loads it anyway.
    import calendar

    return calendar.timegm(parts)


def now_iso() -> str:
    return time.strftime(_ISO, time.gmtime())


def iso_of(epoch: float) -> str:
    return time.strftime(_ISO, time.gmtime(epoch))


def epoch_of(stamp: object) -> float | None:
    """Seconds since the epoch of a UTC time as git-harn writes it
    (``2026-12-01T15:00:00Z``; fractions of a second are dropped); None for
    anything else."""
    if not isinstance(stamp, str) or len(stamp) < 19:
        return None
    try:
        return float(_timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def precise_iso(seconds: float | None = None) -> str:
    """UTC with milliseconds (``2026-11-01T10:00:00.123Z``): a stage of a
    fraction of a second still has a length on a timeline."""
    now = time.time() if seconds is None else seconds
    whole = int(now)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((now - whole) * 1000):03d}Z"


def parse_iso(text: object) -> float | None:
    """Seconds since the epoch of a time git-harn wrote (with or without
    milliseconds); None for anything else, since records can come from anywhere."""
    if not isinstance(text, str) or not text.endswith("Z") or len(text) > 40:
        return None
    whole, _, fraction = text[:-1].partition(".")
    try:
        seconds = _timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
        return seconds + (float(f"0.{fraction}") if fraction else 0.0)
    except ValueError:
        return None


# --- waits -----------------------------------------------------------------------------


@dataclass
class Wait:
    """A span of time some work spent waiting, and why."""

    reason: str  # requirements, merge-lock, worktrees-lock, claim, provider-reset
    detail: str
    startedAt: str
    finishedAt: str


_KEEPERS = threading.local()


@contextmanager
def keeping_waits(keep: Callable[[Wait], None]) -> Iterator[None]:
    """Within the block, every wait said in this thread goes to ``keep``."""
    before = getattr(_KEEPERS, "keep", None)
    _KEEPERS.keep = keep
    try:
        yield
    finally:
        _KEEPERS.keep = before


def waited(reason: str, detail: str, started: str, finished: str | None = None) -> None:
    """A wait that began at ``started`` (``precise_iso``) and ends now, or at ``finished``."""
    keep = getattr(_KEEPERS, "keep", None)
    if keep is not None:
        keep(Wait(reason, detail, started, finished or precise_iso()))


@contextmanager
def waiting(reason: str, detail: str) -> Iterator[None]:
    """The block is a wait (for a lock, for a provider's reset time): it is
    kept, with its reason, however the block ends."""
    started = precise_iso()
    try:
        yield
    finally:
        waited(reason, detail, started)
