"""The one compare-and-swap retry loop [P3].

An ``attempt`` reads what it needs afresh, computes the new value and tries
to write it against the old one; it raises RaceLost when another writer won.
The loop retries from a fresh read, a bounded number of times, and never
overwrites.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from git_harn.errors import RaceLost

T = TypeVar("T")
MAX_RETRIES = 8


def retry_cas(attempt: Callable[[], T], what: str) -> T:
    for _ in range(MAX_RETRIES):
        try:
            return attempt()
        except RaceLost:
            continue
    raise RaceLost(f"{what} kept changing under us; try again")
