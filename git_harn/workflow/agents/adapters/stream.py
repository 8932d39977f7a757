"""Running an agent CLI that prints a JSONL event stream.

The CLI is an argv list (never a shell) in its own process group; the
prompt goes on stdin, which is then closed (``codex exec`` waits for EOF);
every line of stdout is appended to the log file as it arrives and handed,
parsed, to the adapter. Two clocks bound it: the stage's time-out and the
idle time-out: no progress for that many seconds, where the adapter's
parser says what progress is (its retries and error notices are not: a
CLI that only reconnects for ever is idle), or, without a parser's clock,
no line at all. Either kills the whole group, and so does the parser's
word that the CLI gave up but will not exit (``given_up()``: codex
"waiting for network" after its reconnects ran out).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from git_harn.files import NotJson, create_private, loads_json
from git_harn.proc import feed_stdin, forget, spawn

MAX_LINE = 8 * 1024 * 1024  # bytes of one event line that are parsed; longer ones are only logged
MAX_LOG = 256 * 1024 * 1024  # bytes of stream kept in the log; the rest only counted
STDERR_KEPT = 64 * 1024
POLL = 0.1

Event = dict[str, Any]


@dataclass
class Streamed:
    """How one CLI run ended, as the stream and the process showed it."""

    exit_code: int | None  # None: killed by us, or never started
    seconds: float
    events: int = 0
    timed_out: bool = False
    idle: bool = False  # killed after idle seconds without progress
    start_error: str | None = None
    stderr: bytes = b""
    log_truncated: bool = False
    start_errno: int | None = None  # why it could not start (ENOENT: no such executable)
    gave_up: bool = False  # killed because the CLI said it gave up but would wait for ever


class _Pump:
    """Reads stdout line by line into the log and the adapter's parser."""

    def __init__(self, pipe: IO[bytes], log: IO[bytes], on_event: Callable[[Event], None]) -> None:
        self.pipe, self.log, self.on_event = pipe, log, on_event
        self.last = time.monotonic()
        self.events = 0
        self.logged = 0
        self.truncated = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with suppress(OSError, ValueError):
            while line := self.pipe.readline(MAX_LINE + 1):
                self.last = time.monotonic()
                self._log(line)
                if len(line) > MAX_LINE or not line.strip():
                    continue
                try:
                    event = loads_json(line)
                except NotJson:  # a warning the CLI printed, or JSON nested too deeply to parse
                    continue  # not an event: logged, not believed, and the stream read on
                if isinstance(event, dict):
                    self.events += 1
                    self.on_event(event)

    def _log(self, line: bytes) -> None:
        if self.logged + len(line) > MAX_LOG:
            self.truncated = True
            return
        self.logged += len(line)
        with suppress(OSError):
            self.log.write(line if line.endswith(b"\n") else line + b"\n")
            self.log.flush()


def _drain(pipe: IO[bytes], kept: bytearray) -> None:
    with suppress(OSError, ValueError):
        while chunk := pipe.read(65536):
            kept += chunk
            if len(kept) > STDERR_KEPT:
                del kept[: len(kept) - STDERR_KEPT]


def _kill(pgid: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_stream(argv: Sequence[str], cwd: Path, *, stdin: bytes, env: Mapping[str, str], log: Path,
               timeout: float, idle: float, on_event: Callable[[Event], None],
               on_start: Callable[[int], None] | None = None,
               progress: Callable[[], float] | None = None,
               given_up: Callable[[], bool] | None = None) -> Streamed:
    """Run ``argv`` with ``stdin`` until it exits, ``timeout`` passes, or
    ``idle`` seconds pass without progress (``progress()``: the monotonic
    time of the last, else the last line on stdout)."""
    started = time.monotonic()
    try:
        child = spawn(list(argv), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, env=dict(env), start_new_session=True)
    except OSError as exc:
        return Streamed(None, 0.0, start_error=f"cannot run {argv[0]!r}: {exc.strerror or exc}",
                        start_errno=exc.errno)
    assert child.stdout is not None and child.stderr is not None
    if on_start is not None:
        on_start(child.pid)
    err = bytearray()
    drain = threading.Thread(target=_drain, args=(child.stderr, err), daemon=True)
    drain.start()
    threading.Thread(target=feed_stdin, args=(child.stdin, stdin), daemon=True).start()
    with create_private(log) as handle:  # the agent can write the run folder: never follow its link
        pump = _Pump(child.stdout, handle, on_event)
        timed_out = went_idle = gave_up = False
        while True:
            try:
                child.wait(timeout=POLL)
                break
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                if now - started > timeout:
                    timed_out = True
                elif now - max(started, progress() if progress is not None else pump.last) > idle:
                    went_idle = True
                elif given_up is not None and given_up():
                    gave_up = True
                else:
                    continue
                _kill(child.pid)
                child.wait()
                break
        _kill(child.pid)  # nothing the CLI started outlives it
        pump.thread.join(timeout=5)
    drain.join(timeout=5)
    forget(child.pid)
    code = None if timed_out or went_idle or gave_up else child.returncode
    return Streamed(code, time.monotonic() - started, pump.events, timed_out, went_idle, None, bytes(err),
                    pump.truncated, gave_up=gave_up)
