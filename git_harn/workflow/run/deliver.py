"""Deliver one notification: ``python -I deliver.py <seconds> <log>
<event name> <argv>...``, the event on its stdin.

A process of its own, in a session of its own, which the run starts and
never waits for (``notify``): it runs the operator's notifier with the
event on its stdin (this process's own: a file with no name the run
wrote, never one read back from the run folder, which a stage agent can
write) and its output discarded, ends the notifier's process
group once ``<seconds>`` have passed, and appends one line to the run's
notification log saying what became of it. It imports the standard
library only, so it starts fast, and outlives the run when it must.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time


def _line(log: str, text: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(log, flags, 0o600)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
            return  # a link a stage planted in the run folder to another file: never written through
        os.write(fd, f"{stamp} {text}\n".encode("utf-8", "replace"))  # one write: whole lines, even from several
    finally:
        os.close(fd)


def deliver(seconds: float, log: str, name: str, argv: list[str]) -> int:
    try:
        child = subprocess.Popen(argv, stdin=None, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True, close_fds=True)
    except OSError as exc:
        _line(log, f"{name}: failed: {argv[0]} could not start: {exc.strerror or exc}")
        return 1
    try:
        code = child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(child.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(0.5 if sig == signal.SIGTERM else 0)
        child.wait()
        _line(log, f"{name}: failed: {argv[0]} was stopped after {seconds:g} s (harn.notifyTimeout)")
        return 1
    if code != 0:
        why = f"exited with {code}" if code > 0 else f"was killed by signal {-code}"
        _line(log, f"{name}: failed: {argv[0]} {why}")
        return 1
    _line(log, f"{name}: delivered")
    return 0


def main() -> int:
    seconds, log, name, *argv = sys.argv[1:]
    return deliver(float(seconds), log, name, argv)


if __name__ == "__main__":
    sys.exit(main())
