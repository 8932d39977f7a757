"""Judging a surviving task branch: the built-in rules and external assessors [A1]-[A3].

The built-in assessor is conservative. In order:

1. evidence collection failed -> ``continue-manual`` (evidence-collection-error) [A2];
2. nothing committed ahead of the base (or all of it already in the base)
   and nothing dirty -> ``discard``;
3. no blocking gap -> ``adopt-complete``: clean worktree, committed,
   task-scoped, ExecPlan COMPLETE at the tip, passing gates on the tip, not
   an addendum branch;
4. a gap that needs a person (only uncommitted work, work outside the task,
   dirty files besides the ExecPlan, BLOCKED plan, failing gates, addendum
   branch, neither evidence nor a plan in progress) -> ``continue-manual``;
5. otherwise -> ``adopt-partial``: committed, task-scoped work with passing
   gates or a plan IN PROGRESS or COMPLETE; the task stays unchecked.

Blocking gaps go to ``missingEvidence``; advisory ones to ``residualRisk``.
"""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from git_harn.assess.evidence import Evidence
from git_harn.errors import BadInput
from git_harn.files import loads_json
from git_harn.git import Repo, to_oid
from git_harn.git.env import child_env
from git_harn.proc import Finished, exit_words, run_bounded, split_command, tail
from git_harn.results import CheckResult, Result
from git_harn.schemas import schema_errors
from git_harn.store.seal import active
from git_harn.tasks.config import Stage, configured_env_names
from git_harn.text import jsonable, one_line
from git_harn.workspace import sandbox as sandboxing

ADOPT_COMPLETE = "adopt-complete"
ADOPT_PARTIAL = "adopt-partial"
CONTINUE_MANUAL = "continue-manual"
DISCARD = "discard"
CLASSIFICATIONS = (ADOPT_COMPLETE, ADOPT_PARTIAL, CONTINUE_MANUAL, DISCARD)

COLLECTION_ERROR = "evidence-collection-error"
INVALID_OUTPUT = "assessor-invalid-output"
ASSESSOR_FAULT = "assessor-fault"
DEFAULT_RETRIES = 2
MAX_RETRIES = 10  # each retry runs the assessor again, with its full timeout
DEFAULT_TIMEOUT = 600
BUILTIN = "builtin"

# Gaps that need a person rather than more evidence.
REVIEW_REFUSED = "review-refused"
# a gates note this machine cannot verify: the gates run again wherever the note would have counted
UNVERIFIED_VALIDATION = "unverified-validation-evidence"
_MANUAL = ("no-committed-work", "not-task-scoped", "dirty-worktree", "plan-blocked",
           "validation-failed", "addendum-branch", REVIEW_REFUSED)


@dataclass
class Verdict:
    classification: str
    reasons: list[str]
    missingEvidence: list[str] = field(default_factory=list)
    residualRisk: list[str] = field(default_factory=list)


def builtin(evidence: Evidence) -> Verdict:
    """The built-in rules, in the order the module documents."""
    if evidence.collectionError is not None:
        return Verdict(CONTINUE_MANUAL, [COLLECTION_ERROR],
                       [f"{COLLECTION_ERROR}: {evidence.collectionError}"])
    dirty = evidence.worktree.dirtyCount or 0 if evidence.worktree else 0
    committed = bool(evidence.ahead) and not evidence.alreadyInBase
    if not committed and dirty == 0:
        why = "changes-already-in-base" if evidence.ahead else "no-committed-work"
        return Verdict(DISCARD, [why], residualRisk=residual_risk(evidence))
    gaps = blocking_gaps(evidence)
    risk = residual_risk(evidence)
    if not gaps:
        return Verdict(ADOPT_COMPLETE, ["committed-task-scoped-work", "plan-complete", "validation-passed"],
                       residualRisk=risk)
    codes = [gap.split(":", 1)[0] for gap in gaps]
    manual = [code for code in codes if code in _MANUAL]
    progress = _progress(evidence)
    if manual or not progress:
        return Verdict(CONTINUE_MANUAL, manual or ["no-plan-or-evidence"], gaps, risk)
    return Verdict(ADOPT_PARTIAL, ["committed-task-scoped-work", *progress], gaps, risk)


