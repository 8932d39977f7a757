"""Start a workspace: branch at the base, worktree, and an active record [W1]."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from git_harn import notices
from git_harn.clock import now_iso
from git_harn.errors import BadInput, GitFailure
from git_harn.failpoints import failpoint
from git_harn.git import Oid, Repo
from git_harn.git.hookspath import provide_hooks_folder
from git_harn.git.identity import host_name
from git_harn.git.refnames import branch_name
from git_harn.git.worktrees import add_worktree, registered_worktrees
from git_harn.results import Result
from git_harn.store import runs as store
from git_harn.store.clone import this_clone
from git_harn.store.ids import new_run_id, new_workspace_id, validate_run_id
from git_harn.store.locks import hold_run, hold_worktrees
from git_harn.store.record import ACTIVE, RunRecord
from git_harn.workspace.here import workspace_here
from git_harn.workspace.paths import WS_BRANCH_PREFIX, default_branch, default_path, ignore_root
from git_harn.workspace.reconcile import GONE, MISSING, presence, refuse_out_of_reach, settle_vanished, whereabouts


@dataclass
class StartResult(Result):
    SCHEMA: ClassVar[str] = "run-record"

    record: RunRecord
    outcome: str = "ok"

    def document(self) -> dict[str, object]:
        return self.record.as_dict()


def _base_name(repo: Repo, base_rev: str | None) -> str:
    if base_rev is not None:
        return base_rev
    return repo.head_branch() or "HEAD"


def _refuse_live(repo: Repo, record: RunRecord) -> None:
    run_id = record.runId
    refuse_out_of_reach(repo, record)
    where = presence(repo, record)
    if where == MISSING:
        raise BadInput(f"run {run_id} already has a workspace ({record.state}): {whereabouts(repo, record, where)}")
    raise BadInput(
        f"run {run_id} already has a workspace ({record.state}) at {record.path}; "
        f"use it, or end it with 'git harn cleanup {run_id}' or 'git harn reclaim {run_id}'"
    )


def _check_path(path: Path) -> None:
    if os.path.lexists(path) and not path.is_dir():
        raise BadInput(f"workspace path already exists and is not a folder: {path}")
    if os.path.lexists(path) and any(path.iterdir()):
        raise BadInput(f"workspace path already exists and is not empty: {path}")


def _refuse_another_runs_branch(name: str, run_id: str) -> None:
    """``harnery/ws/<id>`` is the workspace branch of run ``<id>`` and of no
    other: the branch guard finds a branch's run by that name alone [H1]."""
    owner = name.removeprefix(WS_BRANCH_PREFIX)
    if name.startswith(WS_BRANCH_PREFIX) and owner != run_id:
        raise BadInput(f"branch {name} is the workspace branch of run {owner}, no other; "
                       "name another branch")


@dataclass
class Plan:
    """What a start will make, every input checked [P7]."""

    base_name: str
    base_oid: Oid
    branch_name: str
    existing: Oid | None  # tip of a caller-named branch that already exists
    where: Path

    @property
    def branch_ref(self) -> str:
        return f"refs/heads/{self.branch_name}"


def check_start(repo: Repo, run_id: str, base_rev: str | None, branch: str | None,
                path: str | None, current: store.Stored | None) -> Plan:
    """Check every input against the run's ``current`` record before anything is written [P7]."""
    live = current is not None and not current.record.terminal
    if current is not None and live and presence(repo, current.record) != GONE:
        _refuse_live(repo, current.record)
    name = branch_name(branch or default_branch(run_id))
    _refuse_another_runs_branch(name, run_id)
    existing = repo.ref_oid(f"refs/heads/{name}")
    own_vanished = live and current is not None and current.record.branch == name
    if existing is not None and branch is None and not own_vanished:
        raise BadInput(f"branch {name} already exists (left by an earlier run); delete or rename it, or pass --branch")
    if existing is not None and base_rev is not None:
        raise BadInput(f"--base cannot move the existing branch {name}; leave --base out")
    if existing is not None and f"refs/heads/{name}" in registered_worktrees(repo).values():
        raise BadInput(f"branch {name} is checked out in another worktree")
    base_name = _base_name(repo, base_rev) if existing is None else f"refs/heads/{name}"
    base_oid = existing or repo.resolve_commit(base_name)
    # Resolve symlinks now: git records the real path of a worktree.
    where = Path(os.path.realpath(Path(path).expanduser() if path else default_path(repo, run_id)))
    _check_path(where)
    try:
        if path is None:
            ignore_root(repo, where.parent.parent)
        where.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot create {where.parent}: {exc.strerror}") from exc
    return Plan(base_name, base_oid, name, existing, where)


