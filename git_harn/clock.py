"""The time git-harn writes into records, notes and results."""

from __future__ import annotations

import time


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
