"""The time git-harn writes into records, notes and results."""

from __future__ import annotations

import calendar
import time


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def iso_of(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def epoch_of(stamp: object) -> float | None:
    """Seconds since the epoch of a UTC time as git-harn writes it
    (``2026-12-01T15:00:00Z``; fractions of a second are dropped); None for
    anything else."""
    if not isinstance(stamp, str) or len(stamp) < 19:
        return None
    try:
        return float(calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None
