"""What git-harn tells the operator while it works: warnings, notices, progress [C5].

Domain code reports through these functions and never prints: the entry point
(``cli``) decides where the words go. Warnings and notices go to stderr as
``git harn: warning: …`` and ``git harn: …``; progress only when a person is
watching (stderr and stdin are terminals), so piped output stays quiet.
"""

from __future__ import annotations

import sys
import threading
from contextlib import suppress

WARNING = 30
NOTICE = 25  # between progress and warnings
PROGRESS = 20
# What is said until the entry point configures it: warnings only.
_shown = WARNING
_one_line_at_a_time = threading.Lock()


def _say(level: int, message: str) -> None:
    # Written straight to stderr (no logging module: one more import on
    # every command's start-up); one line at a time from any thread.
    if level < _shown:
        return
    line = f"git harn: warning: {message}\n" if level >= WARNING else f"git harn: {message}\n"
    with _one_line_at_a_time, suppress(OSError, ValueError):
        sys.stderr.write(line)
        sys.stderr.flush()


def warn(message: str) -> None:
    _say(WARNING, message)


def info(message: str) -> None:
    """Something the operator should know, said whether or not anyone watches."""
    _say(NOTICE, message)


def progress(message: str) -> None:
    """A step of long work: shown on a terminal only."""
    _say(PROGRESS, message)


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def configure() -> None:
    """Say notices, and progress when a person watches (called once by the entry point)."""
    global _shown
    _shown = PROGRESS if interactive() else NOTICE


_live_lines = 0


def live(lines: list[str]) -> None:
    """Redraw a block of status lines in place on a terminal (nothing otherwise);
    ``live([])`` clears it, e.g. before a notice is said."""
    global _live_lines
    if not interactive():
        return
    out = []
    if _live_lines:
        out.append(f"\x1b[{_live_lines}F\x1b[J")
    out.extend(f"{line[:200]}\x1b[K\n" for line in lines)
    sys.stderr.write("".join(out))
    sys.stderr.flush()
    _live_lines = len(lines)
