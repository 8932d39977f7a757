"""The one adapter between the workflow and the rest of git-harn.

Every domain entry point the workflow uses (workspaces, gates, integration,
the roadmap, ExecPlans, notes, bounded commands, locks) is called from here,
so a rename elsewhere is one edit here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from git_harn.assess import gates as _gates
from git_harn.clock import waiting
from git_harn.errors import BadInput, HarnError
from git_harn.git import Repo, open_repo
from git_harn.git import workflow_refs as refs
from git_harn.git import worktrees as _worktrees
from git_harn.git.workdir import dirty_paths
from git_harn.git.workflow_refs import Oid
from git_harn.integrate import crash as _crash
from git_harn.integrate import land as _land
from git_harn.integrate import report as _report
from git_harn.integrate import target as _target
from git_harn.integrate.worktree import integration_worktree
from git_harn.proc import NEVER_STARTS, Finished, exit_status, exit_words, kill_group, run_bounded, tail
from git_harn.results import CheckResult
from git_harn.store import locks as _locks
from git_harn.store import runs as _runs
from git_harn.store.bookkeeping import history_tips
from git_harn.store.notes import merge_note, read_note
from git_harn.tasks import execplan as _execplan
from git_harn.tasks import roadmap as _roadmap
from git_harn.tasks.branches import Base, Branch
from git_harn.tasks.config import (
    ADAPTERS,
    COMMAND_ADAPTER,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_REMOTE,
    DEFAULT_REVIEW_ROUNDS,
    DEFAULT_SCHEMA_RETRIES,
    DEFAULT_STAGE_ATTEMPTS,
    DEFAULT_STAGE_TIMEOUT,
    MAX_PARALLEL,
    MAX_RETRIES,
    STAGES,
    WORKFLOW_FILE,
    AgentSettings,
    WorkflowSettings,
    parse_toml,
    workflow_settings,
)
from git_harn.text import jsonable
from git_harn.workspace import here as _here
from git_harn.workspace.cleanup import CleanupResult, cleanup_locked
from git_harn.workspace.reconcile import pin_detached_head, refuse_out_of_reach
from git_harn.workspace.resume import resume_locked
from git_harn.workspace.start import start_locked

Task = _roadmap.Task
Roadmap = _roadmap.Roadmap

__all__ = [
    "ADAPTERS", "COMMAND_ADAPTER", "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_REMOTE", "DEFAULT_REVIEW_ROUNDS", "DEFAULT_STAGE_TIMEOUT", "MAX_PARALLEL", "STAGES",
    "DEFAULT_SCHEMA_RETRIES", "DEFAULT_STAGE_ATTEMPTS", "MAX_RETRIES",
    "AgentSettings", "WorkflowSettings", "WORKFLOW_FILE", "Base", "Branch", "CheckResult", "CleanupResult",
    "Finished", "Roadmap", "Task",
    "NEVER_STARTS", "exit_status", "exit_words", "kill_group", "merge_note", "read_note", "refs", "run_bounded", "tail",
    "ADMIN_LOCKS", "history_tips", "integration_worktree", "pin_detached_head", "refuse_out_of_reach",
]

ADMIN_LOCKS = _worktrees.ADMIN_LOCKS


def refuse_in_workspace(repo: Repo, command: str) -> None:
    _here.refuse_in_workspace(repo, command)


def reopen(repo: Repo) -> Repo:
    """Another handle on the same repository, for another thread."""
    return open_repo(repo.invoked_from)


# --- configuration and roadmap, read at a commit [P5] -------------------------


def settings_at(repo: Repo, commit: Oid, rev: str) -> WorkflowSettings | None:
    raw = refs.file_at(repo, commit, WORKFLOW_FILE)
    if raw is None:
        return None
    where = f"{WORKFLOW_FILE} at {rev}"
    return workflow_settings(parse_toml(raw, where), where)


def roadmap_file(repo: Repo) -> str:
    return _target.roadmap_file(repo)


# The roadmap is read whole or not at all: the remediation flush writes it
# back, so a prefix would drop every task after the cut [P5].
ROADMAP_LIMIT = 16 << 20


def roadmap_bytes_at(repo: Repo, commit: Oid) -> bytes | None:
    """The whole roadmap at ``commit`` (None: absent); TooLarge past ROADMAP_LIMIT."""
    return refs.file_at(repo, commit, roadmap_file(repo), limit=ROADMAP_LIMIT)


def roadmap_at(repo: Repo, commit: Oid) -> _roadmap.Roadmap | None:
    """The roadmap's tasks and unparsed lines at ``commit``; BadInput (naming
    the file) when two tasks there have one id; TooLarge past ROADMAP_LIMIT."""
    raw = roadmap_bytes_at(repo, commit)
    if raw is None:
        return None
    try:
        return _roadmap.read_roadmap(_roadmap.decode(raw))
    except BadInput as exc:
        raise BadInput(f"{roadmap_file(repo)} at {str(commit)[:12]}: {exc}") from None


def tasks_at(repo: Repo, commit: Oid) -> list[Task] | None:
    roadmap = roadmap_at(repo, commit)
    return None if roadmap is None else roadmap.tasks


def unblocked(tasks: list[Task]) -> list[Task]:
    return _roadmap.unblocked(tasks)


def unknown_requirements(tasks: list[Task], task: Task) -> list[str]:
    return _roadmap.unknown_requirements(tasks, task)


def task_branch(task_id: str) -> str:
    return _roadmap.task_branch(task_id)


# --- ExecPlans ---------------------------------------------------------------


def plans_dir(repo: Repo) -> str:
    return _execplan.plans_dir(repo)


def plan_at(repo: Repo, commit: Oid, task_id: str) -> tuple[str | None, str | None]:
    """(path of the task's ExecPlan at ``commit``, its Status) — (None, None) if none."""
    folder = plans_dir(repo)
    names = [n for n in refs.names_in(repo, commit, folder) if n.endswith(".md")]
    name = _execplan.task_plan_name(names, task_id)
    if name is None:
        return None, None
    path = f"{folder}/{name}"
    raw = _execplan.plan_bytes(repo, commit, path)  # its status line is near the top
    return path, (_execplan.parse_status(raw) if raw is not None else None)


# --- workspaces [P2] -----------------------------------------------------------


def hold_run(repo: Repo, run_id: str, purpose: str) -> Any:
    return _locks.hold_run(repo, run_id, purpose)


def run_lock_path(repo: Repo, run_id: str) -> Path:
    return _locks.run_lock_path(repo, run_id)


def live_workspace_branches(repo: Repo) -> dict[str, str]:
    """Branch -> who holds it, for every workspace whose run lock a live
    process (or a command it started) holds: a live run works there [L2]."""
    found = {}
    for run_id, owner in _locks.live_run_locks(repo).items():
        stored = _runs.read(repo, run_id)
        if stored is not None and not stored.record.terminal:
            found[stored.record.branch] = (f"run {run_id} ({owner.get('purpose') or 'busy'}, pid "
                                           f"{owner.get('pid', '?')} on {owner.get('host', '?')})")
    return found


_NOTE_LOCK = threading.Lock()


def note_agent(repo: Repo, run_id: str, pid: int) -> None:
    """Name the agent in the run's lock, so the lock outlives a killed host
    while the agent runs (best effort; one writer at a time in this process)."""
    with _NOTE_LOCK, suppress(OSError):
        _locks.note_agent(_locks.run_lock_path(repo, run_id), pid)


def note_stage(repo: Repo, run_id: str, stage: str) -> None:
    """Name the task's stage in its run lock (read back when a killed run is settled)."""
    with _NOTE_LOCK, suppress(OSError):
        _locks.note_stage(_locks.run_lock_path(repo, run_id), stage)


def start_workspace(repo: Repo, run_id: str, base: Oid, branch: str) -> Any:
    """A git-harn workspace on ``branch`` at ``base``; the caller holds the run lock."""
    return start_locked(repo, run_id, str(base), branch, None, None)


def resume_workspace(repo: Repo, run_id: str, branch: str, why: str) -> Any:
    """The workspace of a surviving ``branch``: the run's own preserved one put
    back to work, else a new one on the branch as it is; the caller holds the
    run lock."""
    current = _runs.read(repo, run_id)
    if current is not None and not current.record.terminal:
        return resume_locked(repo, run_id, why)
    return start_locked(repo, run_id, None, branch, None, None)


def cleanup_workspace(repo: Repo, run_id: str) -> CleanupResult:
    """The only removal path: releases a finished workspace, preserves the rest."""
    return cleanup_locked(repo, run_id)



def dirty(path: Path) -> list[str]:
    return [entry.path for entry in dirty_paths(path)]


# --- gates and integration ------------------------------------------------------


def gate_commands(repo: Repo, base: Base) -> list[list[str]]:
    return _gates.gate_commands(repo, base)[0]


def gate_timeout(repo: Repo) -> float:
    return _gates.gate_timeout(repo, None)


def run_gates(repo: Repo, branch: str, tip: Oid, base: Base, timeout: float,
              on_start: Callable[[int], None] | None = None) -> dict[str, Any]:
    result = _gates.run_gates(repo, Branch(branch, f"refs/heads/{branch}", tip), base, timeout, on_start)
    document: dict[str, Any] = jsonable(result)
    return document


# This run's own integrations take turns here first, so the merge lock is
# contended (and announced) only by other processes.
INTEGRATIONS = threading.Lock()


@contextmanager
def integration_turn() -> Iterator[None]:
    """This task's turn among the run's integrations; waiting for it is a
    merge-lock wait like any other (kept in the task's timeline)."""
    if not INTEGRATIONS.acquire(blocking=False):
        with waiting("merge-lock", "another task of this run is integrating"):
            INTEGRATIONS.acquire()
    try:
        yield
    finally:
        INTEGRATIONS.release()
INTEGRATED_PREFIX = _land.INTEGRATED_PREFIX


def keep_integrated(repo: Repo, key: str, tip: Oid, message: str) -> str:
    return refs.keep_ref(repo, INTEGRATED_PREFIX + key, tip, message)


def integration_crashed(repo: Repo, task_id: str, addendum: int | None) -> bool:
    """An integrate of this task died midway: its crash marker is still there [I4]."""
    return _crash.marker_for(repo, task_id, addendum).exists()


def integrate_builtin(repo: Repo, branch: str, base: str, remote: str, task_id: str) -> dict[str, Any]:
    with integration_turn():
        report = _land.integrate(repo, _target.Request(branch, base, remote, task_id))
    document: dict[str, Any] = jsonable(report)
    return document


def check_integration(document: Any) -> CheckResult:
    """The I3 check: schema, then all five fields."""
    return _report.check_integration(document)


def hold_merge(repo: Repo, purpose: str) -> Any:
    wait = repo.config_int("harn.mergeLockTimeout", _land.MERGE_LOCK_TIMEOUT)
    return _locks.hold_merge(repo, purpose, wait)


def ticked_at(repo: Repo, base_oid: Oid, task_id: str) -> bool:
    """The roadmap at ``base_oid`` has the task ticked."""
    tasks = tasks_at(repo, base_oid) or []
    task = _roadmap.find_task(tasks, task_id)
    return task is not None and task.done



# --- what a dead run left (workflow/settle.py) ----------------------------------------


def slug(task_id: str, addendum: int | None) -> str:
    return _target.slug(task_id, addendum)


def squash_of(repo: Repo, base: Oid, task_id: str, addendum: int | None) -> str | None:
    """The task's own squash commit on ``base`` (its ``Harnery-Task:`` trailer), if any."""
    return _land.squash_of(repo, base, task_id, addendum)


def drop_crash_marker(repo: Repo, task_id: str, addendum: int | None) -> None:
    """Forget an interrupted builtin integration of the task: git-harn has read
    the remote itself and knows whether it landed [I4]."""
    _crash.marker_for(repo, task_id, addendum).unlink(missing_ok=True)


def admin_dir(repo: Repo, path: Path) -> Path | None:
    return _worktrees.admin_dir(repo, path)


def admin_locks(admin: Path) -> list[Path]:
    return _worktrees.admin_locks(admin)


def head_of(path: Path) -> Oid | None:
    return _worktrees.head_of(path)


def reattach(worktree: Path, branch: str) -> bool:
    """Put a worktree left on a detached HEAD (mid-integration) back on its
    branch, as the runner would have; only a clean one, so no file changes
    under uncommitted work. True when it is on the branch now."""
    if refs.worktree_branch(worktree) == f"refs/heads/{branch}":
        return True
    if dirty(worktree):
        return False
    with suppress(HarnError):
        refs.attach(worktree, branch)
    return refs.worktree_branch(worktree) == f"refs/heads/{branch}"


def task_branch_of(task_id: str, addendum: int | None) -> str:
    return _roadmap.task_branch(task_id, addendum)


def checked_out_refs(repo: Repo) -> set[str]:
    """The branches some worktree of the repository has checked out."""
    return {branch for _, branch in _worktrees.checked_out_branches(repo)}
