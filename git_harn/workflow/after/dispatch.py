"""Whether, and where, a surviving branch may re-enter the pipeline [R7].

The host decides from its own evidence [A1], never from an agent's word:
``review_gap`` holds review mode's conditions (clean, committed,
task-scoped, validation evidence, not an addendum, evidence collected);
``continue_at`` reads the committed ExecPlan's ``Status:`` for continue
mode; ``resume_blocker`` holds what both modes need of the workspace.
Each refusal is a (reason, detail) pair; the reason is machine-readable.
"""

from __future__ import annotations

import os
from typing import Any

from git_harn.assess.assessor import ADOPT_COMPLETE, ADOPT_PARTIAL, UNVERIFIED_VALIDATION, has_reason
from git_harn.assess.evidence import Evidence
from git_harn.git import Repo
from git_harn.store import runs
from git_harn.tasks.config import Stage
from git_harn.workflow.model.state import SkipReason
from git_harn.workspace.resume import resumable, workspaces_on

ADDENDUM = "addendum-branch"
COLLECTION_ERROR = "evidence-collection-error"
DIRTY = "dirty-worktree"
NO_COMMITS = "no-committed-work"
NOT_SCOPED = "not-task-scoped"
NO_VALIDATION = "missing-validation-evidence"
MISSING_WORKTREE = "missing-worktree"
PLAN_BLOCKED = "plan-blocked"
PLAN_UNREADABLE = "plan-unreadable"
UNMANAGED_WORKTREE = "unmanaged-worktree"
WORKSPACE_BUSY = "workspace-not-resumable"

Refusal = tuple[str, str]
# what continue mode refuses too: such a survivor is discarded, not resumed, to move on
CONTINUE_REFUSALS = (COLLECTION_ERROR, DIRTY, PLAN_BLOCKED, PLAN_UNREADABLE, MISSING_WORKTREE, UNMANAGED_WORKTREE,
                     WORKSPACE_BUSY)

# ExecPlan status -> the stage the branch re-enters at (continue mode)
CONTINUE_AT = {"DRAFT": Stage.PLAN, "APPROVED": Stage.IMPLEMENT, "IN PROGRESS": Stage.IMPLEMENT,
               "COMPLETE": Stage.REVIEW}


def _common(evidence: Evidence) -> Refusal | None:
    """What neither mode resumes: an addendum, untrustworthy evidence, a dirty tree."""
    if evidence.addendum:
        return ADDENDUM, f"{evidence.branch} is an addendum branch: an operator merges it, never the workflow"
    if evidence.collectionError is not None:
        return COLLECTION_ERROR, f"host evidence could not be collected: {evidence.collectionError}"
    worktree = evidence.worktree
    if worktree is not None and (worktree.dirtyCount or 0) > 0:
        shown = ", ".join(d.path for d in worktree.dirtyPaths[:3])
        return DIRTY, f"{worktree.path} has {worktree.dirtyCount} uncommitted path(s), e.g. {shown}"
    return None


def review_gap(evidence: Evidence, assessment: dict[str, Any]) -> Refusal | None:
    """Why an ``adopt-complete`` may not go to review, in a fixed order; else None."""
    common = _common(evidence)
    if common is not None:
        return common
    if not evidence.ahead or evidence.alreadyInBase:
        return NO_COMMITS, f"{evidence.branch} has no commit of its own ahead of {evidence.base['rev']}"
    if evidence.taskScoped is not True:
        return NOT_SCOPED, "; ".join(evidence.scopeViolations) or "the change is not scoped to its task"
    gates = evidence.validation
    # an unverified gates note is no refusal: review mode runs the gates again on the tip first
    if (gates is None and not evidence.validationUnverified) or (gates is not None and not gates.get("passed")):
        why = "no gates recorded" if gates is None else "the gates failed"
        return NO_VALIDATION, f"{why} on the tip {evidence.tip[:12]}"
    gaps = [g.split(":", 1) for g in assessment.get("missingEvidence", []) if not _rerun(g)]
    if gaps:
        return gaps[0][0].strip(), (gaps[0][1].strip() if len(gaps[0]) > 1 else gaps[0][0])
    return None


def _rerun(gap: str) -> bool:
    """A gap the gates close when they run again on the tip (a gates note not verified here)."""
    return gap.split(":", 1)[0].strip() == UNVERIFIED_VALIDATION


