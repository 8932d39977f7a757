"""Where ``workflow watch`` draws its looks: a terminal redrawn in place, or
plain lines for a pipe.

On a terminal the watch takes the alternate screen (the operator's
scrollback is as it was afterwards), hides the cursor, reads keys in cbreak
mode (one key at a time, not echoed; Ctrl-C still a signal) and draws each
look from the top left over the last one, each line cleared to its end
and what is below the last line cleared: nothing is blanked first, so
nothing flickers. Every way out (``q``, Ctrl-C, the run's end, an error, a
SIGTERM) gives the terminal back as it was, and so does Ctrl-Z until ``fg``. Piped, or with ``--plain``,
only the lines that changed are printed, each whole, with the time.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import sys
import time
from types import FrameType, TracebackType
from typing import Any, TextIO

from git_harn.workflow.page.watch import Frame

LEAVE_KEYS = (b"q", b"Q")
_SLICE = 0.1  # seconds: how soon a Ctrl-C is seen


class _Leave:
    """Ctrl-C as a wish to leave: a flag the next wait sees, never an
    exception in the middle of a look (the watch touches nothing to undo)."""

    def __init__(self) -> None:
        self.asked = False
        self._before: Any = None

    def __enter__(self) -> _Leave:
        self._before = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *_: object) -> None:
        signal.signal(signal.SIGINT, self._before)

    def _handler(self, _signum: int, _frame: FrameType | None) -> None:
        self.asked = True


class Plain:
    """Lines appended to a pipe: the ones that differ from the last look's."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._shown: dict[str, str] = {}
        self._leave = _Leave()

    def __enter__(self) -> Plain:
        self._leave.__enter__()
        return self

    def __exit__(self, *_: object) -> None:
        self._leave.__exit__()

    def show(self, look: Frame) -> None:
        at = time.strftime("%H:%M:%S")
        lines = look.plain()
        slots = ["run", "counts", *(["sync"] if look.synced else []), *[f"task {row.key}" for row in look.rows]]
        for slot, line in zip(slots, lines, strict=True):
            if self._shown.get(slot) != line:
                self._shown[slot] = line
                self.out.write(f"{at} {line}\n")
        self.out.flush()

    def wait(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while not self._leave.asked and time.monotonic() < deadline:
            time.sleep(min(_SLICE, max(0.0, deadline - time.monotonic())))
        return self._leave.asked


class Terminal:
    """A terminal redrawn in place; keys read from ``keys`` (stdin)."""

    def __init__(self, out: TextIO | None = None, keys: int | None = None) -> None:
        self.out = out or sys.stdout
        self.keys = sys.stdin.fileno() if keys is None else keys
        self._saved: list[Any] | None = None
        self._leave = _Leave()
        self._before_stop: Any = None

    def __enter__(self) -> Terminal:
        import termios

        self._saved = termios.tcgetattr(self.keys)
        self._leave.__enter__()
        self._before_stop = signal.signal(signal.SIGTSTP, self._stop)
        try:
            self._take()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        try:
            self._give_back()
        finally:
            signal.signal(signal.SIGTSTP, self._before_stop)
            self._leave.__exit__()

    def _take(self) -> None:
        """Keys one at a time, unechoed; the alternate screen, no cursor."""
        import termios
        import tty

        tty.setcbreak(self.keys, termios.TCSANOW)
        self.out.write("\x1b[?1049h\x1b[?25l")
        self.out.flush()

    def _give_back(self) -> None:
        """The cursor, the operator's screen and the terminal's modes as they were."""
        import termios

        try:
            self.out.write("\x1b[?25h\x1b[?1049l")
            self.out.flush()
        finally:
            if self._saved is not None:
                termios.tcsetattr(self.keys, termios.TCSADRAIN, self._saved)

    def _stop(self, _signum: int, _frame: FrameType | None) -> None:
        """Ctrl-Z: the terminal given back while stopped, taken again on ``fg``
        (the next look draws the whole screen)."""
        self._give_back()
        os.kill(os.getpid(), signal.SIGSTOP)
        self._take()

    def show(self, look: Frame) -> None:
        size = shutil.get_terminal_size((80, 24))
        lines = look.lines(time.time(), size.columns - 1)[: max(1, size.lines - 1)]
        self.out.write("\x1b[H" + "".join(f"{line}\x1b[K\n" for line in lines)
                       + "\x1b[J" + "q or Ctrl-C leaves; the run goes on\x1b[K")
        self.out.flush()

    def wait(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while not self._leave.asked:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([self.keys], [], [], min(_SLICE, left))
            if ready:
                key = os.read(self.keys, 32)
                if not key or any(k in key for k in LEAVE_KEYS):
                    return True  # q, or the terminal went away
        return True


def screen_for(plain: bool) -> Plain | Terminal:
    """The terminal form when both ends are a terminal and ``--plain`` is not given."""
    if not plain and sys.stdout.isatty() and sys.stdin.isatty():
        return Terminal()
    return Plain()
