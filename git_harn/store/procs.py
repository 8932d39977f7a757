"""Processes git-harn leaves records of: who they are, whether they are
provably dead, and how a process group a dead runner left is ended.

A process is named by its pid *and* its start time (``/proc/<pid>/stat``,
field 22), so a pid the kernel gave to another process since is never taken
for it. "Provably dead" needs ``/proc`` and this host: a process of another
machine, or of a system without ``/proc``, is never judged dead. A process
group is alive while its leader is (same start time), or while any process
is left in it (its id cannot be given to a new group while one is).
"""

from __future__ import annotations

import os
import signal
import socket
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from git_harn.store.locks import _process_start, agents_of, group_members

GRACE_SECONDS = 3.0  # between SIGTERM and SIGKILL of a group a dead runner left


def process_start(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks since boot; None if it is gone, "" if unreadable."""
    return _process_start(pid)


def this_process() -> dict[str, object]:
    """This process as a runner names itself: pid, start, host, process group."""
    pid = os.getpid()
    return {"pid": pid, "start": process_start(pid), "host": socket.gethostname(), "group": os.getpgrp()}


def judgeable(host: object, here: str | None = None) -> bool:
    """Whether a process recorded on ``host`` can be judged from here (this
    machine's name, or ``here``: the name records give it, ``harn.host``)."""
    return Path("/proc").is_dir() and host in (socket.gethostname(), here or socket.gethostname())


def pid_dead(pid: object, start: object, host: object, here: str | None = None) -> bool:
    """The process is provably gone here, or its pid belongs to another process now."""
    if not judgeable(host, here) or not isinstance(pid, int):
        return False
    now = process_start(pid)
    return now is None or (now != "" and now != start)


def _started_after(pid: int, start: str) -> bool:
    later = process_start(pid)
    return bool(later) and bool(start) and int(later or 0) > int(start)


def runner_dead(owner: dict[str, object], here: str | None = None) -> bool:
    """The runner ``owner`` names is provably dead, and with it every git it
    ran: git runs in git-harn's process group, so no process of that group
    that started after the runner may live (the processes that started
    before it, a shell or the ``git`` that ran ``git harn``, are not its)."""
    if not pid_dead(owner.get("pid"), owner.get("start"), owner.get("host"), here):
        return False
    group, start = owner.get("group"), owner.get("start")
    if not isinstance(group, int) or not isinstance(start, str):
        return True  # recorded before the group was: the pid is what there is
    return not any(_started_after(pid, start) for pid in group_members(group))


def dead_ran_out(owner: dict[str, object] | None) -> bool:
    """A lock's dead holder and every command it named there are provably
    over, with their process groups: nothing of theirs can hold a git lock."""
    if owner is None:
        return True
    if not runner_dead(owner):
        return False
    for agent in agents_of(owner):
        pid, start = agent.get("pid"), agent.get("start")
        if not pid_dead(pid, start, owner.get("host")):
            return False
        group = agent.get("group", pid)
        if group == pid and isinstance(pid, int) and Group(pid, start if isinstance(start, str) else None).alive():
            return False
    return True


@dataclass(frozen=True)
class Group:
    """A process group an agent or a gate led: its id is its leader's pid."""

    pgid: int
    start: str | None  # the leader's start time when it was recorded

    def members(self) -> list[int]:
        """Live processes of this group while it is still the recorded one. A
        group id cannot go to a new group while a process is left in it; once
        the group emptied, a new process with the leader's pid (another start
        time) may lead a group of that id, which is not ours."""
        found = group_members(self.pgid)
        if self.pgid in found and process_start(self.pgid) != self.start:
            return []
        return found

    def alive(self) -> bool:
        return bool(self.members())

    def shown(self) -> dict[str, object]:
        return {"pgid": self.pgid, "start": self.start}

    @classmethod
    def of(cls, data: object) -> Group | None:
        if not isinstance(data, dict) or not isinstance(data.get("pgid"), int):
            return None
        start = data.get("start")
        return cls(data["pgid"], start if isinstance(start, str) else None)


def group_is_empty(pgid: int) -> bool:
    """No process at all is left in group ``pgid`` (one signal, no /proc
    scan): an empty group is never taken for a live one, whoever led it."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # someone else's processes: not empty
    return False


def end_groups(groups: list[Group], grace: float = GRACE_SECONDS) -> list[Group]:
    """End every group still alive: SIGTERM to each, one grace period for all,
    then SIGKILL to what is left. Returns the groups that were signalled."""
    ended = [g for g in groups if g.alive()]
    for group in ended:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(group.pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(g.alive() for g in ended) and time.monotonic() < deadline:
        time.sleep(0.05)
    for group in ended:
        if group.alive():
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(group.pgid, signal.SIGKILL)
    return ended
