"""Recovery of the task branches an earlier run left behind [R7] [R8].

With ``resumePartialBranches`` a fresh launch maps every surviving
``roadmap-<id>`` and ``roadmap-<id>-addendum-<n>`` branch back to a roadmap
id at ``<remote>/<base>`` (discovery), then goes as far as ``resumeMode``
allows, and no further:

- ``assess``: each candidate is judged with the in-run contract [A1]-[A3];
  nothing is written (no ref, note, index or tree);
- ``review``: an ``adopt-complete`` branch that is clean, committed,
  task-scoped and carries validation evidence re-enters at the gates (run
  again on the exact tip, whatever its notes say), then dual review and
  integration, its residual risk carried along as advisory data; a branch
  whose one gap is a gates note not verified on this machine (MAC) re-enters
  the same way, the gates deciding what the note could not; any other
  verdict stays report-only, and an ``adopt-complete`` with a gap is
  downgraded to ``continue-manual`` with the gap as its skip reason;
- ``continue``: no judgement agent; the committed ExecPlan's ``Status:``
  says where the branch re-enters the ordinary path (:mod:`.dispatch`); a
  COMPLETE plan whose tip failed its gates, or was refused by its
  reviewers (notes verified here), re-enters implementation with what they
  said, since the same tip would only fail the same way.

Every id with a surviving branch stays out of normal selection for the run;
whatever is still unresolved at the end halts the run with
``needs-operator-recovery`` (:func:`settle`), so a blocked frontier is never
mistaken for finished work.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from git_harn.assess import assessor
from git_harn.assess.evidence import Evidence, collect
from git_harn.git import Oid, Repo, to_oid
from git_harn.tasks.config import ResumeMode, Stage
from git_harn.tasks.roadmap import Task, parse_task_branch, unblocked
from git_harn.text import one_line
from git_harn.workflow.after.dispatch import (
    CONTINUE_REFUSALS,
    continue_at,
    gates_rerun_only,
    resume_blocker,
    review_gap,
    to_answer,
    workspace_run,
)
from git_harn.workflow.model import state
from git_harn.workflow.model.config import Effective
from git_harn.workflow.model.result import WorkflowResult
from git_harn.workflow.model.state import SkipReason, State
from git_harn.workflow.task.pipeline import REVIEW_ONLY, run_id_for
from git_harn.workspace.reconcile import delete_branch_if_safe

BRANCH_PREFIX = "refs/heads/roadmap-"
AUTH_PREFLIGHT_FAILED = "auth-preflight-failed"

# discovery's skip reasons
UNMAPPED = "unmapped-branch"
ALREADY_COMPLETE = "already-complete"
CANDIDATE_CAP = "candidate-cap"

# what recovery did with a candidate
REPORT_ONLY = "report-only"
DOWNGRADED = "downgraded"
RESUME = "resume-"  # + the stage it re-entered at
NOT_RUN = "not-run"  # blocked before anything ran


@dataclass
class Candidate:
    task: Task
    branch: str
    addendum: int | None


@dataclass
class Resume:
    """A candidate that re-enters the pipeline."""

    task: Task
    branch: str
    stage: str
    run_id: str
    base_oid: Oid
    advisory: list[str] = field(default_factory=list)
    # what the tip's verified evidence asks of the next implement (dispatch.to_answer)
    asked: dict[str, Any] = field(default_factory=dict)


@dataclass
class Recovery:
    mode: str
    candidates: list[Candidate] = field(default_factory=list)
    capped: list[Candidate] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    assessed: list[str] = field(default_factory=list)
    resumes: list[Resume] = field(default_factory=list)
    blocked: str | None = None
    unresolved: list[dict[str, Any]] = field(default_factory=list)
    # branch -> why continue mode would not resume it (None: it would), from the host's evidence
    refusals: dict[str, str | None] = field(default_factory=dict)

    @property
    def held(self) -> set[str]:
        """Ids out of normal selection for the whole run, whatever the mode."""
        return {c.task.id for c in self.candidates + self.capped}

    def document(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "candidates": [c.branch for c in self.candidates],
            "assessed": list(self.assessed),
            "resumed": [r.branch for r in self.resumes],
            "results": [dict(r) for r in self.results],
            "skipped": [dict(s) for s in self.skipped],
            "unresolved": [dict(u) for u in self.unresolved],
            "blocked": self.blocked,
        }


def _skip(rec: Recovery, branch: str, task_id: str | None, reason: str, detail: str) -> None:
    entry: dict[str, Any] = {"branch": branch, "reason": reason, "detail": one_line(detail, 300)}
    if task_id is not None:
        entry["taskId"] = task_id
    rec.skipped.append(entry)


# --- discovery ------------------------------------------------------------------


def discover(repo: Repo, eff: Effective, tasks: list[Task], live: set[str] | None = None) -> Recovery:
    """Map surviving branches to roadmap ids; read-only. A branch a live run
    works on (``live``) is no survivor, in any mode [L2]."""
    rec = Recovery(eff.resumeMode)
    order = {t.id: n for n, t in enumerate(tasks)}
    found: list[Candidate] = []
    for ref, _ in sorted(repo.refs_under(BRANCH_PREFIX)):
        branch = ref.removeprefix("refs/heads/")
        if live and branch in live:
            continue  # held out of normal selection as live-run (select.survivors)
        parsed = parse_task_branch(branch)
        task = next((t for t in tasks if parsed and t.id == parsed[0]), None)
        if parsed is None or task is None:
            _skip(rec, branch, parsed[0] if parsed else None, UNMAPPED,
                  f"no task {parsed[0] if parsed else branch!r} in the roadmap at {eff.upstream}")
        elif _own_box_ticked(task, parsed[1]):
            what = f"addendum {parsed[1]} of task {task.id}" if parsed[1] is not None else f"task {task.id}"
            _skip(rec, branch, task.id, ALREADY_COMPLETE, f"{what} is ticked at {eff.upstream}")
        else:
            found.append(Candidate(task, branch, parsed[1]))
    found.sort(key=lambda c: (order[c.task.id], c.addendum or 0))
    rec.candidates, rec.capped = found[: eff.maxRecoveryCandidates], found[eff.maxRecoveryCandidates:]
    for cand in rec.capped:
        _skip(rec, cand.branch, cand.task.id, CANDIDATE_CAP,
              f"beyond maxRecoveryCandidates = {eff.maxRecoveryCandidates}; held out, not recovered")
    return rec


def _own_box_ticked(task: Task, addendum: int | None) -> bool:
    """The branch's own work is done: the task's box, or for an addendum
    branch that addendum's box (its task's is ticked by definition)."""
    if addendum is None:
        return task.done
    item = task.addendum(addendum)
    return item is not None and item.done


# --- the modes ------------------------------------------------------------------


def recover(repo: Repo, eff: Effective, rec: Recovery, workflow_id: str, tasks: list[Task],
            blocked: str | None = None) -> None:
    """Judge each candidate as far as the mode goes; ``blocked`` (e.g. a
    failed auth preflight) stops recovery before anything runs."""
    if blocked is not None:
        rec.blocked = blocked
        for cand in rec.candidates:
            rec.results.append(_entry(cand, None, NOT_RUN, reason=blocked))
        return
    external = _assessor(repo, eff) if rec.mode != ResumeMode.CONTINUE else None
    ready = {t.id for t in unblocked(tasks)}
    for cand in rec.candidates:
        evidence = collect(repo, cand.branch, eff.upstream, cand.task.id)
        rec.refusals[cand.branch] = _continue_refusal(repo, cand, evidence, ready)
        if rec.mode == ResumeMode.CONTINUE:
            _continue(repo, eff, rec, workflow_id, cand, evidence, ready)
            continue
        assessment = assessor.assess(evidence, external)
        rec.assessed.append(cand.branch)
        if rec.mode == ResumeMode.ASSESS:
            rec.results.append(_entry(cand, assessment, REPORT_ONLY, reason="assess-only"))
        else:
            _review(repo, eff, rec, workflow_id, cand, evidence, assessment, ready)


def _continue_refusal(repo: Repo, cand: Candidate, evidence: Evidence, ready: set[str]) -> str | None:
    """Why continue mode would leave this branch where it is, or None (read-only)."""
    stage, reason, _ = continue_at(evidence)
    if stage is None:
        return reason
    blocker = resume_blocker(repo, cand.branch, cand.task.id, evidence, ready)
    return blocker[0] if blocker is not None else None


def _assessor(repo: Repo, eff: Effective) -> assessor.ExternalAssessor | None:
    """``[agents.assess]`` when configured, else ``harn.assessor``, else the built-in [A3]."""
    agent = eff.agents.get(Stage.ASSESS)
    if agent is None or agent.command is None:
        configured = assessor.external_assessor(repo, None)
        if configured is not None:
            configured.sandbox = eff.sandbox
        return configured
    retries = repo.config_int("harn.assessorRetries", assessor.DEFAULT_RETRIES)
    return assessor.ExternalAssessor(list(agent.command), max(0, min(retries, assessor.MAX_RETRIES)),
                                     eff.timeout_of(Stage.ASSESS), repo.workdir or repo.common_dir, agent.secrets,
                                     eff.sandbox)


def _entry(cand: Candidate, assessment: dict[str, Any] | None, action: str, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"taskId": cand.task.id, "branch": cand.branch,
                             "classification": assessment["classification"] if assessment else None,
                             "action": action}
    if assessment is not None:
        entry.update(reasons=list(assessment["reasons"]), missingEvidence=list(assessment["missingEvidence"]),
                     residualRisk=list(assessment["residualRisk"]))
    entry.update(extra)
    return entry


def _review(repo: Repo, eff: Effective, rec: Recovery, workflow_id: str, cand: Candidate, evidence: Evidence,
            assessment: dict[str, Any], ready: set[str]) -> None:
    said_complete = assessment["classification"] == assessor.ADOPT_COMPLETE or assessor.has_reason(
        assessment, "downgraded-adopt-complete")
    gap = review_gap(evidence, assessment) or resume_blocker(repo, cand.branch, cand.task.id, evidence, ready)
    if gap is None and (assessment["classification"] == assessor.ADOPT_COMPLETE or gates_rerun_only(assessment)):
        _resume(repo, rec, eff, workflow_id, cand, evidence, REVIEW_ONLY, assessment,
                list(assessment["residualRisk"]))
        return
    if said_complete:
        if assessment["classification"] == assessor.ADOPT_COMPLETE:
            assessment = dict(assessment, classification=assessor.CONTINUE_MANUAL,
                              reasons=["downgraded-adopt-complete", *assessment["reasons"]])
        reason, detail = gap or ("not-adopt-complete", "the assessor's adopt-complete was downgraded")
        rec.results.append(_entry(cand, assessment, DOWNGRADED, reason=reason))
        _skip(rec, cand.branch, cand.task.id, reason, detail)
        return
    reason, detail = gap or ("not-adopt-complete", f"classified {assessment['classification']}: report only")
    rec.results.append(_entry(cand, assessment, REPORT_ONLY, reason=reason))
    _skip(rec, cand.branch, cand.task.id, reason, detail)


def _continue(repo: Repo, eff: Effective, rec: Recovery, workflow_id: str, cand: Candidate,
              evidence: Evidence, ready: set[str]) -> None:
    stage, reason, detail = continue_at(evidence)
    if stage is not None:
        blocker = resume_blocker(repo, cand.branch, cand.task.id, evidence, ready)
        if blocker is not None:
            stage, (reason, detail) = None, blocker
    if stage is None:
        assert reason is not None
        rec.results.append(_entry(cand, None, REPORT_ONLY, reason=reason,
                                  planStatus=evidence.execPlan.status if evidence.execPlan else None))
        _skip(rec, cand.branch, cand.task.id, reason, detail)
        return
    _resume(repo, rec, eff, workflow_id, cand, evidence, stage, None, [],
            asked=to_answer(evidence) if stage == Stage.IMPLEMENT else {},
            planStatus=evidence.execPlan.status if evidence.execPlan else None)


def _resume(repo: Repo, rec: Recovery, eff: Effective, workflow_id: str, cand: Candidate, evidence: Evidence,
            stage: str, assessment: dict[str, Any] | None, advisory: list[str],
            asked: dict[str, Any] | None = None, **extra: Any) -> None:
    """Queue the candidate for the pipeline, in its own workspace when it has one."""
    run_id = workspace_run(repo, cand.branch, evidence) or run_id_for(workflow_id, cand.task.id)
    base = to_oid(evidence.mergeBase) if evidence.mergeBase else eff.base_oid
    rec.resumes.append(Resume(cand.task, cand.branch, stage, run_id, base, advisory, dict(asked or {})))
    rec.results.append(_entry(cand, assessment, RESUME + (Stage.REVIEW if stage == REVIEW_ONLY else stage),
                              runId=run_id, **extra))


# --- the end of the run ---------------------------------------------------------


def settle(repo: Repo, rec: Recovery, result: WorkflowResult, where: state.Where | None = None) -> None:
    """What is still unresolved, the next step of each, and the halt that says so [R8]."""
    where = where or state.Where(result.remote, result.base)
    landed = set()
    for entry in rec.results:
        tr = result.task(entry["taskId"]) if entry["action"].startswith(RESUME) else None
        if tr is None:
            continue
        entry["status"] = tr.status
        if State.of(tr).landed:
            landed.add(entry["branch"])
            delete_branch_if_safe(repo, f"refs/heads/{entry['branch']}")  # its tip is kept as integrated
        else:
            entry["reason"] = one_line(f"resumed, then {tr.status} at {tr.stage}: {tr.detail}", 300)
    by_branch = {e["branch"]: e for e in rec.results}
    rec.unresolved = []
    for cand in rec.candidates + rec.capped:
        if cand.branch in landed or repo.ref_oid(f"refs/heads/{cand.branch}") is None:
            continue
        entry = by_branch.get(cand.branch, {})
        reason = entry.get("reason") or (CANDIDATE_CAP if cand in rec.capped else "report-only")
        rec.unresolved.append({"id": cand.task.id, "branch": cand.branch,
                               "classification": entry.get("classification"),
                               "action": entry.get("action", "skipped"), "reason": reason,
                               "next": _next_for(result, rec, cand, entry, reason, where)})
    result.recovery = rec.document()
    if rec.unresolved and result.halted is None:
        names = ", ".join(u["branch"] for u in rec.unresolved[:5])
        more = f" … and {len(rec.unresolved) - 5} more" if len(rec.unresolved) > 5 else ""
        result.halted = (f"needs-operator-recovery: {len(rec.unresolved)} surviving branch(es) unresolved "
                         f"({names}{more}); each one's next step is in recovery.unresolved")


def _next_for(result: WorkflowResult, rec: Recovery, cand: Candidate, entry: dict[str, Any], reason: str,
              where: state.Where) -> dict[str, Any] | None:
    """What moves an unresolved survivor on: its task's own next step when
    this run resumed it, else what its reason allows."""
    tr = result.task(cand.task.id) if entry.get("action", "").startswith(RESUME) else None
    if tr is not None:
        return tr.next
    code = rec.refusals.get(cand.branch) or reason.split(":", 1)[0]
    extra = ("--max-recovery-candidates", str(len(rec.candidates) + len(rec.capped))) if code == CANDIDATE_CAP \
        else ()
    return state.survivor_advice(cand.task.id, cand.branch, code, where, code not in CONTINUE_REFUSALS,
                                 waiting=code == SkipReason.WAITING, addendum=cand.addendum is not None,
                                 extra=extra).document()


def summary_suffix(result: WorkflowResult) -> str:
    unresolved = (result.recovery or {}).get("unresolved") or []
    return f" | needs-operator-recovery: {len(unresolved)} unresolved" if unresolved else ""
