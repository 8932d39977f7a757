"""Agents and gates do not outlive their runner [L3].

Agents and gates run in process groups of their own (so that a time-out
ends each one whole), which also means that a runner killed with SIGKILL,
alone or with its whole process group, takes none of them down. Linux's
parent-death signal (``prctl(PR_SET_PDEATHSIG)``) does not answer this:
it reaches only the direct child, never the rest of its group (an agent's
``git commit``, a gate's test runner), it fires when the *thread* that
started the child ends, and it can only be set between fork and exec,
through ``preexec_fn``, which is unsafe in a process with threads (the
runner has a thread per task) and costs subprocess its fast spawn path.

So each run starts one small watchdog process in a session of its own (a
kill of the runner's group does not reach it) and tells it, over a pipe
only the runner holds, each group it starts and ends, with the leader's
start time. When the pipe closes without the runner having ended every
group (the runner is dead, however it died), the watchdog ends each group
still alive: SIGTERM, a grace period, SIGKILL, and never a group whose
leader's pid went to another process. What a watchdog that died too left
is ended when the dead run is settled (``workflow/after/settle.py``).
``HARN_WATCHDOG=off`` runs without one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from contextlib import suppress
from dataclasses import dataclass
from typing import IO

from git_harn.git.env import child_env
from git_harn.proc import spawn
from git_harn.store.lease import Lease
from git_harn.store.procs import GRACE_SECONDS, Group, process_start
from git_harn.workflow.agents.stages import Agents


class Watchdog:
    """The runner's side: started with the first group it is told about."""

    def __init__(self) -> None:
        self._child: subprocess.Popen[bytes] | None = None
        self._pipe: IO[bytes] | None = None
        self._failed = os.environ.get("HARN_WATCHDOG") == "off"
        self._lock = threading.Lock()

    def watch(self, group: Group) -> None:
        self._send(f"+ {group.pgid} {group.start or '-'}\n")

    def unwatch(self, pgid: int) -> None:
        self._send(f"- {pgid}\n")

    def _send(self, line: str) -> None:
        with self._lock:
            if self._pipe is None and not self._failed:
                self._start()
            if self._pipe is None:
                return
            try:
                self._pipe.write(line.encode())
                self._pipe.flush()
            except OSError:
                self._failed, self._pipe = True, None

    def _start(self) -> None:
        try:
            self._child = spawn(
                [sys.executable, "-m", "git_harn.workflow.agents.watchdog_process"], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", start_new_session=True,
                env=child_env())  # it needs no secret of the operator's, nor git's location
        except OSError:
            self._failed = True
            return
        self._pipe = self._child.stdin

    def close(self) -> None:
        """The run is over: the watchdog ends what is still registered, then exits."""
        with self._lock:
            if self._pipe is not None:
                with suppress(OSError):
                    self._pipe.close()
                self._pipe = None
            child, self._child = self._child, None
        if child is not None:
            with suppress(subprocess.TimeoutExpired):  # it finishes on its own; nothing waits for it
                child.wait(timeout=GRACE_SECONDS + 2)


@dataclass
class WatchedAgents(Agents):
    """The run's agents and gates, each group also named in the runner lease
    (for settling, should the watchdog die too) and to the watchdog."""

    lease: Lease | None = None
    watchdog: Watchdog | None = None

    def started(self, pgid: int) -> None:
        group = Group(pgid, process_start(pgid))
        if self.lease is not None:
            self.lease.note_group(group.pgid, group.start)
        if self.watchdog is not None:
            self.watchdog.watch(group)
        super().started(pgid)

    def ended(self, pgid: int) -> None:
        super().ended(pgid)
        if self.lease is not None:
            self.lease.drop_group(pgid)
        if self.watchdog is not None:
            self.watchdog.unwatch(pgid)
