"""What git-harn tells the operator while it works: warnings, notices, progress.

Domain code reports through these functions and never prints: the entry point
(``cli``) decides where the words go. Warnings and notices go to stderr as
``git harn: warning: …`` and ``git harn: …``; progress only when a person is
watching (stderr and stdin are terminals), so piped output stays quiet.
"""

from __future__ import annotations

import logging
import sys

_LOG = logging.getLogger("git_harn")
NOTICE = 25  # between INFO (progress) and WARNING


def warn(message: str) -> None:
    _LOG.warning(message)


def info(message: str) -> None:
    """Something the operator should know, said whether or not anyone watches."""
    _LOG.log(NOTICE, message)


def progress(message: str) -> None:
    """A step of long work: shown on a terminal only."""
    _LOG.info(message)


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


class _Format(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        return f"git harn: warning: {text}" if record.levelno >= logging.WARNING else f"git harn: {text}"


def configure() -> None:
    """Send notices to stderr (called once by the entry point)."""
    if any(getattr(h, "_harn", False) for h in _LOG.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Format())
    handler._harn = True  # type: ignore[attr-defined]
    _LOG.addHandler(handler)
    _LOG.setLevel(logging.INFO if interactive() else NOTICE)
    _LOG.propagate = False


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