def gates_rerun_only(assessment: dict[str, Any]) -> bool:
    """The assessment's only blocking gap is a gates note not verified here:
    review mode may take the branch, as it runs the gates first anyway."""
    gaps = assessment.get("missingEvidence", [])
    judged = assessment["classification"] in (ADOPT_COMPLETE, ADOPT_PARTIAL) or has_reason(
        assessment, "downgraded-adopt-complete")
    return judged and bool(gaps) and all(_rerun(g) for g in gaps)


def continue_at(evidence: Evidence) -> tuple[str | None, str | None, str]:
    """(stage to re-enter at, None, detail) or (None, reason, detail)."""
    common = _common(evidence)
    if common is not None:
        return None, common[0], common[1]
    plan = evidence.execPlan
    if plan is None or plan.path is None:
        return Stage.PLAN, None, "no ExecPlan is committed: planning"
    if plan.status is None:
        return None, PLAN_UNREADABLE, f"the committed {plan.path} has no Status: line the host can read"
    if plan.status == "BLOCKED":
        return None, PLAN_BLOCKED, f"the committed {plan.path} says Status: BLOCKED"
    asked = to_answer(evidence)
    if plan.status == "COMPLETE" and asked:
        what = " and ".join(words for key, words in (("gateFailure", "the gates failed"),
                                                     ("findings", "its reviewers refused it")) if key in asked)
        return Stage.IMPLEMENT, None, (f"{plan.path} says Status: COMPLETE, but {what} on the tip: implementing "
                                   "again with what they said (the same tip would only fail the same way)")
    return CONTINUE_AT[plan.status], None, f"{plan.path} says Status: {plan.status}"


def to_answer(evidence: Evidence) -> dict[str, Any]:
    """What the tip's own evidence, verified on this machine, asks of the
    next implement attempt: ``gateFailure`` (the failed gates and their
    output) and ``findings`` (the reviewers' blocking findings). A note that
    does not verify here asks nothing: the gates and review run again."""
    asked: dict[str, Any] = {}
    gates = evidence.validation
    if gates is not None and not gates.get("passed"):
        asked["gateFailure"] = {"commit": gates["commit"], "commands": [
            {key: command.get(key) for key in ("argv", "exitCode", "error", "outputTail")}
            for command in gates["commands"] if command.get("exitCode") != 0]}
    review = evidence.review
    if review is not None and not review.get("approved"):
        asked["findings"] = [_finding(b, review.get("round")) for b in review["blocking"] if isinstance(b, dict)] \
            or [{"severity": "blocking", "text": "the reviewers refused the tip without a blocking finding"}]
    return asked


def _finding(noted: dict[str, Any], round_no: Any) -> dict[str, Any]:
    """A blocking finding of the review note, in the shape implement gets findings in."""
    finding: dict[str, Any] = {"severity": "blocking", "text": str(noted.get("text") or "")}
    if isinstance(noted.get("path"), str):
        finding["path"] = noted["path"]
    if isinstance(noted.get("reviewer"), int):
        finding["reviewer"] = noted["reviewer"]
    if isinstance(round_no, int):
        finding["round"] = round_no
    return finding


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def workspace_run(repo: Repo, branch: str, evidence: Evidence) -> str | None:
    """The run id of the git-harn workspace the branch is checked out in, if any."""
    if evidence.worktree is None:
        return None
    for record in workspaces_on(repo, branch):
        if _same(record.path, evidence.worktree.path):
            return record.runId
    return None


def resume_blocker(repo: Repo, branch: str, task_id: str, evidence: Evidence, ready: set[str]) -> Refusal | None:
    """What keeps a branch the host would resume from re-entering the pipeline."""
    if task_id not in ready:
        return SkipReason.WAITING, f"task {task_id} requires tasks not ticked at the base yet"
    worktree = evidence.worktree
    if worktree is None:
        return None  # a new workspace is started on the branch as it is
    if not worktree.present:
        return MISSING_WORKTREE, (f"{branch} is checked out in {worktree.path}, which is missing; "
                                  "'git worktree prune' or 'git harn cleanup' settles that first")
    run_id = workspace_run(repo, branch, evidence)
    if run_id is None:
        return UNMANAGED_WORKTREE, f"{branch} is checked out in {worktree.path}, which is not a git-harn workspace"
    stored = runs.read(repo, run_id)
    problem = resumable(repo, stored.record) if stored is not None else "its record is gone"
    if problem is not None:
        return WORKSPACE_BUSY, problem
    return None
