"""The ordinary path of one task, each step checked by the host.

workspace (``roadmap-<id>`` at the base, a git-harn workspace [P2]) → plan
(ExecPlan committed, APPROVED or IN PROGRESS) → implement (clean, new
commits, plan COMPLETE at the tip) → gates (evidence noted on the exact tip)
→ dual review (both approve the exact tip, up to ``reviewRounds`` rounds) →
integrate (builtin, or an agent believed only through the I3 check) → done
(tip kept under ``refs/harnery/integrated/<id>``, workspace released). Any
failed step ends the task there and leaves its workspace to cleanup, which
preserves whatever is unfinished [P1].
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_harn.clock import now_iso
from git_harn.errors import HarnError
from git_harn.git import Repo
from git_harn.git.workflow_refs import Oid
from git_harn.text import last_lines, last_lines_on_one_line, one_line
from git_harn.workflow import addenda, assessment, faults, host, retries, review, usage
from git_harn.workflow.config import Effective
from git_harn.workflow.result import BLOCKED, DONE, FAILED, HALTED, RUNNING, TaskResult
from git_harn.workflow.stages import INTERRUPTED, Agents, StageOutcome, TaskContext, run_stage

INTEGRATED_PREFIX = "refs/harnery/integrated/"

Progress = Callable[[str, str, int], None]  # (task id, stage, attempt)


class Stop(Exception):
    """The task ends here: status, stage and detail say how."""

    def __init__(self, status: str, stage: str, detail: str, fault: str | None = None,
                 kind: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.stage, self.detail, self.fault = status, stage, detail, fault
        self.kind = kind


@dataclass
class Job:
    eff: Effective
    workflow_id: str
    task: host.Task
    result: TaskResult
    base_oid: Oid
    scratch: Path
    agents: Agents
    progress: Progress
    # recovery of a surviving branch: the stage it re-enters at (plan,
    # implement, review; review-only: one review round, no gates, no
    # implementation) and the advisory residual risk its reviewers weigh
    resume_at: str | None = None
    advisory: list[str] = field(default_factory=list)


REVIEW_ONLY = "review-only"


def run_id_for(workflow_id: str, task_id: str) -> str:
    return f"{workflow_id}-{task_id}"


def run_task(main_repo: Repo, job: Job) -> TaskResult:
    """Drive one task to done, or to where it stopped; never raises for the task's own trouble."""
    repo = host.reopen(main_repo)
    tr = job.result
    tr.status, tr.startedAt, tr.baseOid = RUNNING, now_iso(), str(job.base_oid)
    assert tr.runId is not None
    started = False
    try:
        with host.hold_run(repo, tr.runId, f"workflow {job.workflow_id} task {tr.taskId}"):
            try:
                _stage(job, "workspace", 1)
                if job.resume_at is None:
                    record = host.start_workspace(repo, tr.runId, job.base_oid, tr.branch)
                else:
                    record = host.resume_workspace(repo, tr.runId, tr.branch,
                                                   f"workflow {job.workflow_id} resumes it at {job.resume_at}")
                started = True
                (_pipeline if job.resume_at is None else _resumed)(repo, job, Path(record.path))
            except Stop as stop:
                tr.status, tr.stage, tr.detail, tr.fault = stop.status, stop.stage, stop.detail, stop.fault
                tr.faultKind = stop.kind
            except HarnError as exc:
                tr.status, tr.detail = FAILED, one_line(exc.message, 500)
            finally:
                if started:
                    try:
                        assessment.before_cleanup(repo, job.eff, tr, job.agents.stop.is_set())
                    finally:
                        _cleanup(repo, tr)
    except HarnError as exc:  # the run lock itself
        tr.status, tr.detail = FAILED, one_line(exc.message, 500)
    live = repo.ref_oid(f"refs/heads/{tr.branch}")
    if live is not None:
        tr.tip = str(live)
    tr.finishedAt = now_iso()
    return tr


def _stage(job: Job, stage: str, attempt: int) -> None:
    if job.agents.stop.is_set():
        raise Stop(HALTED, stage, f"the workflow was interrupted before {stage}")
    job.result.stage = stage
    job.result.attempts[stage] = job.result.attempts.get(stage, 0) + (1 if stage != "review" else 0)
    job.progress(job.task.key, stage, attempt)