def _review_gaps(evidence: Evidence) -> list[str]:
    """The workflow's reviewers refused the work at the tip: nothing is complete
    that its reviewers refused, until new commits answer them."""
    review = evidence.review
    if review is None or review.get("approved"):
        return []
    refused = [v for v in review["verdicts"] if isinstance(v, dict) and not v.get("approved")]
    who = ", ".join(f"reviewer {v.get('reviewer')}" for v in refused) or "a reviewer"
    first = next((b for b in review["blocking"] if isinstance(b, dict)), None)
    said = f": {one_line(str(first.get('text') or ''), 200)}" if first is not None else ""
    return [f"{REVIEW_REFUSED}: {who} refused {evidence.tip[:12]} in round {review.get('round')} of workflow "
            f"{review.get('workflowId')}{said}"]


def blocking_gaps(evidence: Evidence) -> list[str]:
    """What stands between this branch and ``adopt-complete``, as 'code: detail'."""
    gaps = []
    worktree = evidence.worktree
    if worktree and (worktree.dirtyCount or 0) > 0:
        gaps.append(_dirty_gap(evidence))
    if not evidence.ahead:
        gaps.append("no-committed-work: no commits ahead of the base")
    elif evidence.alreadyInBase:
        gaps.append("no-committed-work: every change is already in the base")
    if evidence.taskScoped is not True:
        detail = "; ".join(evidence.scopeViolations) or "no task id (name the branch roadmap-<id> or pass --task)"
        gaps.append(f"not-task-scoped: {detail}")
    gaps += _plan_gaps(evidence)
    gaps += _validation_gaps(evidence)
    gaps += _review_gaps(evidence)
    if evidence.addendum:
        gaps.append("addendum-branch: an addendum is merged by an operator, never adopted automatically")
    return gaps


def _dirty_gap(evidence: Evidence) -> str:
    assert evidence.worktree is not None
    plan = evidence.execPlan.path if evidence.execPlan else None
    others = [d.path for d in evidence.worktree.dirtyPaths if d.path != plan]
    if not others and (evidence.worktree.dirtyCount or 0) <= len(evidence.worktree.dirtyPaths):
        return "plan-dirty: the ExecPlan has uncommitted changes (artefact salvage commits them)"
    return f"dirty-worktree: {evidence.worktree.dirtyCount} uncommitted path(s), e.g. {', '.join(others[:3])}"


def _plan_gaps(evidence: Evidence) -> list[str]:
    plan = evidence.execPlan
    if plan is None or plan.path is None:
        return ["missing-execplan: no ExecPlan for the task"]
    if not plan.committed:
        return [f"plan-uncommitted: {plan.path} is not committed"]
    if plan.status == "BLOCKED":
        return [f"plan-blocked: {plan.path} says BLOCKED"]
    if plan.status != "COMPLETE":
        return [f"plan-not-complete: {plan.path} status is {plan.status or 'unreadable'}"]
    return []


def _validation_gaps(evidence: Evidence) -> list[str]:
    gates = evidence.validation
    if gates is None and evidence.validationUnverified:
        return [f"{UNVERIFIED_VALIDATION}: {evidence.validationProblem}; it counts as no evidence until "
                "the gates run again on the tip"]
    if gates is None:
        return [f"missing-validation-evidence: no gates recorded on the tip {evidence.tip[:12]}"]
    if not gates.get("passed"):
        return [f"validation-failed: gates failed on the tip {evidence.tip[:12]}"]
    return []


def _progress(evidence: Evidence) -> list[str]:
    """Signs of a coherent slice: passing gates on the tip, a plan under way."""
    signs = []
    if evidence.validation is not None and evidence.validation.get("passed"):
        signs.append("validation-passed")
    plan = evidence.execPlan
    statuses = {plan.status, plan.worktreeStatus} if plan else set()
    if statuses & {"IN PROGRESS", "COMPLETE"}:
        signs.append("plan-in-progress" if "COMPLETE" not in statuses else "plan-complete")
    return signs


def residual_risk(evidence: Evidence) -> list[str]:
    """Advisory findings: worth a reviewer's eye, never blocking."""
    risk = []
    if evidence.behind:
        risk.append(f"base-advanced: the base has {evidence.behind} commit(s) the branch lacks")
    if evidence.mergeBase is None:
        risk.append("no-merge-base: the branch shares no history with the base")
    total = evidence.changedPathsTotal or 0
    if total > len(evidence.changedPaths):
        risk.append(f"changed-paths-truncated: {total} paths changed, {len(evidence.changedPaths)} listed")
    if evidence.worktree is not None and not evidence.worktree.present:
        risk.append(f"worktree-missing: {evidence.worktree.path} is registered but gone")
    plan = evidence.execPlan
    if plan and plan.worktreeStatus and plan.status and plan.worktreeStatus != plan.status:
        risk.append(f"plan-status-differs: committed {plan.status}, worktree {plan.worktreeStatus}")
    if evidence.validationProblem and not evidence.validationUnverified:
        risk.append(f"validation-note-invalid: {evidence.validationProblem}; it counts as no evidence")
    if evidence.reviewProblem:
        risk.append(f"review-note-unverified: {evidence.reviewProblem}; reported, not believed")
    gates = evidence.validation
    if gates and gates["base"]["oid"] != evidence.base["oid"]:
        risk.append("validation-base-differs: gates ran with the commands of another base revision")
    return risk


