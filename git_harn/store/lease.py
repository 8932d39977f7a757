"""The runner lease: one live ``workflow run`` per clone, remote and base [L2].

A file under ``<common git dir>/harnery/locks/``, created with O_EXCL, names
the runner: workflow id, remote, base, pid, process start time, host and
process group, and the process groups of the agents and gates it has
running. A second run for the same remote and base finds it and is refused
(exit 3), naming the live one; nothing is created. A run that ends removes
its lease. A killed run cannot, and that is the point: its lease is how the
next run knows that a run died here and has to be settled (record closed,
workspaces settled, groups ended) before anything is selected [L3]. When a
new run takes the name of a dead runner's lease, the dead one is moved
aside (``runner-left-…``) rather than deleted, and removed only once its run
is settled, so a crash in between loses nothing to settle.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_harn.errors import Busy, Refused
from git_harn.files import atomic_write
from git_harn.git import Repo
from git_harn.store.locks import create_exclusive, locks_dir, read_owner
from git_harn.store.procs import Group, group_is_empty, runner_dead

PREFIX = "runner-"
LEFT = "runner-left-"
TRIES = 100


def lease_path(repo: Repo, remote: str, base: str) -> Path:
    key = hashlib.sha1(f"{remote}\0{base}".encode(), usedforsecurity=False).hexdigest()[:16]
    return locks_dir(repo) / f"{PREFIX}{key}.lock"


def _read(path: Path) -> dict[str, Any] | None:
    """The lease's owner; None when the file is gone, {} when it is unreadable."""
    found = read_owner(path)
    return None if found is None else dict(found)


@dataclass
class Lease:
    """The lease this run holds; it records the groups its agents lead."""

    path: Path
    owner: dict[str, Any]
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def note_group(self, pgid: int, start: str | None) -> None:
        with self._lock:
            self.owner["groups"] = [*self._groups(), {"pgid": pgid, "start": start}]
            with suppress(OSError):  # best effort: settle also ends what the run locks name
                atomic_write(self.path, json.dumps(self.owner).encode())

    def drop_group(self, pgid: int) -> None:
        """Forget an ended group. When no process is left in it, the file keeps
        naming it until the next group is noted: that costs settle nothing (an
        empty group is never taken for a live one) and saves a file write per
        agent [L3]. When its leader ended but others of the group still run (a
        gate's server left in the background), the file is written now, so
        that nothing later takes them for this run's."""
        with self._lock:
            self.owner["groups"] = [g for g in self._groups() if g.get("pgid") != pgid]
            if group_is_empty(pgid):
                return
            with suppress(OSError):
                atomic_write(self.path, json.dumps(self.owner).encode())

    def _groups(self) -> list[dict[str, Any]]:
        return list(self.owner.get("groups") or [])

    def release(self) -> None:
        """Remove the lease, only while it is still this run's."""
        found = _read(self.path)
        if found and found.get("workflowId") == self.owner["workflowId"] and found.get("pid") == os.getpid():
            with suppress(FileNotFoundError):
                self.path.unlink()


@dataclass
class Left:
    """A lease file as found: a live run's, or one a dead run left."""

    path: Path
    owner: dict[str, Any]

    @property
    def workflow_id(self) -> str | None:
        found = self.owner.get("workflowId")
        return found if isinstance(found, str) else None

    def dead(self) -> bool:
        if not self.owner:  # unreadable: judged by age, a lease is written in one go
            try:
                return time.time() - self.path.stat().st_mtime > 5
            except FileNotFoundError:
                return True
        return runner_dead(self.owner)

    def groups(self) -> list[Group]:
        found = (Group.of(g) for g in self.owner.get("groups") or [])
        return [g for g in found if g is not None]

    def drop(self) -> None:
        """Remove this lease once its run is settled (never a lease that changed since)."""
        if _read(self.path) == self.owner:
            with suppress(FileNotFoundError):
                self.path.unlink()


def busy_line(owner: dict[str, Any]) -> str:
    return (f"workflow {owner.get('workflowId', '?')} is running on {owner.get('remote', '?')}/"
            f"{owner.get('base', '?')} in this clone (pid {owner.get('pid', '?')} on {owner.get('host', '?')}, "
            f"since {owner.get('since', '?')}); wait for it to end, or stop it with "
            f"'kill -TERM {owner.get('pid', '?')}'; nothing was started")


def take(repo: Repo, remote: str, base: str, workflow_id: str, runner: dict[str, Any]) -> Lease:
    """This run's lease; Refused (exit 3) while a live run holds it."""
    path = lease_path(repo, remote, base)
    path.parent.mkdir(parents=True, exist_ok=True)
    owner = {**runner, "workflowId": workflow_id, "remote": remote, "base": base,
             "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "groups": []}
    for _ in range(TRIES):
        if create_exclusive(path, owner):
            return Lease(path, owner)
        current = _read(path)
        if current is None:
            continue  # released this instant
        found = Left(path, current)
        if not found.dead():
            if not found.owner:
                time.sleep(0.05)  # being written this instant
                continue
            raise Refused(busy_line(found.owner))
        _set_aside(found)
    raise Busy(f"cannot take the runner lease {path}: it keeps changing")


def _set_aside(found: Left) -> None:
    """Move a dead runner's lease out of the way, kept for its settling. A
    live lease that replaced it meanwhile is put back."""
    aside = found.path.with_name(f"{LEFT}{found.workflow_id or 'unknown'}-{secrets.token_hex(3)}.lock")
    try:
        os.rename(found.path, aside)
    except FileNotFoundError:
        return
    if (_read(aside) or {}) != found.owner:
        with suppress(FileExistsError):
            os.link(aside, found.path)
        os.unlink(aside)


def leases(repo: Repo) -> list[Left]:
    """Every runner lease of this clone: live runs' and dead ones'."""
    folder = locks_dir(repo)
    try:
        names = sorted(p for p in folder.iterdir() if p.name.startswith(PREFIX) and p.name.endswith(".lock"))
    except FileNotFoundError:
        return []
    found = []
    for path in names:
        owner = _read(path)
        if owner is not None:
            found.append(Left(path, owner))
    return found


def of_workflow(repo: Repo, workflow_id: str) -> list[Left]:
    return [left for left in leases(repo) if left.workflow_id == workflow_id]