def _context(repo: Repo, job: Job, worktree: Path) -> TaskContext:
    task = job.task
    plan_path = f"{host.plans_dir(repo)}/{task.id}.md"

    def on_agent(pid: int) -> None:
        assert job.result.runId is not None
        host.note_agent(repo, job.result.runId, pid)

    return TaskContext(repo=repo, workflow_id=job.workflow_id, task_id=task.id, title=task.title,
                       requires=list(task.requires), branch=job.result.branch,
                       run_id=job.result.runId or "", worktree=worktree, remote=job.eff.remote,
                       base=job.eff.base, base_oid=str(job.base_oid), plan_path=plan_path,
                       scratch=job.scratch, agents=job.agents, on_agent=on_agent,
                       stage_attempts=job.eff.stageAttempts, schema_retries=job.eff.schemaRetries,
                       on_retry=_retry_counter(job), idle_timeout=job.eff.idleTimeout)


def _retry_counter(job: Job) -> Callable[[str, int | None], int | None]:
    """Count an in-place retry after an infra fault; a writing stage's retry
    is its next attempt (reviewers keep the round's number)."""
    lock = threading.Lock()

    def on_retry(stage: str, reviewer: int | None) -> int | None:
        tr = job.result
        with lock:
            tr.infraRetries += 1
            if reviewer is not None:
                return None
            tr.attempts[stage] = tr.attempts.get(stage, 0) + 1
        job.progress(tr.taskId, stage, tr.attempts[stage])
        return tr.attempts[stage]

    return on_retry


def _pipeline(repo: Repo, job: Job, worktree: Path) -> None:
    ctx = _context(repo, job, worktree)
    tr = job.result
    eff = job.eff
    earlier: dict[str, str] = {}
    is_addendum = addenda.number_of(job.task) is not None
    if not is_addendum:
        _plan(repo, job, ctx, earlier)
    findings: list[dict[str, Any]] = []
    tr.review = {"rounds": 0, "approved": False, "reviews": []}
    for round_no in range(1, eff.reviewRounds + 1):
        if is_addendum:
            tip = _addendum(repo, job, ctx, earlier, round_no, findings)
        else:
            tip = _implement(repo, job, ctx, earlier, round_no, findings)
        _gates(repo, job, tip)
        _stage(job, "review", round_no)
        verdict = review.dual_review(ctx, eff.agents["review"], round_no, eff.timeout_of("review"),
                                     {"round": round_no, "earlier": dict(earlier)})
        tr.review["rounds"] = round_no
        tr.review["reviews"].extend(verdict.entries())
        usage.record(tr, verdict.outcomes)
        tr.attempts["review"] = round_no
        _refused_at_last(repo, ctx, tip, verdict, round_no, eff.reviewRounds)
        _check_unchanged(repo, ctx, tip, "review")
        if verdict.fault is not None:
            raise _stopped(next(o for o in verdict.outcomes if o.fault is not None))
        if verdict.approved:
            tr.review["approved"] = True
            tr.review["tip"] = str(tip)
            earlier["review"] = verdict.summary()
            break
        findings = verdict.findings()
    _integrate(repo, job, ctx)


def _resumed(repo: Repo, job: Job, worktree: Path) -> None:
    """A surviving branch re-enters the ordinary path at ``job.resume_at``
    with its commits as they are; from there every host check holds."""
    if job.resume_at == "plan":
        _pipeline(repo, job, worktree)
        return
    ctx = _context(repo, job, worktree)
    ctx.advisory = list(job.advisory)
    tr = job.result
    path, _ = host.plan_at(repo, _tip(repo, ctx.branch, "workspace"), ctx.task_id)
    ctx.plan_path = path or ctx.plan_path
    earlier: dict[str, str] = {}
    findings: list[dict[str, Any]] = []
    tr.review = {"rounds": 0, "approved": False, "reviews": []}
    rounds = 1 if job.resume_at == REVIEW_ONLY else job.eff.reviewRounds
    for round_no in range(1, rounds + 1):
        if round_no == 1 and job.resume_at in ("review", REVIEW_ONLY):
            tip = check_worktree(repo, ctx, "review")
            if job.resume_at == "review":
                _gates(repo, job, tip)
        else:
            tip = _implement(repo, job, ctx, earlier, round_no, findings)
            _gates(repo, job, tip)
        findings = _review_round(repo, job, ctx, tip, round_no, rounds, earlier)
        if not findings:
            break
    _integrate(repo, job, ctx)


