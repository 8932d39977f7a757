"""Failpoints: kill the process at a named point to test crash safety [P6].

``HARN_FAILPOINT=<name>[,<name>…]`` makes the process SIGKILL itself when it
reaches one of the named points, as a power cut or OOM killer would.
"""

from __future__ import annotations

import os
import signal


def failpoint(name: str) -> None:
    wanted = os.environ.get("HARN_FAILPOINT")
    if wanted and name in wanted.split(","):
        os.kill(os.getpid(), signal.SIGKILL)
