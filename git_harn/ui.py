"""Messages to the operator on stderr, and whether a person is watching."""

from __future__ import annotations

import sys


def warn(message: str) -> None:
    print(f"git harn: warning: {message}", file=sys.stderr)


def info(message: str) -> None:
    print(f"git harn: {message}", file=sys.stderr)


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def confirm(question: str) -> bool:
    """Ask on a terminal; anything but yes is no."""
    if not interactive():
        return False
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")