# --- the assessment document ----------------------------------------------------


def document(evidence: Evidence, verdict: Verdict, assessor: dict[str, Any]) -> dict[str, Any]:
    return {
        "schemaVersion": 1, "branch": evidence.branch, "taskId": evidence.taskId,
        "classification": verdict.classification, "reasons": verdict.reasons,
        "missingEvidence": verdict.missingEvidence, "residualRisk": verdict.residualRisk,
        "evidence": jsonable(evidence), "assessor": assessor,
    }


def assessment_problems(doc: Any) -> list[str]:
    """Why an assessment is not to be believed: its schema, then its rules."""
    problems = schema_errors(doc, "assessment")
    if problems:
        return problems
    evidence = doc["evidence"]
    if doc["branch"] != evidence["branch"]:
        problems.append(f"branch {doc['branch']!r} differs from the evidence's {evidence['branch']!r}")
    if doc["classification"] == ADOPT_COMPLETE and doc["missingEvidence"]:
        problems.append("adopt-complete with missingEvidence: a blocking gap rules adoption out")
    if evidence.get("collectionError") and (
            doc["classification"] != CONTINUE_MANUAL or not has_reason(doc, COLLECTION_ERROR)):
        problems.append(f"evidence collection failed, so the verdict must be {CONTINUE_MANUAL} "
                        f"with reason {COLLECTION_ERROR}")
    return problems


def check_assessment(document: Any) -> CheckResult:
    """``git harn report check assessment``: schema, then the assessment rules."""
    problems = assessment_problems(document)
    return CheckResult(not problems, Stage.ASSESS if problems else None, "; ".join(problems) or "assessment ok")


def has_reason(doc: dict[str, Any], code: str) -> bool:
    return any(r == code or r.startswith(code + ":") for r in doc.get("reasons", []) if isinstance(r, str))


# --- external assessors [A3] --------------------------------------------------


@dataclass
class ExternalAssessor:
    argv: list[str]
    retries: int
    timeout: float
    cwd: Path
    secrets: tuple[str, ...] = ()  # secret-looking variables it may have (git/env.py)
    sandbox: sandboxing.Policy | None = None  # it reads evidence on stdin: it writes nothing but its /tmp


def external_assessor(repo: Repo, spec: str | None) -> ExternalAssessor | None:
    """The external assessor ``spec`` names (else git config harn.assessor); None: built-in."""
    chosen = (spec or repo.config("harn.assessor") or BUILTIN).strip()
    if chosen == BUILTIN:
        return None
    argv = split_command(chosen, "the assessor command")
    retries = repo.config_int("harn.assessorRetries", DEFAULT_RETRIES)
    timeout = repo.config_int("harn.assessorTimeout", DEFAULT_TIMEOUT)
    if not 0 <= retries <= MAX_RETRIES or timeout <= 0:
        raise BadInput(f"harn.assessorRetries must be 0 to {MAX_RETRIES} and harn.assessorTimeout > 0")
    return ExternalAssessor(argv, retries, float(timeout), repo.workdir or repo.common_dir,
                            configured_env_names(repo, "harn.assessorEnv"))


def _run_checked(assessor: ExternalAssessor, payload: bytes) -> Finished:
    """The assessor runs in the repository: in a workflow run, the run's
    seal checks what it leaves, as around a stage [T2]."""
    seal = active()
    env = child_env(secrets=assessor.secrets)
    policy = assessor.sandbox
    room = sandboxing.Room(cwd=assessor.cwd, writable=[Path(os.path.expanduser(p)) for p in policy.writable],
                           shown=[assessor.cwd]) if policy is not None and policy.active else None
    argv = sandboxing.confine(policy, room, assessor.argv, env, assessor.cwd)
    with seal.around(Stage.ASSESS) if seal is not None else nullcontext():
        done = run_bounded(argv, assessor.cwd, timeout=assessor.timeout, stdin=payload, env=env)
    if sandboxing.bwrapped(policy, argv, assessor.argv):
        done.exit_code = sandboxing.as_unconfined(done.exit_code)
    return done


