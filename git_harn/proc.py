"""Running a configured command (a gate, an external assessor) with a time limit.

Always an argv list, never a shell [P5]. The command runs in its own process
group so that a time-out ends it and everything it started.
"""

from __future__ import annotations

import errno
import os
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from git_harn.errors import BadInput

OUTPUT_TAIL = 4000  # characters of output a gate note keeps
# a start that failed like this fails the same way every time: no such executable, not executable
NEVER_STARTS = (errno.ENOENT, errno.EACCES, errno.ENOTDIR, errno.ENOEXEC)


@dataclass
class Finished:
    exit_code: int | None  # None: timed out or could not start
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool = False
    start_error: str | None = None
    truncated: bool = False  # output beyond MAX_CAPTURE was dropped
    start_errno: int | None = None  # why it could not start (ENOENT: no such executable)


MAX_CAPTURE = 16 * 1024 * 1024  # bytes of output kept per stream; the rest only counted


class _Reader:
    """Drains a pipe in a thread, keeping at most MAX_CAPTURE bytes: the head,
    or once that overflows the latest bytes, so a chatty or hostile command
    can neither fill memory nor block on a full pipe."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.kept = bytearray()
        self.overflowed = False
        self.thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self.thread.start()

    def _drain(self, pipe: IO[bytes]) -> None:
        with suppress(OSError, ValueError):
            while chunk := pipe.read(65536):
                self.kept += chunk
                if len(self.kept) > MAX_CAPTURE:
                    self.overflowed = True
                    del self.kept[: len(self.kept) - MAX_CAPTURE]

    def result(self) -> bytes:
        self.thread.join(timeout=5)  # a grandchild may hold the pipe: do not wait on it
        return bytes(self.kept)


def feed_stdin(pipe: IO[bytes] | None, data: bytes) -> None:
    """Write ``data`` to a child's stdin and close it (a child that exits early is no error)."""
    if pipe is None:
        return
    with suppress(OSError, ValueError):
        pipe.write(data)
    with suppress(OSError, ValueError):
        pipe.close()


# --- children the host started, and those it adopted --------------------------------------

# Every command the host starts in a session of its own (agents, gates, the
# watchdog) is noted here the moment it exists, under the lock a sweep takes:
# a child of this process that is not noted was adopted (rule: PR_SET_CHILD_SUBREAPER).
_SPAWNING = threading.Lock()
_OWN: set[int] = set()
PR_SET_CHILD_SUBREAPER = 36


