"""How doctor shows disk use and ages (the counting itself is ``files.disk_use``)."""

from __future__ import annotations

import time

from git_harn.clock import epoch_of


def age_of(stamp: object, now: float | None = None) -> int | None:
    """Whole seconds since a time git-harn wrote (None when it is not one)."""
    then = epoch_of(stamp)
    return None if then is None else max(0, int((now or time.time()) - then))


def shown_size(size: int | None) -> str:
    if size is None:
        return ""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def shown_age(seconds: int | None) -> str:
    if seconds is None:
        return ""
    for unit, span in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= span:
            return f"{seconds // span} {unit}"
    return f"{seconds} s"
