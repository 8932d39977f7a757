"""Running a configured command (a gate, an external assessor) with a time limit.

Always an argv list, never a shell [P5]. The command runs in its own process
group so that a time-out ends it and everything it started.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from git_harn.errors import BadInput

OUTPUT_TAIL = 4000  # characters of output a gate note keeps


@dataclass
class Finished:
    exit_code: int | None  # None: timed out or could not start
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool = False
    start_error: str | None = None


def run_bounded(
    argv: Sequence[str],
    cwd: Path,
    *,
    timeout: float,
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
) -> Finished:
    """Run ``argv`` in ``cwd`` for at most ``timeout`` seconds."""
    started = time.monotonic()
    try:
        child = subprocess.Popen(
            list(argv), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        return Finished(None, b"", b"", 0.0, start_error=f"cannot run {argv[0]!r}: {exc.strerror or exc}")
    try:
        out, err = child.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        out, err = _leftovers(child)
        return Finished(None, out, err, time.monotonic() - started, timed_out=True)
    return Finished(child.returncode, out, err, time.monotonic() - started)


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()


def _leftovers(child: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    # A grandchild that left the group may still hold the pipes open: do not wait on it.
    try:
        return child.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        child.kill()
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
        child.wait()
        return b"", b""


def tail(raw: bytes, limit: int = OUTPUT_TAIL) -> str:
    """The last ``limit`` characters of ``raw`` as text."""
    text = raw.decode("utf-8", "replace")
    return text if len(text) <= limit else "…" + text[-limit:]


def split_command(line: str, what: str) -> list[str]:
    """``line`` split into words as a shell would, without one; BadInput if it cannot be."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise BadInput(f"cannot split {what} {line!r}: {exc}") from exc
    if not argv:
        raise BadInput(f"{what} is empty")
    return argv
