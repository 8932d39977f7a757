"""Run a command in a workspace, then clean up [W2]."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from git_harn.errors import Refused, exit_code_for
from git_harn.git import Repo
from git_harn.git.env import operator_env
from git_harn.git.pins import pinned
from git_harn.notices import info
from git_harn.proc import run_foreground
from git_harn.results import Result
from git_harn.store import runs as store
from git_harn.store.ids import new_run_id, validate_run_id
from git_harn.store.locks import hold_run, note_agent, run_lock_path
from git_harn.store.record import RunRecord
from git_harn.store.seal import Seal
from git_harn.workspace.cleanup import CleanupResult, cleanup_locked
from git_harn.workspace.reconcile import GONE, MISSING, presence, refuse_out_of_reach, settle_vanished, whereabouts
from git_harn.workspace.start import check_start, start_locked


@dataclass
class RunResult(Result):
    SCHEMA: ClassVar[str] = "run-result"

    runId: str
    workspaceId: str
    path: str
    commandExit: int
    cleanup: CleanupResult | None
    tamper: dict[str, Any] | None = None  # what the command changed of what git obeys, undone [T2]

    @property
    def outcome(self) -> str:
        return TAMPERED if self.tamper is not None else "ran"

    def document(self) -> dict[str, Any]:
        body = super().document()
        body["cleanup"] = self.cleanup.document() if self.cleanup else None
        body["outcome"] = self.outcome
        return body

    @property
    def exit_code(self) -> int:
        if self.tamper is not None:
            return exit_code_for(TAMPERED)
        if self.commandExit != 0:
            return self.commandExit
        return self.cleanup.exit_code if self.cleanup else 0


TAMPERED = "run-tampered"  # the command changed the repository's config, hooks, info, admin files or refs


@dataclass
class RunOptions:
    base: str | None = None
    branch: str | None = None
    path: str | None = None
    keep: bool = False
    # Under --json stdout carries one document, so the command's stdout goes to stderr.
    stdout_to_stderr: bool = False


def _workspace_for(repo: Repo, run_id: str, argv: list[str], options: RunOptions) -> RunRecord:
    """Reuse the run's live workspace, or start a new one."""
    current = store.read(repo, run_id)
    if current is not None and not current.record.terminal:
        refuse_out_of_reach(repo, current.record)
        where = presence(repo, current.record)
        if where == MISSING:
            raise Refused(f"run {run_id}: {whereabouts(repo, current.record, where)}; nothing was run")
        if where != GONE:
            return current.record
        settled = settle_vanished(repo, current)
        if not settled.terminal:  # moved by hand: run it where it is now
            return settled
    return start_locked(repo, run_id, options.base, options.branch, options.path, command=argv)


def _execute(argv: list[str], record: RunRecord, lock: Path, stdout_to_stderr: bool) -> int:
    env = operator_env({"HARN_RUN_ID": record.runId, "HARN_WORKSPACE_ID": record.workspaceId,
                     "HARN_WORKSPACE": record.path})
    # If git-harn is killed outright, the command's pid in the run lock keeps
    # the run busy while the command still runs.
    code, problem = run_foreground(argv, Path(record.path), env, on_start=lambda pid: note_agent(lock, pid),
                                   stdout_to_stderr=stdout_to_stderr)
    if problem:
        info(problem)
    return code


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
        check_start(repo, run_id, options.base, options.branch, options.path, current)  # bad input: before any lock
    with hold_run(repo, run_id, "run"):
        record = _workspace_for(repo, run_id, argv, options)
        info(f"run {run_id}: {shlex.join(argv)}  (in {record.path})")
        seal = Seal(repo, run_id, repo.common_dir / "harnery" / "run" / run_id / "tamper",
                    exclude={record.branch_ref})  # the command's own branch is its own
        with pinned(repo.cli_cwd), seal.installed():  # as they are before the command starts [T1]
            code = _execute(argv, record, run_lock_path(repo, run_id), options.stdout_to_stderr)
            tamper = seal.check()  # put back before any git of the host's runs again
        if tamper is not None:
            info(f"run {run_id}: the command tampered with what git obeys: {tamper.detail}; undone")
        _record_exit(repo, run_id, argv, code)
        result = None if options.keep else cleanup_locked(repo, run_id)
    return RunResult(run_id, record.workspaceId, record.path, code, result,
                     tamper.document() if tamper is not None else None)
