"""Failpoints: kill the process at a named point to test crash safety [P6].

``HARN_FAILPOINT=<name>[,<name>…]`` makes the process SIGKILL itself when it
reaches one of the named points, as a power cut or OOM killer would. With
``HARN_FAILPOINT_MODE=stop`` it stops itself (SIGSTOP) instead, so that a
test can freeze and kill its whole process group there, as a container stop
does to git-harn and every git it runs.
"""

from __future__ import annotations

import os
import signal


def failpoint(name: str) -> None:
    wanted = os.environ.get("HARN_FAILPOINT")
    if wanted and name in wanted.split(","):
        stop = os.environ.get("HARN_FAILPOINT_MODE") == "stop"
        os.kill(os.getpid(), signal.SIGSTOP if stop else signal.SIGKILL)