def _review_round(repo: Repo, job: Job, ctx: TaskContext, tip: Oid, round_no: int, rounds: int,
                  earlier: dict[str, str]) -> list[dict[str, Any]]:
    """One dual review of the exact tip: [] when both approve, else the findings."""
    tr = job.result
    assert tr.review is not None
    _stage(job, "review", round_no)
    verdict = review.dual_review(ctx, job.eff.agents["review"], round_no, job.eff.timeout_of("review"),
                                 {"round": round_no, "earlier": dict(earlier)})
    tr.review["rounds"] = round_no
    tr.review["reviews"].extend(verdict.entries())
    tr.attempts["review"] = round_no
    _refused_at_last(repo, ctx, tip, verdict, round_no, rounds)
    _check_unchanged(repo, ctx, tip, "review")
    if verdict.fault is not None:
        raise Stop(HALTED if verdict.fault == INTERRUPTED else FAILED, "review", verdict.detail, verdict.fault)
    if verdict.approved:
        tr.review["approved"] = True
        tr.review["tip"] = str(tip)
        earlier["review"] = verdict.summary()
        return []
    return verdict.findings()


def _refused_at_last(repo: Repo, ctx: TaskContext, tip: Oid, verdict: review.Verdict, round_no: int,
                     rounds: int) -> None:
    """A refusal in the last round ends the task whatever else the reviewers
    did, so the refusal is what the detail says first; what they left behind
    (kept for cleanup and artefact salvage) is named after it."""
    if verdict.fault is not None or verdict.approved or round_no < rounds:
        return
    left = []
    dirty = host.dirty(ctx.worktree)
    if dirty:
        left.append(f"the reviewers also left {len(dirty)} uncommitted path(s): {', '.join(dirty[:5])}")
    now = repo.ref_oid(f"refs/heads/{ctx.branch}")
    if now is not None and now != tip:
        left.append(f"and moved {ctx.branch} from {str(tip)[:12]} to {str(now)[:12]}")
    raise Stop(FAILED, "review", f"changes requested after {round_no} review round(s): {verdict.summary()}"
               + "".join(f"; {what}" for what in left))


def _record(tr: TaskResult, outcome: StageOutcome) -> None:
    tr.stages[outcome.stage] = outcome.summary_entry()
    usage.record(tr, [outcome])


def _stopped(outcome: StageOutcome) -> Stop:
    assert outcome.fault is not None
    detail = faults.halt_detail(outcome.stage, outcome.fault, outcome.detail, outcome.tries)
    return Stop(faults.status_for(outcome.fault), outcome.stage, detail, outcome.fault, outcome.faultKind)


def _tip(repo: Repo, branch: str, stage: str) -> Oid:
    tip = repo.ref_oid(f"refs/heads/{branch}")
    if tip is None:
        raise Stop(FAILED, stage, f"branch {branch} was deleted during {stage}")
    return tip


def check_worktree(repo: Repo, ctx: TaskContext, stage: str) -> Oid:
    """The agent's word is never evidence: the worktree is still on the task
    branch, clean, and the branch still grows from the base."""
    on = host.refs.worktree_branch(ctx.worktree)
    if on != f"refs/heads/{ctx.branch}":
        raise Stop(FAILED, stage, f"after {stage} the worktree is not on {ctx.branch} "
                   f"(HEAD: {on or 'detached'})")
    dirty = host.dirty(ctx.worktree)
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" … and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise Stop(FAILED, stage, f"after {stage} the worktree has {len(dirty)} uncommitted path(s): {shown}")
    tip = _tip(repo, ctx.branch, stage)
    if not host.refs.descends(repo, tip, host.refs.to_oid(ctx.base_oid)):
        raise Stop(FAILED, stage, f"after {stage} {ctx.branch} no longer contains its base {ctx.base_oid[:12]}")
    return tip


