"""Start a workspace: branch at the base, worktree, and an active record [W1]."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pygit2

from git_harn.clock import now_iso
from git_harn.errors import BadInput, GitFailure
from git_harn.failpoints import failpoint
from git_harn.git import Repo
from git_harn.git.identity import host_name
from git_harn.store import runs as store
from git_harn.store.ids import new_workspace_id, validate_run_id
from git_harn.store.locks import hold_worktrees
from git_harn.store.record import ACTIVE, RunRecord
from git_harn.workspace.paths import (
    default_branch,
    default_path,
    registered_worktrees,
    validate_branch_name,
)
from git_harn.workspace.reconcile import GONE, presence, settle_vanished


def _base_name(repo: Repo, base_rev: str | None) -> str:
    if base_rev is not None:
        return base_rev
    try:
        return str(repo.pg.head.name) if not repo.pg.head_is_detached else "HEAD"
    except Exception:  # an unborn HEAD has no commit to start from
        raise BadInput("HEAD has no commit yet; pass --base") from None


def _check_free(repo: Repo, run_id: str) -> store.Stored | None:
    """The run's current record, if a new workspace may be started for it."""
    current = store.read(repo, run_id)
    if current is None or current.record.terminal:
        return current
    if presence(repo, current.record) == GONE:
        settled = settle_vanished(repo, current)
        if settled.terminal:
            return store.read(repo, run_id)
    _refuse_live(current.record)
    return None


def _refuse_live(record: RunRecord) -> None:
    run_id = record.runId
    raise BadInput(
        f"run {run_id} already has a workspace ({record.state}) at {record.path}; "
        f"use it, or end it with 'git harn cleanup {run_id}' or 'git harn reclaim {run_id}'"
    )


def _check_path(path: Path) -> None:
    if os.path.lexists(path) and not path.is_dir():
        raise BadInput(f"workspace path already exists and is not a folder: {path}")
    if os.path.lexists(path) and any(path.iterdir()):
        raise BadInput(f"workspace path already exists and is not empty: {path}")


@dataclass
class _Plan:
    base_name: str
    base_oid: pygit2.Oid
    branch_name: str
    existing: pygit2.Oid | None  # tip of a caller-named branch that already exists
    where: Path

    @property
    def branch_ref(self) -> str:
        return f"refs/heads/{self.branch_name}"


def check_start(repo: Repo, run_id: str, base_rev: str | None, branch: str | None,
                path: str | None) -> _Plan:
    """Check every input before anything is written [P7]."""
    current = store.read(repo, run_id)
    live = current is not None and not current.record.terminal
    if current is not None and live and presence(repo, current.record) != GONE:
        _refuse_live(current.record)
    branch_name = validate_branch_name(repo, branch or default_branch(run_id))
    existing = repo.ref_oid(f"refs/heads/{branch_name}")
    own_vanished = live and current is not None and current.record.branch == branch_name
    if existing is not None and branch is None and not own_vanished:
        raise BadInput(
            f"branch {branch_name} already exists (left by an earlier run); "
            "delete or rename it, or pass --branch"
        )
    if existing is not None and base_rev is not None:
        raise BadInput(f"--base cannot move the existing branch {branch_name}; leave --base out")
    if existing is not None and f"refs/heads/{branch_name}" in registered_worktrees(repo).values():
        raise BadInput(f"branch {branch_name} is checked out in another worktree")
    base_name = _base_name(repo, base_rev) if existing is None else f"refs/heads/{branch_name}"
    base_oid = existing or repo.resolve_commit(base_name)
    # Resolve symlinks now: git records the real path of a worktree.
    where = Path(os.path.realpath(Path(path).expanduser() if path else default_path(repo, run_id)))
    _check_path(where)
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot create {where.parent}: {exc.strerror}") from exc
    return _Plan(base_name, base_oid, branch_name, existing, where)


def start_locked(
    repo: Repo,
    run_id: str,
    base_rev: str | None = None,
    branch: str | None = None,
    path: str | None = None,
    command: list[str] | None = None,
) -> RunRecord:
    """Create the workspace for ``run_id``; the caller holds the run lock."""
    validate_run_id(run_id)
    check_start(repo, run_id, base_rev, branch, path)
    current = _check_free(repo, run_id)
    plan = check_start(repo, run_id, base_rev, branch, path)  # settling may have changed refs
    record = RunRecord(
        runId=run_id, workspaceId=new_workspace_id(), state=ACTIVE, path=str(plan.where),
        branch=plan.branch_name, base={"ref": plan.base_name, "oid": str(plan.base_oid)},
        host=host_name(repo), createdAt=now_iso(), updatedAt=now_iso(), command=command,
    )
    old_tip = current.tip if current else None
    tip = store.write(repo, record, "start", f"workspace {record.workspaceId} at {plan.where}", old_tip)
    failpoint("start-after-record")
    if plan.existing is None:
        repo.create_ref(plan.branch_ref, plan.base_oid, f"git-harn: start {run_id}")
    try:
        with hold_worktrees(repo):
            repo.git("worktree", "add", str(plan.where), plan.branch_name)
    except GitFailure:
        _undo_start(repo, record, plan, tip, old_tip)
        raise
    return record


def _undo_start(repo: Repo, record: RunRecord, plan: _Plan, tip: pygit2.Oid,
                old_tip: pygit2.Oid | None) -> None:
    """A failed ``worktree add`` leaves the branch and the record as they were."""
    if plan.existing is None and repo.ref_oid(plan.branch_ref) == plan.base_oid:
        repo.delete_ref(plan.branch_ref, plan.base_oid)
    ref = store.run_ref(record.runId)
    if old_tip is None:
        repo.delete_ref(ref, tip)
    else:
        repo.move_ref(ref, old_tip, tip, "git-harn: start failed")
