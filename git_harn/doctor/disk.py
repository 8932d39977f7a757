"""Disk use of a folder, as ``du`` counts it: allocated blocks, each file
once (hard links), never through a link, never across into another mount."""

from __future__ import annotations

import os
import time
from pathlib import Path

from git_harn.clock import epoch_of


def disk_use(path: Path | str) -> int:
    """Bytes allocated under ``path`` (0 when it is absent or unreadable)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    pending = [str(path)]
    try:
        device = os.lstat(path).st_dev
    except OSError:
        return 0
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_dev != device or (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return total


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
