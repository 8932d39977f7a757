"""Run a command in a workspace, then clean up [W2]."""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from git_harn.git import Repo
from git_harn.notices import info
from git_harn.store import runs as store
from git_harn.store.ids import new_run_id, validate_run_id
from git_harn.store.locks import hold_run, note_agent, run_lock_path
from git_harn.store.record import RunRecord
from git_harn.workspace.cleanup import CleanupResult, cleanup_locked, refuse_remote
from git_harn.workspace.reconcile import GONE, presence, settle_vanished
from git_harn.workspace.start import check_start, start_locked

# Variables that would point the command at the wrong repository.
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
                      "GIT_PREFIX", "HARN_INTERNAL", "HARN_FAILPOINT")


@dataclass
class RunResult:
    runId: str
    workspaceId: str
    path: str
    commandExit: int
    cleanup: CleanupResult | None

    @property
    def exit_code(self) -> int:
        if self.commandExit != 0:
            return self.commandExit
        return self.cleanup.exit_code if self.cleanup else 0


@dataclass
class RunOptions:
    base: str | None = None
    branch: str | None = None
    path: str | None = None
    keep: bool = False


def _workspace_for(repo: Repo, run_id: str, argv: list[str], options: RunOptions) -> RunRecord:
    """Reuse the run's live workspace, or start a new one."""
    current = store.read(repo, run_id)
    if current is not None and not current.record.terminal:
        refuse_remote(repo, current.record)
        if presence(repo, current.record) != GONE:
            return current.record
        settled = settle_vanished(repo, current)
        if not settled.terminal:  # moved by hand: run it where it is now
            return settled
    return start_locked(repo, run_id, options.base, options.branch, options.path, command=argv)


def _execute(argv: list[str], record: RunRecord, lock: Path) -> int:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    env.update(HARN_RUN_ID=record.runId, HARN_WORKSPACE_ID=record.workspaceId,
               HARN_WORKSPACE=record.path)
    try:
        # Same process group: the command keeps the terminal (Ctrl-C reaches it directly).
        child = subprocess.Popen(argv, cwd=record.path, env=env)
    except FileNotFoundError:
        info(f"command not found: {argv[0]}")
        return 127
    except PermissionError:
        info(f"command not executable: {argv[0]}")
        return 126
    return _wait_forwarding_signals(child, lock)


def _wait_forwarding_signals(child: subprocess.Popen[bytes], lock: Path) -> int:
    """Wait for the command, then report its exit. SIGTERM and SIGHUP sent to
    git-harn go on to the command; Ctrl-C reaches it from the terminal, so
    git-harn only outlasts it. If git-harn is killed outright, the command's
    pid in the run lock keeps the run busy while the command still runs."""
    note_agent(lock, child.pid)

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
    return 128 - code if code < 0 else code  # killed by a signal: as a shell reports it


def _record_exit(repo: Repo, run_id: str, argv: list[str], code: int) -> None:
    def mutate(record: RunRecord | None) -> tuple[RunRecord, str, str] | None:
        if record is None:
            return None
        record.exitCode = code
        record.command = argv
        return record, "exit", f"command exited {code}"

    store.update(repo, run_id, mutate)


def run_in_workspace(repo: Repo, run_id: str | None, argv: list[str],
                     options: RunOptions) -> RunResult:
    run_id = validate_run_id(run_id) if run_id is not None else new_run_id()
    current = store.read(repo, run_id)
    if current is None or current.record.terminal:
        check_start(repo, run_id, options.base, options.branch, options.path)  # bad input: before any lock
    with hold_run(repo, run_id, "run"):
        record = _workspace_for(repo, run_id, argv, options)
        info(f"run {run_id}: {' '.join(argv)}  (in {record.path})")
        code = _execute(argv, record, run_lock_path(repo, run_id))
        _record_exit(repo, run_id, argv, code)
        result = None if options.keep else cleanup_locked(repo, run_id)
    return RunResult(run_id, record.workspaceId, record.path, code, result)