def start(repo: Repo, run_id: str | None, base_rev: str | None = None, branch: str | None = None,
          path: str | None = None) -> StartResult:
    """``git harn start``: bad input fails before any lock is made, then the start runs under the run lock."""
    run_id = validate_run_id(run_id) if run_id is not None else new_run_id()
    check_start(repo, run_id, base_rev, branch, path, store.read(repo, run_id))
    with hold_run(repo, run_id, "start"):
        return StartResult(start_locked(repo, run_id, base_rev, branch, path))


def start_locked(repo: Repo, run_id: str, base_rev: str | None = None, branch: str | None = None,
                 path: str | None = None, command: list[str] | None = None) -> RunRecord:
    """Create the workspace for ``run_id``; the caller holds the run lock."""
    validate_run_id(run_id)
    current = store.read(repo, run_id)
    if current is not None and not current.record.terminal and presence(repo, current.record) == GONE:
        settle_vanished(repo, current)  # may follow a moved worktree, or end the old one
        current = store.read(repo, run_id)
    plan = check_start(repo, run_id, base_rev, branch, path, current)
    if base_rev is None and plan.existing is None:
        _say_nested_base(repo, plan)
    record = RunRecord(
        runId=run_id, workspaceId=new_workspace_id(), state=ACTIVE, path=str(plan.where),
        branch=plan.branch_name, base={"ref": plan.base_name, "oid": str(plan.base_oid)},
        host=host_name(repo), createdAt=now_iso(), updatedAt=now_iso(), command=command,
        clone=this_clone(repo), branchCreated=_creates_branch(plan, current),
    )
    old_tip = current.tip if current else None
    tip = store.write(repo, record, "start", f"workspace {record.workspaceId} at {plan.where}", old_tip)
    failpoint("start-after-record")
    if plan.existing is None:
        repo.create_ref(plan.branch_ref, plan.base_oid, f"git-harn: start {run_id}")
    try:
        with hold_worktrees(repo):
            add_worktree(repo, plan.where, plan.branch_name)
    except GitFailure:
        _undo_start(repo, record, plan, tip, old_tip)
        raise
    _give_hooks(repo, plan.where)
    return record


def _say_nested_base(repo: Repo, plan: Plan) -> None:
    """Started from inside a workspace, the default base is that workspace's
    branch: meant for a nested start, a surprise otherwise."""
    here = workspace_here(repo)
    if here is not None:
        notices.info(f"the base is {plan.base_name.removeprefix('refs/heads/')}, the branch of workspace "
                     f"{here.runId} this runs in; pass --base to start from another revision")


def _creates_branch(plan: Plan, current: store.Stored | None) -> bool:
    """Whether the branch is git-harn's to delete later: made now, or made for
    an earlier workspace of the same run (a branch kept when it ended). A
    branch the caller named that existed before is the caller's [P1]."""
    if plan.existing is None:
        return True
    earlier = current.record if current is not None else None
    return earlier is not None and earlier.branch == plan.branch_name and earlier.owns_branch


def _give_hooks(repo: Repo, where: Path) -> None:
    """A relative core.hooksPath (husky's .husky/_) is copied from the main
    worktree, so git runs the same hooks, and the guard, in the workspace [H1]."""
    try:
        warning = provide_hooks_folder(repo, where)
    except (OSError, GitFailure) as exc:
        warning = f"could not give the workspace its hooks folder: {exc}"
    if warning:
        notices.warn(warning)


def _undo_start(repo: Repo, record: RunRecord, plan: Plan, tip: Oid, old_tip: Oid | None) -> None:
    """A failed ``worktree add`` leaves the branch and the record as they were."""
    if plan.existing is None and repo.ref_oid(plan.branch_ref) == plan.base_oid:
        repo.delete_ref(plan.branch_ref, plan.base_oid)
    store.undo(repo, record.runId, tip, old_tip)