def run_external(assessor: ExternalAssessor, evidence: Evidence) -> dict[str, Any]:
    """Ask the external assessor; retry invalid output, then give up safely."""
    payload = json.dumps(jsonable(evidence), ensure_ascii=False).encode("utf-8", "surrogateescape")
    info: dict[str, Any] = {"kind": "external", "command": assessor.argv, "attempts": 0, "errors": []}
    for attempt in range(1, assessor.retries + 2):
        info["attempts"] = attempt
        done = _run_checked(assessor, payload)
        fault = done.start_error or (f"timed out after {assessor.timeout:g}s" if done.timed_out else None)
        if fault is not None:
            info["fault"] = fault
            return document(evidence, Verdict(CONTINUE_MANUAL, [ASSESSOR_FAULT],
                                              [f"{ASSESSOR_FAULT}: {fault}"]), info)
        doc, problems = _accept(done, evidence, info)
        if not problems:
            return _guarded(doc, evidence)
        info["errors"].append(f"attempt {attempt}: {'; '.join(problems[:3])}")
    verdict = Verdict(CONTINUE_MANUAL, [INVALID_OUTPUT],
                      [f"{INVALID_OUTPUT}: no valid assessment after {info['attempts']} attempt(s)"])
    return document(evidence, verdict, info)


def _accept(done: Finished, evidence: Evidence, info: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The assessor's output made whole: the host's own evidence and assessor
    members replace whatever it sent (its word is not evidence)."""
    if done.exit_code != 0:
        return {}, [f"{exit_words(done.exit_code)}: {tail(done.stderr, 200).strip()}"]
    if done.truncated:
        return {}, ["output too large"]
    try:
        doc = loads_json(done.stdout)
    except ValueError as exc:  # NotJson: invalid, too deep, a key twice, NaN
        return {}, [f"not JSON ({exc})"]
    if not isinstance(doc, dict):
        return {}, ["not a JSON object"]
    doc.setdefault("schemaVersion", 1)
    doc.setdefault("branch", evidence.branch)
    doc.setdefault("taskId", evidence.taskId)
    doc["evidence"] = jsonable(evidence)
    doc["assessor"] = dict(info, errors=list(info["errors"]))
    return doc, assessment_problems(doc)


def _guarded(doc: dict[str, Any], evidence: Evidence) -> dict[str, Any]:
    """An external ``adopt-complete`` that the host evidence contradicts is
    downgraded to ``continue-manual``, naming the gaps."""
    if doc["classification"] != ADOPT_COMPLETE:
        return doc
    gaps = blocking_gaps(evidence)
    if gaps:
        doc["classification"] = CONTINUE_MANUAL
        doc["reasons"] = ["downgraded-adopt-complete", *[g.split(":", 1)[0] for g in gaps], *doc["reasons"]]
        doc["missingEvidence"] = gaps
    return doc


@dataclass
class AssessResult(Result):
    """``git harn assess``: the assessment document, as validated."""

    SCHEMA: ClassVar[str] = "assessment"

    assessment: dict[str, Any]
    outcome: str = "ok"

    def document(self) -> dict[str, Any]:
        return self.assessment


def assess(evidence: Evidence, assessor: ExternalAssessor | None) -> dict[str, Any]:
    """The assessment of ``evidence``. A failed collection never reaches an
    external assessor: its verdict is fixed [A2]."""
    if assessor is None or evidence.collectionError is not None:
        info: dict[str, Any] = {"kind": BUILTIN, "command": None, "attempts": 1, "errors": []}
        return document(evidence, builtin(evidence), info)
    return run_external(assessor, evidence)


def assess_branch(repo: Repo, branch: str, base: str | None, task_id: str | None,
                  assessor_spec: str | None, record: bool) -> AssessResult:
    """``git harn assess``: collect, judge, and (``record``) note the verdict on the tip [A1]."""
    from git_harn.assess.evidence import collect
    from git_harn.store import notes

    external = external_assessor(repo, assessor_spec)
    if external is not None:  # in the sandbox your git config asks for (default: bubblewrap where it runs)
        external.sandbox = sandboxing.policy_of(repo, sandboxing.Asked())
    evidence = collect(repo, branch, base, task_id)
    assessment = assess(evidence, external)
    if record:
        notes.merge_note(repo, to_oid(evidence.tip), "assessment", assessment)
    return AssessResult(assessment)
