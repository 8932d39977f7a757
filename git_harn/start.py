"""Start a workspace: branch at the base, worktree, and an active record [W1]."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

from git_harn import store
from git_harn.errors import BadInput, GitFailure
from git_harn.failpoints import failpoint
from git_harn.git import Repo
from git_harn.identity import host_name, now_iso
from git_harn.ids import new_workspace_id, validate_run_id
from git_harn.reconcile import GONE, presence, settle_vanished
from git_harn.record import ACTIVE, ALREADY_GONE, RunRecord
from git_harn.workspace import (
    default_branch,
    default_path,
    registered_worktrees,
    validate_branch_name,
)


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
        settle_vanished(repo, current)
        return store.read(repo, run_id)
    record = current.record
    raise BadInput(
        f"run {run_id} already has a workspace ({record.state}) at {record.path}; "
        f"use it, or end it with 'git harn cleanup {run_id}' or 'git harn reclaim {run_id}'"
    )


def _check_path(path: Path) -> None:
    if os.path.lexists(path) and not (path.is_dir() and not any(path.iterdir())):
        raise BadInput(f"workspace path already exists and is not empty: {path}")


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
    current = _check_free(repo, run_id)
    base_name = _base_name(repo, base_rev)
    base_oid = repo.resolve_commit(base_name)
    branch_name = validate_branch_name(repo, branch or default_branch(run_id))
    branch_ref = f"refs/heads/{branch_name}"
    existing = repo.ref_oid(branch_ref)
    if existing is not None and branch is None:
        raise BadInput(
            f"branch {branch_name} already exists (left by an earlier run); "
            "delete or rename it, or pass --branch"
        )
    if existing is not None and branch_ref in registered_worktrees(repo).values():
        raise BadInput(f"branch {branch_name} is checked out in another worktree")
    where = Path(path).expanduser().absolute() if path else default_path(repo, run_id)
    _check_path(where)
    record = RunRecord(
        runId=run_id, workspaceId=new_workspace_id(), state=ACTIVE, path=str(where),
        branch=branch_name, base={"ref": base_name, "oid": str(existing or base_oid)},
        host=host_name(repo), createdAt=now_iso(), updatedAt=now_iso(), command=command,
    )
    tip = store.write(repo, record, "start", f"workspace {record.workspaceId} at {where}",
                      current.tip if current else None)
    failpoint("start-after-record")
    if existing is None:
        repo.create_ref(branch_ref, base_oid, f"git-harn: start {run_id}")
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        repo.git("worktree", "add", str(where), branch_name)
    except (GitFailure, OSError) as exc:
        _undo_start(repo, record, tip, created_branch=existing is None, base_oid=base_oid)
        if isinstance(exc, OSError):
            raise BadInput(f"cannot create {where}: {exc.strerror}") from exc
        raise
    return record


def _undo_start(repo: Repo, record: RunRecord, tip: pygit2.Oid, created_branch: bool,
                base_oid: pygit2.Oid) -> None:
    """A failed ``worktree add`` leaves nothing behind but the record's history."""
    if created_branch and repo.ref_oid(record.branch_ref) == base_oid:
        repo.delete_ref(record.branch_ref, base_oid)
    record.state = ALREADY_GONE
    record.lastOutcome = ALREADY_GONE
    record.reason = "start failed: the worktree could not be created"
    store.write(repo, record, "start-failed", record.reason, tip)