def _run_checked(repo: Repo, job: Job, ctx: TaskContext, stage: str, round_no: int,
                 extra: dict[str, Any]) -> tuple[StageOutcome, Oid, str | None, str | None]:
    """Run a writing stage and do the host's checks every such stage needs:
    a fault stops the task, the worktree must be clean on its branch, a
    BLOCKED plan stops it. Returns (outcome, tip, plan path, plan status)."""
    _stage(job, stage, round_no)
    outcome = retries.run_in_place(ctx, job.eff.agents[stage], job.result.attempts[stage],
                                   job.eff.timeout_of(stage), extra)
    _record(job.result, outcome)
    if outcome.fault is not None:
        raise _stopped(outcome)
    tip = check_worktree(repo, ctx, stage)
    path, status = host.plan_at(repo, tip, ctx.task_id)
    if status == "BLOCKED":
        raise Stop(BLOCKED, stage, f"the ExecPlan {path} says Status: BLOCKED: {outcome.summary}")
    return outcome, tip, path, status


def _plan(repo: Repo, job: Job, ctx: TaskContext, earlier: dict[str, str]) -> None:
    outcome, _, path, status = _run_checked(repo, job, ctx, "plan", 1, {"round": 1, "earlier": dict(earlier)})
    if not outcome.ok:
        raise Stop(FAILED, "plan", outcome.detail)
    if path is None:
        raise Stop(FAILED, "plan", f"the plan agent reported ok but no ExecPlan {ctx.plan_path} is committed "
                   f"on {ctx.branch}")
    if status not in ("APPROVED", "IN PROGRESS"):
        raise Stop(FAILED, "plan", f"the committed ExecPlan {path} has Status: {status or '(none)'}; "
                   "the plan stage needs APPROVED or IN PROGRESS")
    ctx.plan_path = path
    earlier["plan"] = outcome.summary


def _implement(repo: Repo, job: Job, ctx: TaskContext, earlier: dict[str, str], round_no: int,
               findings: list[dict[str, Any]]) -> Oid:
    before = _tip(repo, ctx.branch, "implement")
    outcome, tip, path, status = _run_checked(repo, job, ctx, "implement", round_no, {
        "round": round_no, "earlier": dict(earlier), "findings": findings})
    if not outcome.ok:
        raise Stop(FAILED, "implement", outcome.detail)
    if tip == before or not host.refs.descends(repo, tip, before):
        raise Stop(FAILED, "implement", f"the implement agent reported ok but committed nothing on "
                   f"{ctx.branch} (tip still {str(before)[:12]})" if tip == before else
                   f"the implement agent rewrote {ctx.branch}: {str(before)[:12]} is no longer in it")
    if status != "COMPLETE":
        raise Stop(FAILED, "implement", f"the ExecPlan {path or ctx.plan_path} at the tip has Status: "
                   f"{status or '(none)'}, not COMPLETE")
    earlier["implement"] = outcome.summary
    return tip


def _addendum(repo: Repo, job: Job, ctx: TaskContext, earlier: dict[str, str], round_no: int,
              findings: list[dict[str, Any]]) -> Oid:
    """The addendum agent in place of plan and implement (workflow/addenda.py)."""
    if addenda.STAGE not in job.eff.agents:
        raise Stop(FAILED, addenda.STAGE, addenda.NO_AGENT_DETAIL)
    before = _tip(repo, ctx.branch, addenda.STAGE)
    outcome, tip, _, _ = _run_checked(repo, job, ctx, addenda.STAGE, round_no, {
        "round": round_no, "earlier": dict(earlier), "findings": findings})
    grew = tip != before and host.refs.descends(repo, tip, before)
    stop = addenda.verdict(job.task, ctx.branch, outcome, before, tip, grew)
    if stop is not None:
        raise Stop(stop[0], addenda.STAGE, stop[1])
    earlier[addenda.STAGE] = outcome.summary
    return tip


def _gates(repo: Repo, job: Job, tip: Oid) -> None:
    tr = job.result
    _stage(job, "gates", tr.attempts.get("implement", 1))
    base = host.Base(job.eff.upstream, job.eff.base_oid)
    groups: list[int] = []

    def on_start(pgid: int) -> None:
        groups.append(pgid)
        job.agents.started(pgid)

    try:
        result = host.run_gates(repo, tr.branch, tip, base, host.gate_timeout(repo), on_start)
    finally:
        for pgid in groups:
            job.agents.ended(pgid)
    if job.agents.stop.is_set():
        raise Stop(HALTED, "gates", "the workflow was interrupted while the gates ran")
    failed = [c for c in result["commands"] if c["exitCode"] != 0]
    tr.gates = {"passed": result["passed"], "commit": result["commit"],
                "commands": [_gate_entry(c) for c in result["commands"]]}
    if not result["passed"]:
        first = failed[0]
        why = first.get("error") or host.exit_words(first["exitCode"])
        raise Stop(FAILED, "gates", f"gate {shlex.join(first['argv'])} {why} on {str(tip)[:12]}: "
                   f"{last_lines_on_one_line(first.get('outputTail') or '', 300)}")