def spawn(argv: list[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen``, its child noted as the host's own."""
    with _SPAWNING:
        child: subprocess.Popen[bytes] = subprocess.Popen(argv, **options)
        _OWN.add(child.pid)
    return child


def forget(pid: int) -> None:
    """A child ``spawn`` started was waited for: its pid may be anyone's next."""
    with _SPAWNING:
        _OWN.discard(pid)


def become_subreaper() -> bool:
    """Make this process the one that adopts every orphan among its
    descendants (Linux ``PR_SET_CHILD_SUBREAPER``): a daemon an agent starts
    with ``setsid`` then becomes this process's child, which ``end_adopted``
    finds, instead of init's, which no one would. False where there is none."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def end_adopted() -> list[int]:
    """Kill and reap every orphan this process adopted: a child it did not
    start, in a session that is neither its own nor one a running command of
    its own leads (a daemon an agent left behind, and what it started in
    turn, which is adopted as it dies). The pids ended."""
    me, ended = os.getpid(), []
    for _ in range(16):
        with _SPAWNING:
            spared = _OWN | {os.getsid(0)}
            found = [pid for pid, session in _children(me) if pid not in _OWN and session not in spared]
            for pid in found:
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        for pid in found:
            with suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)
        ended += found
        if not found:
            break
    return ended


def _children(parent: int) -> list[tuple[int, int]]:
    """(pid, session) of every process whose parent is ``parent``, from /proc."""
    out = []
    with suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:
                out.append((int(entry), int(fields[3])))
    return out


def run_bounded(
    argv: Sequence[str],
    cwd: Path,
    *,
    timeout: float,
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> Finished:
    """Run ``argv`` in ``cwd`` for at most ``timeout`` seconds, keeping a
    bounded amount of its output. ``on_start`` gets the pid, which is also
    the id of the command's process group (``kill_group`` ends it early)."""
    started = time.monotonic()
    try:
        child = spawn(
            list(argv), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        return Finished(None, b"", b"", 0.0, start_error=f"cannot run {argv[0]!r}: {exc.strerror or exc}",
                        start_errno=exc.errno)
    assert child.stdout is not None and child.stderr is not None
    if on_start is not None:
        on_start(child.pid)
    out, err = _Reader(child.stdout), _Reader(child.stderr)
    if stdin:
        threading.Thread(target=feed_stdin, args=(child.stdin, stdin), daemon=True).start()
    else:
        feed_stdin(child.stdin, b"")  # nothing to write: close it now, no thread
    if not exited_within(child.pid, timeout):
        _kill_group(child)
        child.wait()
        forget(child.pid)
        return Finished(None, out.result(), err.result(), time.monotonic() - started, timed_out=True)
    child.wait()
    forget(child.pid)
    return Finished(child.returncode, out.result(), err.result(), time.monotonic() - started,
                    truncated=out.overflowed or err.overflowed)


def exited_within(pid: int, timeout: float) -> bool:
    """Block until child ``pid`` exits (True) or ``timeout`` seconds pass
    (False), waking the moment it exits: ``Popen.wait(timeout=…)`` polls with
    a growing sleep that wakes up to 50 ms late. The child is not reaped
    here, so its pid, and the id of the group it leads, stay its own until
    the caller's ``wait``: a kill after a time-out cannot hit a reused pid."""
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later: a thread blocks instead
        return _exited_within_thread(pid, timeout)
    try:
        poller = select.poll()
        poller.register(handle, select.POLLIN)
        return bool(poller.poll(max(0.0, timeout) * 1000))
    finally:
        os.close(handle)


def _exited_within_thread(pid: int, timeout: float) -> bool:
    with suppress(ChildProcessError, OSError):
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
            return True  # exited already: no thread needed
    exited = threading.Event()

    def wait_without_reaping() -> None:
        with suppress(ChildProcessError, OSError):
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        exited.set()

    threading.Thread(target=wait_without_reaping, daemon=True).start()
    return exited.wait(max(0.0, timeout))


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Signal the process group a ``run_bounded`` command leads (gone already: nothing)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def tail(raw: bytes, limit: int = OUTPUT_TAIL) -> str:
    """The last ``limit`` characters of ``raw`` as text. When that cuts, it
    cuts at a line boundary if one is in reach, so the first line shown is
    whole, and a line ``…`` says that something came before."""
    text = raw.decode("utf-8", "replace")
    if len(text) <= limit:
        return text
    kept = text[-limit:]
    boundary = kept.find("\n")
    if 0 <= boundary < len(kept) - 1:
        kept = kept[boundary + 1:]
    return "…\n" + kept


def signal_name(number: int) -> str:
    """``15`` → ``SIGTERM``: the name people know a signal by."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_status(code: int | None) -> str:
    """How a command ended, in a word or two: ``exit 1``, ``killed by SIGTERM``
    (a negative code is how subprocess says a signal ended it)."""
    if code is None:
        return "no exit code"
    return f"killed by {signal_name(-code)}" if code < 0 else f"exit {code}"


def exit_words(code: int | None) -> str:
    """The same as a phrase: ``exited with 1``, ``was killed by SIGTERM``."""
    if code is not None and code < 0:
        return f"was {exit_status(code)}"
    return f"exited with {code}" if code is not None else "ended with no exit code"


def split_command(line: str, what: str) -> list[str]:
    """``line`` split into words as a shell would, without one; BadInput if it cannot be."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise BadInput(f"cannot split {what} {line!r}: {exc}") from exc
    if not argv:
        raise BadInput(f"{what} is empty")
    return argv


def run_foreground(argv: Sequence[str], cwd: Path, env: Mapping[str, str],
                   on_start: Callable[[int], None], stdout_to_stderr: bool = False) -> tuple[int, str | None]:
    """Run ``argv`` in this process group (it keeps the terminal: Ctrl-C
    reaches it directly) and wait, passing SIGTERM and SIGHUP on; git-harn
    only outlasts it. ``stdout_to_stderr`` keeps git-harn's stdout for its
    own document (``run --json``). Returns (exit code as a shell reports it,
    why it could not start)."""
    try:
        child = spawn(list(argv), cwd=cwd, env=dict(env),
                      stdout=sys.stderr.fileno() if stdout_to_stderr else None)
    except FileNotFoundError:
        return 127, f"command not found: {argv[0]}"
    except PermissionError:
        return 126, f"command not executable: {argv[0]}"
    on_start(child.pid)

    def forward(signum: int, _frame: object) -> None:
        with suppress(ProcessLookupError):
            os.kill(child.pid, signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return (128 - code if code < 0 else code), None
