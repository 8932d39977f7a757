"""``git harn workflow discard <task-id>``: retire a surviving task branch on
purpose, so normal selection can rebuild the task [R8] [P1] [P2].

Never a bare delete. First every git-harn workspace on ``roadmap-<id>`` is
reclaimed (its uncommitted work and its commits go to
``harnery/salvage/<run-id>``, then cleanup releases it); then a branch tip
that no other ref holds is kept under ``harnery/salvage/roadmap-<id>``;
only then is ``roadmap-<id>`` deleted, with a compare-and-swap. A rerun
after a crash finishes the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from git_harn.errors import BadInput
from git_harn.git import Repo
from git_harn.git.branches import keep_ref
from git_harn.results import Result
from git_harn.store.bookkeeping import history_tips
from git_harn.store.locks import hold_run
from git_harn.store.record import TERMINAL
from git_harn.tasks.roadmap import task_branch, validate_task_id
from git_harn.workspace.reclaim import SALVAGE, reclaim_locked
from git_harn.workspace.reconcile import delete_branch_if_safe
from git_harn.workspace.resume import workspaces_on

SALVAGE_PREFIX = "refs/heads/harnery/salvage/"


@dataclass
class DiscardResult(Result):
    SCHEMA: ClassVar[str] = "workflow-discard"

    taskId: str
    branch: str
    tip: str | None
    workspaces: list[dict[str, Any]] = field(default_factory=list)
    keptAt: str | None = None  # the salvage ref that holds the branch's own commits
    deleted: bool = False
    reason: str = ""
    outcome: str = "ok"


def surviving(repo: Repo, task_id: str) -> tuple[str, Any, list[Any]]:
    """(branch, tip or None, workspace records); BadInput when there is nothing to discard [P7]."""
    branch = task_branch(validate_task_id(task_id))
    tip = repo.ref_oid(f"refs/heads/{branch}")
    records = workspaces_on(repo, branch)
    if tip is None and not records:
        raise BadInput(f"no surviving branch {branch} and no workspace on it: nothing to discard")
    return branch, tip, records


def discard(repo: Repo, task_id: str) -> DiscardResult:
    branch, tip, records = surviving(repo, task_id)
    result = DiscardResult(task_id, branch, str(tip) if tip is not None else None)
    for record in records:
        with hold_run(repo, record.runId, f"workflow discard {task_id}"):
            done = reclaim_locked(repo, record.runId, SALVAGE)
        result.workspaces.append({"runId": done.runId, "state": done.state, "outcome": done.outcome,
                                  "salvage": done.salvage, "reason": done.reason})
        if done.state not in TERMINAL:
            result.outcome = "refused"
            result.reason = f"workspace of run {done.runId} is {done.state}, so {branch} is kept: {done.reason}"
            return result
    ref = f"refs/heads/{branch}"
    now = repo.ref_oid(ref)
    if now is not None and repo.unique_commits(now, {ref}, tips=history_tips(repo)):
        result.keptAt = keep_ref(repo, f"{SALVAGE_PREFIX}{branch}", now,
                                 f"git-harn: workflow discard {task_id}: {branch} kept before its deletion")
    if now is None and tip is not None:  # the reclaim of its workspace deleted it, its work kept
        runs = ", ".join(ws["runId"] for ws in result.workspaces)
        result.deleted, result.reason = True, f"branch {branch} deleted by the reclaim of run {runs}"
        return result
    result.deleted, result.reason = delete_branch_if_safe(repo, ref)
    if not result.deleted:
        result.outcome = "refused"
    return result