def _gate_entry(command: dict[str, Any]) -> dict[str, Any]:
    """A gate in the task's result; a failed one with the last lines of its
    output (the note on the tip keeps the whole tail)."""
    entry = {"argv": command["argv"], "exitCode": command["exitCode"], "seconds": command["seconds"]}
    if command["exitCode"] != 0:
        entry["outputTail"] = "\n".join(last_lines(command.get("outputTail") or ""))
    return entry


def _check_unchanged(repo: Repo, ctx: TaskContext, tip: Oid, stage: str) -> None:
    now = check_worktree(repo, ctx, stage)
    if now != tip:
        raise Stop(FAILED, stage, f"the {stage} changed {ctx.branch} ({str(tip)[:12]} → {str(now)[:12]}); "
                   "reviewers judge the exact tip and may not commit")


def _integrate(repo: Repo, job: Job, ctx: TaskContext) -> None:
    tr = job.result
    eff = job.eff
    _stage(job, "integrate", 1)
    agent = eff.agents["integrate"]
    if agent.builtin:
        host.refs.detach(ctx.worktree)  # integrate may need to move the branch
        try:
            report = host.integrate_builtin(repo, ctx.branch, eff.base, eff.remote, ctx.task_id)
        finally:
            if repo.ref_oid(f"refs/heads/{ctx.branch}") is not None:
                host.refs.attach(ctx.worktree, ctx.branch)
        tr.integration = report
        tr.stages["integrate"] = {"attempt": 1, "ok": bool(report.get("ok")),
                                  "summary": one_line(str(report.get("summary") or ""), 500), "fault": None}
        check = host.check_integration(report)
        if not check.ok:
            raise Stop(HALTED, "integrate", check.detail)
    else:
        with host.INTEGRATIONS, host.hold_merge(
                repo, f"workflow {job.workflow_id}: integration agent for task {ctx.task_id}"):
            outcome = run_stage(ctx, agent, 1, eff.timeout_of("integrate"), {"round": 1})
            _record(tr, outcome)
            tr.integration = outcome.report
            if outcome.fault is not None:
                # never retried: a hidden success may already have pushed [I4]
                status = HALTED if outcome.fault in (faults.INFRA, INTERRUPTED) else faults.status_for(outcome.fault)
                raise Stop(status, "integrate", faults.integration_detail(outcome.detail, eff.upstream),
                           outcome.fault, outcome.faultKind)
            check = host.check_integration(outcome.report)
            if not check.ok:
                raise Stop(HALTED, "integrate", check.detail)
            landed = host.refs.fetch_branch(repo, eff.remote, eff.base)
            if addenda.number_of(job.task) is not None:
                problem = addenda.landed_problem(repo, job.task, landed, job.base_oid, eff.upstream)
                if problem is not None:
                    raise Stop(HALTED, "integrate", problem)
            elif not host.ticked_at(repo, landed, ctx.task_id):
                raise Stop(HALTED, "integrate", f"the integration report passed the check but {eff.upstream} "
                           f"({str(landed)[:12]}) does not have task {ctx.task_id} ticked")
    tip = _tip(repo, ctx.branch, "integrate")
    tr.tip = str(tip)
    key = job.task.key  # <id>, or <id>-addendum-<n>
    tr.integratedRef = host.refs.keep_ref(repo, INTEGRATED_PREFIX + key, tip,
                                          f"git-harn: workflow {job.workflow_id}: task {key} landed")
    tr.status, tr.stage, tr.detail = DONE, "done", one_line(str((tr.integration or {}).get("summary") or ""), 500)


def _cleanup(repo: Repo, tr: TaskResult) -> None:
    """Leave the workspace to cleanup: released when done, preserved when not [P2]."""
    assert tr.runId is not None
    try:
        done = host.cleanup_workspace(repo, tr.runId)
    except HarnError as exc:
        tr.workspace = {"state": "unknown", "reason": one_line(exc.message, 300)}
        return
    tr.workspace = {"state": done.state, "outcome": done.outcome, "reason": one_line(done.reason, 300),
                    "path": done.path}
