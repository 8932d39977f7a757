"""A task's workspace: started at the run's base, resumed when its branch
survived, and its run lock told which agent and stage work there [P2]."""

from __future__ import annotations

import threading
from contextlib import suppress
from typing import Any

from git_harn.git import Oid, Repo
from git_harn.store import locks, runs
from git_harn.workspace.resume import resume_locked
from git_harn.workspace.start import start_locked


def start_workspace(repo: Repo, run_id: str, base: Oid, branch: str) -> Any:
    """A git-harn workspace on ``branch`` at ``base``; the caller holds the run lock."""
    return start_locked(repo, run_id, str(base), branch, None, None)


def resume_workspace(repo: Repo, run_id: str, branch: str, why: str) -> Any:
    """The workspace of a surviving ``branch``: the run's own preserved one put
    back to work, else a new one on the branch as it is; the caller holds the
    run lock."""
    current = runs.read(repo, run_id)
    if current is not None and not current.record.terminal:
        return resume_locked(repo, run_id, why)
    return start_locked(repo, run_id, None, branch, None, None)


# One writer of run locks at a time in this process: the run's tasks note
# their agents and stages from several threads.
_NOTE_LOCK = threading.Lock()


def note_agent(repo: Repo, run_id: str, pid: int) -> None:
    """Name the agent in the run's lock, so the lock outlives a killed host
    while the agent runs (best effort)."""
    with _NOTE_LOCK, suppress(OSError):
        locks.note_agent(locks.run_lock_path(repo, run_id), pid)


def note_stage(repo: Repo, run_id: str, stage: str) -> None:
    """Name the task's stage in its run lock (read back when a killed run is settled)."""
    with _NOTE_LOCK, suppress(OSError):
        locks.note_stage(locks.run_lock_path(repo, run_id), stage)
