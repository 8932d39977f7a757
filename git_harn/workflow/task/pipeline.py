"""One task's story: workspace → the steps of its path → one end → cleanup.

The path is one list of steps (``steps_for``): plan (ExecPlan committed,
APPROVED or IN PROGRESS) → write (the implement agent: clean, new commits,
plan COMPLETE at the tip; or the addendum agent in its place) → gates
(evidence noted on the exact tip) → review (both reviewers approve the exact
tip; changes requested go back to write for the next round, up to
``reviewRounds``) → integrate (builtin, or an agent believed only through the
I3 check and a base that moved by exactly the judged work; the tip kept
under ``refs/harnery/integrated/<id>``).

One stage runner (``walk``) runs the list from an entry step: a new task
from plan, an addendum from write, a surviving branch from where recovery
says (implement → write; review → gates; review-only → gates, then one
review round).
A step says what happened, ``AGAIN`` or an ``Outcome`` in ``StageEnd``,
never a status: ``workflow/model/state.py`` decides the end and its next step.
Every end leaves the workspace to cleanup, which preserves whatever is
unfinished [P1] [P2].
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_harn.assess.evidence import REVIEW_NOTE
from git_harn.assess.gates import GateCheckouts, gate_timeout, run_gates
from git_harn.clock import Wait, keeping_waits, now_iso, precise_iso
from git_harn.errors import HarnError
from git_harn.failpoints import failpoint
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.branches import attach, detach, fetch_branch, keep_ref, worktree_branch
from git_harn.git.workdir import dirty_names
from git_harn.integrate.crash import marker_for
from git_harn.integrate.judged import Landing, NotJudged, not_judged
from git_harn.integrate.land import keep_landed, merge_lock
from git_harn.integrate.report import PROPOSED, check_integration
from git_harn.integrate.target import Moved
from git_harn.proc import end_adopted, exit_words
from git_harn.store.bookkeeping import INTEGRATED_ROOT, TAMPER_ROOT
from git_harn.store.locks import hold_run
from git_harn.store.notes import merge_signed, read_note
from git_harn.store.record import PRESERVED_DIRTY, PRESERVED_UNMERGED
from git_harn.store.seal import Seal, Tamper, TamperFound
from git_harn.tasks.branches import Base, Branch
from git_harn.tasks.config import AgentSettings, Stage
from git_harn.tasks.execplan import plan_at, plans_dir
from git_harn.tasks.roadmap import Task, roadmap_file, ticked_at
from git_harn.text import jsonable, last_lines, last_lines_on_one_line, one_line
from git_harn.workflow.agents import retries, review, usage
from git_harn.workflow.agents.review import Verdict
from git_harn.workflow.agents.stages import Agents, StageOutcome, TaskContext, run_stage
from git_harn.workflow.model import faults, state
from git_harn.workflow.model.config import Effective
from git_harn.workflow.model.result import TaskResult
from git_harn.workflow.model.state import STAGE_STATE, Ending, Lifecycle, Outcome, State
from git_harn.workflow.task import addenda, assessment
from git_harn.workflow.task.integration import integrate_builtin, integration_turn
from git_harn.workflow.task.workspaces import note_agent, resume_workspace, start_workspace
from git_harn.workspace.cleanup import cleanup_locked

Progress = Callable[[str, str, str], None]  # (task key, stage, "attempt 2" / "round 2")

REVIEW_ONLY = "review-only"
AGAIN = "again"  # a review round asked for changes and another round is left
# where a resumed branch re-enters the one list of steps (by role), and how many review rounds it gets
# (review-only enters at the gates: the exact tip is checked again before its review,
# whatever a note on it says, for a note is evidence only of what ran where it was made)
ENTRY = {None: "plan", Stage.PLAN: "plan", Stage.IMPLEMENT: "write", Stage.REVIEW: "gates", REVIEW_ONLY: "gates"}


class StageEnd(Exception):
    """A step came to an outcome that ends the task: what happened, not a status."""

    def __init__(self, outcome: Outcome, stage: str, detail: str, fault: str | None = None,
                 kind: str | None = None) -> None:
        super().__init__(detail)
        self.outcome, self.stage, self.detail, self.fault, self.kind = outcome, stage, detail, fault, kind


# --- the attempt counters -------------------------------------------------------------


class Attempts:
    """The one owner of a task's ``attempts``, ``infraRetries`` and
    ``timeline``, and of how progress words them: a writing stage counts
    attempts (an infra retry is the next one); review counts rounds, and a
    reviewer's retry stays in its round. Every attempt and round is a span
    of the timeline, from its start to its outcome; every wait the task's
    thread says (``clock.waiting``) is one too."""

    def __init__(self, job: Job) -> None:
        self.job = job  # the job owns its counters
        self._lock = threading.Lock()
        self._open: dict[str, Any] | None = None  # the span of the stage running now

    def begin(self, stage: str, round_no: int) -> int:
        """A stage starts (again): its attempt number, or the review round."""
        tr = self.job.result
        with self._lock:
            tr.attempts[stage] = round_no if stage == Stage.REVIEW else tr.attempts.get(stage, 0) + 1
            number = tr.attempts[stage]  # the gates count their own runs, not implement's
            self._open = {"kind": "stage", "stage": stage, "attempt": number, "startedAt": precise_iso(),
                          "finishedAt": None, "outcome": None, "fault": None, "faultKind": None}
            tr.timeline.append(self._open)
        self.job.progress(self.job.task.key, stage, f"round {number}" if stage == Stage.REVIEW else f"attempt {number}")
        return number

    def end(self, outcome: Outcome, fault: str | None = None, kind: str | None = None,
            retried: bool = False) -> None:
        """The running stage came to ``outcome`` (``retried``: an infra fault, run again in place)."""
        with self._lock:
            span, self._open = self._open, None
            if span is not None:
                span.update(finishedAt=precise_iso(), outcome="retried" if retried else outcome.value,
                            fault=fault, faultKind=kind)

    def retry(self, stage: str, reviewer: int | None, kind: str | None = None) -> int | None:
        """An in-place retry after an infra fault; None for a reviewer (same round)."""
        tr = self.job.result
        with self._lock:
            tr.infraRetries += 1
        if reviewer is not None:
            return None
        self.end(Outcome.INFRA, state.INFRA, kind, retried=True)
        return self.begin(stage, 0)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """A span of the task's own work that is no stage attempt (assessment
        and cleanup at its end): timed, never counted."""
        span = {"kind": "stage", "stage": stage, "attempt": 1, "startedAt": precise_iso(), "finishedAt": None,
                "outcome": None, "fault": None, "faultKind": None}
        with self._lock:
            self.job.result.timeline.append(span)
        outcome = Outcome.ERROR
        try:
            yield
            outcome = Outcome.OK
        finally:
            with self._lock:
                span.update(finishedAt=precise_iso(), outcome=outcome.value)

    def waited(self, wait: Wait) -> None:
        """A wait of this task (a lock, a provider's reset time), as its timeline keeps it."""
        with self._lock:
            self.job.result.timeline.append(wait_span(wait))


def wait_span(wait: Wait) -> dict[str, Any]:
    return {"kind": "wait", "reason": wait.reason, "detail": one_line(wait.detail, 300),
            "startedAt": wait.startedAt, "finishedAt": wait.finishedAt}


@dataclass
class Job:
    eff: Effective
    workflow_id: str
    task: Task
    result: TaskResult
    base_oid: Oid
    scratch: Path
    agents: Agents
    progress: Progress
    # recovery of a surviving branch: the stage it re-enters at (plan,
    # implement, review; review-only: the gates, then one review round, no
    # implementation) and the advisory residual risk its reviewers weigh
    resume_at: str | None = None
    advisory: list[str] = field(default_factory=list)
    # a branch resumed at implement: what its tip's verified evidence asks of it
    # (``gateFailure``, ``findings``; workflow/dispatch.to_answer)
    asked: dict[str, Any] = field(default_factory=dict)
    where: state.Where | None = None  # the run's remote, base and flags, for the next step
    gate_checkouts: GateCheckouts | None = None  # the run's, kept from one task's gates to the next
    # told the moment the task has landed, before its cleanup: the runner fetches the base meanwhile
    on_landed: Callable[[], None] | None = None
    seal: Seal | None = None  # the run's: every stage is checked against it [T2]
    attempts: Attempts = field(init=False)

    def __post_init__(self) -> None:
        self.attempts = Attempts(self)


def run_id_for(workflow_id: str, task_id: str) -> str:
    return f"{workflow_id}-{task_id}"


# --- the story --------------------------------------------------------------------


def run_task(main_repo: Repo, job: Job) -> TaskResult:
    """Drive one task to its end; never raises for the task's own trouble."""
    repo = main_repo.reopen()
    tr = job.result
    tr.startedAt, tr.baseOid = now_iso(), str(job.base_oid)
    life = Lifecycle(State.CLAIMED if State.of(tr) is State.CLAIMED else State.SELECTED)
    assert tr.runId is not None
    ending: Ending | None = None
    try:
        with keeping_waits(job.attempts.waited), _working_for(job, raising=False), \
                hold_run(repo, tr.runId, f"workflow {job.workflow_id} task {tr.taskId}"):
            ending = _in_workspace(repo, job, life)
    except HarnError as exc:  # the run lock itself
        lost = one_line(exc.message, 500)
        if ending is None:
            ending = life.stop(Outcome.LOST_CLAIM, tr.stage, lost)
        else:
            ending.detail += f" (then: {lost})"
    ending = _blamed_late(job, _for_budget(job, ending))
    state.end(tr, ending, _facts(repo, job, ending), job.where)
    live = repo.ref_oid(f"refs/heads/{tr.branch}")
    if live is not None:
        tr.tip = str(live)
    tr.finishedAt = now_iso()
    return tr


def _in_workspace(repo: Repo, job: Job, life: Lifecycle) -> Ending:
    """Make (or resume) the workspace, walk the path, judge and clean up."""
    tr = job.result
    _track(job, life, State.STARTING, Stage.WORKSPACE)
    if job.agents.stop.is_set():
        job.attempts.end(Outcome.INTERRUPTED)
        return life.interrupted(Stage.WORKSPACE, "the workflow was interrupted before workspace")
    try:
        record = _workspace(repo, job)
    except HarnError as exc:
        job.attempts.end(Outcome.ERROR)
        return life.stop(Outcome.ERROR, Stage.WORKSPACE, one_line(exc.message, 500))
    job.attempts.end(Outcome.OK)
    ending: Ending | None = None
    try:
        with _working_for(job, raising=True):
            ending = _walk_path(repo, job, Path(record.path), life)
    except TamperFound as found:  # a git the host was to run found the change (the guard) [T2]
        job.attempts.end(Outcome.TAMPER, state.TAMPER, found.tamper.kind)
        ending = life.stop(Outcome.TAMPER, tr.stage, _tamper_detail(tr.stage, found.tamper), state.TAMPER,
                           found.tamper.kind)
    except HarnError as exc:
        job.attempts.end(Outcome.ERROR)  # the stage git or the host failed under
        ending = life.stop(Outcome.ERROR, tr.stage, one_line(exc.message, 500))
    finally:
        with job.attempts.timed("cleanup"):
            try:
                if ending is not None and ending.state.landed and job.on_landed is not None:
                    job.on_landed()  # the base fetch that refills the queue runs beside this cleanup
                if ending is not None:
                    ending.detail += assessment.before_cleanup(repo, job.eff, tr, ending, job.agents.stop.is_set())
            finally:
                _cleanup(repo, tr)
    assert ending is not None
    return ending


@contextmanager
def _working_for(job: Job, raising: bool) -> Iterator[None]:
    """This thread works for the task: what the seal finds it blamed for stops
    its next git when ``raising`` (its stages), else waits for its end."""
    if job.seal is None:
        yield
        return
    with job.seal.working_for(job.task.key, raising):
        yield


def _tamper_detail(stage: str | None, tamper: Tamper) -> str:
    return _tamper_text(stage, tamper.detail)


def _tamper_text(stage: str | None, detail: str) -> str:
    return faults.halt_detail(stage or Stage.WORKSPACE, state.TAMPER, detail, 1)


def _blamed_late(job: Job, ending: Ending) -> Ending:
    """A change the task was blamed for after its last stage's check (by
    another task's check, or its cleanup's git) ends it as a tamper fault
    too; one found after it landed halts the run (``Seal.unclaimed``)."""
    if job.seal is None:
        return ending
    late = job.seal.claim(job.task.key)
    if late is None or ending.state is State.TAMPER_FAULT:
        return ending
    if ending.state.landed:
        job.seal.unclaim(job.task.key, late)
        return ending
    return Ending(State.TAMPER_FAULT, ending.stage, _tamper_detail(ending.stage, late), state.TAMPER, late.kind)


def _for_budget(job: Job, ending: Ending) -> Ending:
    """An interruption the run's hard spending limit caused is a budget halt (``spend``)."""
    if ending.state is not State.INTERRUPTED or job.agents.stopped_for != state.BUDGET:
        return ending
    return Ending(ending.state, ending.stage, f"the run's spending limit was reached (--hard-limit): {ending.detail}",
                  ending.fault, state.BUDGET)


def _held(job: Job) -> Callable[[str], str | None]:
    """Whether a stage may not start because the run's spending limit is reached, and why."""
    def held(stage: str) -> str | None:
        meter = job.agents.meter
        if meter is None or not meter.stops(stage):
            return None
        return (f"the run's spending limit (${meter.limit:.2f}) was reached before {stage}: not started, "
                "the branch keeps the work before it")
    return held


def _workspace(repo: Repo, job: Job) -> Any:
    tr = job.result
    assert tr.runId is not None
    if job.resume_at is None:
        return start_workspace(repo, tr.runId, job.base_oid, tr.branch)
    return resume_workspace(repo, tr.runId, tr.branch, f"workflow {job.workflow_id} resumes it at {job.resume_at}")


def _walk_path(repo: Repo, job: Job, worktree: Path, life: Lifecycle) -> Ending:
    path = TaskPath(repo, job, _context(repo, job, worktree))
    entry = ENTRY[job.resume_at] if addenda.number_of(job.task) is None else "write"
    return walk(life, path.steps(), entry, job.agents.stop.is_set, path.begin, path.finished, job.attempts.end,
                _held(job))


def _track(job: Job, life: Lifecycle, now: State, stage: str) -> None:
    life.enter(now)
    state.track(job.result, now, stage)
    job.attempts.begin(stage, 1)


# --- the one stage runner -----------------------------------------------------------


@dataclass
class Step:
    role: str  # plan, write, gates, review, integrate
    stage: str  # the stage name the result records (write: implement or addendum)
    run: Callable[[int], str | None]  # the round number → None (go on) or AGAIN


Ended = Callable[[Outcome, str | None, str | None], None]  # (outcome, fault class, fault kind)


def walk(life: Lifecycle, steps: list[Step], entry: str, stopping: Callable[[], bool],
         begin: Callable[[Step, int], None], finished: Callable[[], str], ended: Ended | None = None,
         held: Callable[[str], str | None] | None = None) -> Ending:
    """Run ``steps`` in order from the step whose role is ``entry``: each
    enters its state in the lifecycle table; AGAIN goes back to the write
    step for the next round; a ``StageEnd`` ends the task there. ``ended``
    hears what each step came to; ``held`` says why a stage may not start
    (the run's spending limit), which halts the task before it."""
    roles = [s.role for s in steps]
    at, round_no = roles.index(entry), 1
    heard = ended or (lambda outcome, fault, kind: None)
    while at < len(steps):
        step = steps[at]
        if stopping():
            return life.interrupted(step.stage, f"the workflow was interrupted before {step.stage}")
        why = held(step.stage) if held is not None else None
        if why is not None:
            return life.interrupted(step.stage, why, state.BUDGET)
        life.enter(STAGE_STATE[step.stage])
        begin(step, round_no)
        try:
            said = step.run(round_no)
        except StageEnd as stop:
            heard(stop.outcome, stop.fault, stop.kind)
            return life.stop(stop.outcome, stop.stage, stop.detail, stop.fault, stop.kind)
        heard(Outcome.CHANGES_REQUESTED if said == AGAIN else Outcome.OK, None, None)
        if said == AGAIN:
            round_no += 1
            at = roles.index("write")
            continue
        at += 1
    return life.done(finished())


def _context(repo: Repo, job: Job, worktree: Path) -> TaskContext:
    task = job.task
    plan_path = f"{plans_dir(repo)}/{task.id}.md"

    def on_agent(pid: int) -> None:
        assert job.result.runId is not None
        note_agent(repo, job.result.runId, pid)

    return TaskContext(repo=repo, workflow_id=job.workflow_id, task_id=task.id, title=task.title,
                       requires=list(task.requires), branch=job.result.branch,
                       run_id=job.result.runId or "", worktree=worktree, remote=job.eff.remote,
                       base=job.eff.base, base_oid=str(job.base_oid), plan_path=plan_path,
                       scratch=job.scratch, agents=job.agents, on_agent=on_agent,
                       stage_attempts=job.eff.stageAttempts, schema_retries=job.eff.schemaRetries,
                       idle_timeout=job.eff.idleTimeout, advisory=list(job.advisory), seal=job.seal,
                       key=task.key, sandbox=job.eff.sandbox)


# --- the steps ------------------------------------------------------------------------


class TaskPath:
    """The steps of one task, sharing what earlier steps said."""

    def __init__(self, repo: Repo, job: Job, ctx: TaskContext) -> None:
        self.repo, self.job, self.ctx, self.eff, self.tr = repo, job, ctx, job.eff, job.result
        ctx.on_retry = job.attempts.retry
        self.earlier: dict[str, str] = {}
        self.findings: list[dict[str, Any]] = list(job.asked.get("findings", []))
        self.gate_failure: dict[str, Any] | None = job.asked.get("gateFailure")
        self.tip: Oid | None = None
        self.judged: Oid | None = None  # what the gates and both reviewers passed: the only commit that lands [T4]
        self.rounds = 1 if job.resume_at == REVIEW_ONLY else self.eff.reviewRounds
        self.tr.review = {"rounds": 0, "approved": False, "reviews": []}
        if job.resume_at is not None:  # a surviving branch: its committed ExecPlan, if any
            found, _ = plan_at(repo, _tip(repo, ctx.branch, Stage.WORKSPACE), ctx.task_id)
            ctx.plan_path = found or ctx.plan_path

    def steps(self) -> list[Step]:
        write = Step("write", Stage.ADDENDUM, self.addendum) if addenda.number_of(self.job.task) is not None \
            else Step("write", Stage.IMPLEMENT, self.implement)
        return [Step("plan", Stage.PLAN, self.plan), write,
                Step("gates", Stage.GATES, self.gates), Step("review", Stage.REVIEW, self.review),
                Step("integrate", Stage.INTEGRATE, self.integrate)]

    def begin(self, step: Step, round_no: int) -> None:
        """A step starts: where the task stands in flight, and its count."""
        state.track(self.tr, STAGE_STATE[step.stage], step.stage)
        self.job.attempts.begin(step.stage, round_no)

    def finished(self) -> str:
        return one_line(str((self.tr.integration or {}).get("summary") or ""), 500)

    # --- writing stages ---

    def _run_checked(self, stage: str, round_no: int) -> tuple[StageOutcome, Oid, str | None, str | None]:
        """Run a writing stage and do the host's checks every such stage needs:
        a fault ends the task, the worktree must be clean on its branch, a
        BLOCKED plan ends it. Returns (outcome, tip, plan path, plan status)."""
        extra = {"round": round_no, "earlier": dict(self.earlier), "findings": self.findings}
        if self.gate_failure is not None and stage != Stage.PLAN:
            extra["gateFailure"] = self.gate_failure
        outcome = retries.run_in_place(self.ctx, self.eff.agents[stage], self.tr.attempts[stage],
                                       self.eff.timeout_of(stage), extra)
        self.tr.stages[outcome.stage] = outcome.summary_entry()
        usage.record(self.tr, [outcome], self.job.agents.meter)
        if outcome.fault is not None:
            raise _faulted(outcome)
        tip = check_worktree(self.repo, self.ctx, stage)
        path, status = plan_at(self.repo, tip, self.ctx.task_id)
        if status == "BLOCKED":
            raise StageEnd(Outcome.BLOCKED, stage, f"the ExecPlan {path} says Status: BLOCKED: {outcome.summary}")
        return outcome, tip, path, status

    def plan(self, round_no: int) -> None:
        outcome, _, path, status = self._run_checked(Stage.PLAN, round_no)
        if not outcome.ok:
            raise StageEnd(Outcome.PRODUCT_FAILURE, Stage.PLAN, outcome.detail)
        if path is None:
            raise StageEnd(Outcome.PRODUCT_FAILURE, Stage.PLAN, f"the plan agent reported ok but no ExecPlan "
                           f"{self.ctx.plan_path} is committed on {self.ctx.branch}")
        if status not in ("APPROVED", "IN PROGRESS"):
            raise StageEnd(Outcome.PRODUCT_FAILURE, Stage.PLAN, f"the committed ExecPlan {path} has Status: "
                           f"{status or '(none)'}; the plan stage needs APPROVED or IN PROGRESS")
        self.ctx.plan_path = path
        self.earlier[Stage.PLAN] = outcome.summary

    def implement(self, round_no: int) -> None:
        before = _tip(self.repo, self.ctx.branch, Stage.IMPLEMENT)
        outcome, tip, path, status = self._run_checked(Stage.IMPLEMENT, round_no)
        branch = self.ctx.branch
        if not outcome.ok:
            raise StageEnd(Outcome.PRODUCT_FAILURE, Stage.IMPLEMENT, outcome.detail)
        if tip == before:
            raise StageEnd(Outcome.PRODUCT_FAILURE, Stage.IMPLEMENT, f"the implement agent reported ok but committed "
                           f"nothing on {branch} (tip still {str(before)[:12]})")
        if not self.repo.contains(tip, before):
            raise StageEnd(Outcome.PRODUCT_FAILURE, Stage.IMPLEMENT, f"the implement agent rewrote {branch}: "
                           f"{str(before)[:12]} is no longer in it")
        if status != "COMPLETE":
            raise StageEnd(Outcome.PRODUCT_FAILURE, Stage.IMPLEMENT, f"the ExecPlan {path or self.ctx.plan_path} at "
                           f"the tip has Status: {status or '(none)'}, not COMPLETE")
        self.earlier[Stage.IMPLEMENT] = outcome.summary
        self.tip = tip
        self.gate_failure = None  # answered: the gates judge the new tip

    def addendum(self, round_no: int) -> None:
        """The addendum agent in place of plan and implement (workflow/task/addenda.py)."""
        if Stage.ADDENDUM not in self.eff.agents:
            raise StageEnd(Outcome.PRODUCT_FAILURE, Stage.ADDENDUM, addenda.NO_AGENT_DETAIL)
        before = _tip(self.repo, self.ctx.branch, Stage.ADDENDUM)
        outcome, tip, _, _ = self._run_checked(Stage.ADDENDUM, round_no)
        grew = tip != before and self.repo.contains(tip, before)
        said = addenda.verdict(self.job.task, self.ctx.branch, outcome, before, tip, grew)
        if said is not None:
            raise StageEnd(said[0], Stage.ADDENDUM, said[1])
        self.earlier[Stage.ADDENDUM] = outcome.summary
        self.tip = tip

    # --- gates, review, integrate ---

    def gates(self, round_no: int) -> None:
        tip = self.tip or check_worktree(self.repo, self.ctx, Stage.REVIEW)
        self.tip = tip
        base = Base(self.eff.upstream, self.eff.base_oid)
        groups: list[int] = []

        def on_start(pgid: int) -> None:
            groups.append(pgid)
            self.job.agents.started(pgid)

        seal = self.job.seal
        window = seal.open_stage(self.job.task.key, Stage.GATES) if seal is not None else None
        found = None
        try:
            branch = Branch(self.tr.branch, f"refs/heads/{self.tr.branch}", tip)
            report = run_gates(self.repo, branch, base, gate_timeout(self.repo, None), on_start,
                               self.job.gate_checkouts, self.eff.sandbox)
            result: dict[str, Any] = jsonable(report)
        finally:
            for pgid in groups:
                self.job.agents.ended(pgid)
            end_adopted()  # a daemon a gate left behind goes with the gates
            if seal is not None and window is not None:
                found = seal.close_stage(window)
        if found is not None:
            raise StageEnd(Outcome.TAMPER, Stage.GATES, _tamper_detail(Stage.GATES, found), state.TAMPER, found.kind)
        if self.job.agents.stop.is_set():
            raise StageEnd(Outcome.INTERRUPTED, Stage.GATES, "the workflow was interrupted while the gates ran")
        self.tr.gates = {"passed": result["passed"], "commit": result["commit"],
                         "commands": [_gate_entry(c) for c in result["commands"]]}
        if not result["passed"]:
            first = next(c for c in result["commands"] if c["exitCode"] != 0)
            why = first.get("error") or exit_words(first["exitCode"])
            raise StageEnd(Outcome.PRODUCT_FAILURE, Stage.GATES, f"gate {shlex.join(first['argv'])} {why} on "
                           f"{str(tip)[:12]}: {last_lines_on_one_line(first.get('outputTail') or '', 300)}")

    def review(self, round_no: int) -> str | None:
        """One dual review of the exact tip, the same for every path: AGAIN
        when changes are requested and a round is left."""
        if self.tip is not None:  # the reviewers judge what the gates passed, or nothing [T4]
            self._still_judged(self.tip, Stage.REVIEW, "the gates passed")
        tip = self.tip or check_worktree(self.repo, self.ctx, Stage.REVIEW)
        assert self.tr.review is not None
        asked = {"round": round_no, "earlier": dict(self.earlier)}
        verdict = review.dual_review(self.ctx, self.eff.agents[Stage.REVIEW], round_no,
                                     self.eff.timeout_of(Stage.REVIEW), asked)
        self.tr.review["rounds"] = round_no
        self.tr.review["reviews"].extend(verdict.entries())
        usage.record(self.tr, verdict.outcomes, self.job.agents.meter)
        faulted = next((o for o in verdict.outcomes if o.fault is not None), None)
        if faulted is None:
            self._note_review(tip, verdict)
            if not verdict.approved and round_no >= self.rounds:
                raise StageEnd(Outcome.CHANGES_REQUESTED, Stage.REVIEW, self._refused_at_last(tip, verdict, round_no))
        _check_unchanged(self.repo, self.ctx, tip, Stage.REVIEW)
        if faulted is not None:
            raise _faulted(faulted)
        if verdict.approved:
            self.judged = tip
            self.tr.judged = str(tip)
            self.tr.review.update(approved=True, tip=str(tip))
            self.earlier[Stage.REVIEW] = verdict.summary()
            return None
        self.findings = verdict.findings()
        self.tip = None  # the next round's write step makes the next tip
        return AGAIN

    def _refused_at_last(self, tip: Oid, verdict: Verdict, round_no: int) -> str:
        """A refusal in the last round ends the task whatever else the
        reviewers did, so the refusal is what the detail says first; what they
        left behind (kept for cleanup and artefact salvage) is named after it."""
        left = []
        dirty = dirty_names(self.ctx.worktree)
        if dirty:
            left.append(f"the reviewers also left {len(dirty)} uncommitted path(s): {', '.join(dirty[:5])}")
        now = self.repo.ref_oid(f"refs/heads/{self.ctx.branch}")
        if now is not None and now != tip:
            left.append(f"and moved {self.ctx.branch} from {str(tip)[:12]} to {str(now)[:12]}")
        return (f"changes requested after {round_no} review round(s): {verdict.summary()}"
                + "".join(f"; {what}" for what in left))

    def _note_review(self, tip: Oid, verdict: Verdict) -> None:
        """The assessor of a branch a run left sees what its reviewers said
        [A1]: a refusal is noted on the tip, and so is an approval of a tip a
        refusal was noted on (an approval of a fresh tip changes no rule, so
        the ordinary path writes no note for it)."""
        if verdict.approved and REVIEW_NOTE not in read_note(self.repo, tip):
            return
        merge_signed(self.repo, tip, REVIEW_NOTE, verdict.note(self.job.workflow_id, str(tip)))

    def integrate(self, round_no: int) -> None:
        """Land the judged commit, and only it [T4]: the branch must still
        hold it, the builtin rebases it (never what the branch points at
        later), and what is kept is it, with its notes."""
        judged = self.judged
        assert judged is not None  # integrate follows an approving review
        self._still_judged(judged, Stage.INTEGRATE, "the gates and reviewers judged")
        agent = self.eff.agents[Stage.INTEGRATE]
        if agent.builtin:
            rebased = self._integrate_builtin(judged)
        else:
            self._integrate_agent(agent, judged)
            rebased = self.repo.ref_oid(f"refs/heads/{self.ctx.branch}")
        self.tr.tip = str(judged)
        key = self.job.task.key  # <id>, or <id>-addendum-<n>
        self.tr.integratedRef = keep_landed(self.repo, key, judged, rebased,
                                            f"git-harn: workflow {self.job.workflow_id}: task {key} landed")

    def _still_judged(self, judged: Oid, stage: str, who: str) -> None:
        """The task branch still holds the commit ``who`` judged, or the task ends here."""
        now = self.repo.ref_oid(f"refs/heads/{self.ctx.branch}")
        if now != judged:
            raise self._moved(judged, now, stage, who)

    def _moved(self, judged: Oid, now: Oid | None, stage: str, who: str) -> StageEnd:
        """The task branch holds ``now``, not the judged commit: a tamper.
        What it held is kept under ``refs/harnery/tamper/``, the branch is put
        back (compare-and-swap), and nothing lands [T4] [P1]."""
        ref = f"refs/heads/{self.ctx.branch}"
        kept = ""
        if now is not None:
            kept = keep_ref(self.repo, f"{TAMPER_ROOT}{self.job.workflow_id}/{self.job.task.key}", now,
                            f"git-harn: keep what {ref} held instead of the judged commit [P1]")
            with suppress(HarnError):
                self.repo.move_ref(ref, judged, now, f"git-harn: put back the judged commit of {ref} [T4]")
        put = self.repo.ref_oid(ref) == judged
        detail = (f"changed {ref} ({str(judged)[:12]} → {str(now)[:12] if now else 'deleted'}) after {who} "
                  f"{str(judged)[:12]}; nothing landed"
                  + (f"; what it held is kept as {kept}" if kept else "")
                  + ("" if put else f"; {ref} could not be put back"))
        return StageEnd(Outcome.TAMPER, stage, _tamper_text(stage, detail), state.TAMPER, "tamper")

    def _integrate_builtin(self, judged: Oid) -> Oid | None:
        """The builtin integrate of the judged commit; its rebased copy, if it made one."""
        ctx, eff = self.ctx, self.eff
        detach(ctx.worktree)  # integrate may need to move the branch
        try:
            report = integrate_builtin(self.repo, ctx.branch, eff.base, eff.remote, ctx.task_id, judged, eff.land,
                                       self._request_body(), {"workflowId": self.job.workflow_id,
                                                              "runId": str(self.tr.runId)},
                                       (eff.forge, eff.forgeUrl), eff.autoMerge)
        except Moved as moved:
            raise self._moved(judged, moved.found, Stage.INTEGRATE, "the gates and reviewers judged") from None
        finally:
            if self.repo.ref_oid(f"refs/heads/{ctx.branch}") is not None:
                attach(ctx.worktree, ctx.branch)
        self.tr.integration = report
        self.tr.stages[Stage.INTEGRATE] = {"attempt": 1, "ok": bool(report.get("ok")),
                                       "summary": one_line(str(report.get("summary") or ""), 500), "fault": None}
        if report.get("outcome") == PROPOSED:
            self.tr.proposal = report.get("proposal")
            failpoint("propose-before-record")
            raise StageEnd(Outcome.PROPOSED, Stage.INTEGRATE, one_line(str(report.get("summary") or ""), 500))
        check = check_integration(report)
        if not check.ok:
            raise StageEnd(Outcome.HALT, Stage.INTEGRATE, check.detail)
        rebased = report.get("rebasedTip")
        return to_oid(rebased) if rebased else None

    def _plan_summary(self) -> str:
        """The first paragraph of the ExecPlan as the judged commit has it (no
        heading, no status line), one bounded line: untrusted text, shown."""
        raw = (self.repo.read_file(self.judged, self.ctx.plan_path, limit=65536, regular_only=True, whole=False)
               if self.judged is not None else None)
        if raw is None:
            return ""
        for block in raw.decode("utf-8", "replace").split("\n\n"):
            text = " ".join(line for line in block.splitlines()
                            if line.strip() and not line.startswith("#") and not line.startswith("Status:"))
            if text.strip():
                return one_line(text, 500)
        return ""

    def _request_body(self) -> str:
        """What the request says beside the squash's message: the evidence the
        run judged it by (gates, both reviews' verdicts, the run) [F1]."""
        lines = [f"Proposed by git-harn workflow {self.job.workflow_id} (run {self.tr.runId})."]
        summary = self._plan_summary()
        if summary:
            lines.append(f"ExecPlan ({self.ctx.plan_path}): {summary}")
        gates = self.tr.gates or {}
        if gates:
            lines.append(f"Gates: {'passed' if gates.get('passed') else 'failed'} on {str(gates.get('commit'))[:12]} "
                         f"({len(gates.get('commands') or [])} command(s)).")
        for said in (self.tr.review or {}).get("reviews", [])[-2:]:
            lines.append(f"Review {said.get('reviewer')}: {said.get('verdict')}: "
                         f"{one_line(str(said.get('summary') or ''), 300)}")
        return "\n".join(lines)

    def _integrate_agent(self, agent: AgentSettings, judged: Oid) -> None:
        ctx, eff, job = self.ctx, self.eff, self.job
        with integration_turn(), merge_lock(
                self.repo, f"workflow {job.workflow_id}: integration agent for task {ctx.task_id}"):
            before = fetch_branch(self.repo, eff.remote, eff.base)  # all the agent may add to is the judged work [T4]
            outcome = run_stage(ctx, agent, 1, eff.timeout_of(Stage.INTEGRATE), {"round": 1})
            self.tr.stages[outcome.stage] = outcome.summary_entry()
            usage.record(self.tr, [outcome], self.job.agents.meter)
            self.tr.integration = outcome.report
            if outcome.fault is not None:  # never retried: a hidden success may already have pushed [I4]
                raise StageEnd(Outcome.of_fault(outcome.fault), Stage.INTEGRATE,
                               faults.integration_detail(outcome.detail, eff.upstream), outcome.fault,
                               outcome.faultKind)
            check = check_integration(outcome.report)
            if not check.ok:
                raise StageEnd(Outcome.HALT, Stage.INTEGRATE, check.detail)
            landed = fetch_branch(self.repo, eff.remote, eff.base)
            if addenda.number_of(job.task) is not None:
                problem = addenda.landed_problem(self.repo, job.task, landed, job.base_oid, eff.upstream)
                if problem is not None:
                    raise StageEnd(Outcome.HALT, Stage.INTEGRATE, problem)
            elif not ticked_at(self.repo, landed, ctx.task_id):
                raise StageEnd(Outcome.HALT, Stage.INTEGRATE, f"the integration report passed the check but "
                               f"{eff.upstream} ({str(landed)[:12]}) does not have task {ctx.task_id} ticked")
            found = not_judged(self.repo, Landing(judged, before, landed, roadmap_file(self.repo), ctx.task_id,
                                                  addenda.number_of(job.task), eff.upstream))
            if found is not None:
                raise _unjudged(found)


def _gate_entry(command: dict[str, Any]) -> dict[str, Any]:
    """A gate in the task's result; a failed one with the last lines of its
    output (the note on the tip keeps the whole tail)."""
    entry = {"argv": command["argv"], "exitCode": command["exitCode"], "seconds": command["seconds"]}
    if command["exitCode"] != 0:
        entry["outputTail"] = "\n".join(last_lines(command.get("outputTail") or ""))
    return entry


# --- the host's checks ----------------------------------------------------------------


def _faulted(outcome: StageOutcome) -> StageEnd:
    assert outcome.fault is not None
    detail = faults.halt_detail(outcome.stage, outcome.fault, outcome.detail, outcome.tries)
    return StageEnd(Outcome.of_fault(outcome.fault), outcome.stage, detail, outcome.fault, outcome.faultKind)


def _unjudged(found: NotJudged) -> StageEnd:
    """A base that moved by what nobody judged is a tamper fault: nothing new
    starts, and the detail names what to inspect; one that did not move
    refuses the agent's claim [T4]."""
    if not found.moved:
        return StageEnd(Outcome.HALT, Stage.INTEGRATE, found.detail)
    return StageEnd(Outcome.TAMPER, Stage.INTEGRATE, f"tamper fault at {Stage.INTEGRATE}: {found.detail}",
                    state.TAMPER, state.UNJUDGED_LANDING)


def _tip(repo: Repo, branch: str, stage: str) -> Oid:
    tip = repo.ref_oid(f"refs/heads/{branch}")
    if tip is None:
        raise StageEnd(Outcome.PRODUCT_FAILURE, stage, f"branch {branch} was deleted during {stage}")
    return tip


def check_worktree(repo: Repo, ctx: TaskContext, stage: str) -> Oid:
    """The agent's word is never evidence: the worktree is still on the task
    branch, clean, and the branch still grows from the base."""
    on = worktree_branch(ctx.worktree)
    if on != f"refs/heads/{ctx.branch}":
        raise StageEnd(Outcome.PRODUCT_FAILURE, stage, f"after {stage} the worktree is not on {ctx.branch} "
                       f"(HEAD: {on or 'detached'})")
    dirty = dirty_names(ctx.worktree)
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" … and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise StageEnd(Outcome.PRODUCT_FAILURE, stage, f"after {stage} the worktree has {len(dirty)} uncommitted "
                       f"path(s): {shown}")
    tip = _tip(repo, ctx.branch, stage)
    if not repo.contains(tip, to_oid(ctx.base_oid)):
        raise StageEnd(Outcome.PRODUCT_FAILURE, stage, f"after {stage} {ctx.branch} no longer contains its base "
                       f"{ctx.base_oid[:12]}")
    return tip


def _check_unchanged(repo: Repo, ctx: TaskContext, tip: Oid, stage: str) -> None:
    now = check_worktree(repo, ctx, stage)
    if now != tip:
        raise StageEnd(Outcome.PRODUCT_FAILURE, stage, f"the {stage} changed {ctx.branch} ({str(tip)[:12]} → "
                       f"{str(now)[:12]}); reviewers judge the exact tip and may not commit")


# --- the end ----------------------------------------------------------------------------


def _cleanup(repo: Repo, tr: TaskResult) -> None:
    """Leave the workspace to cleanup: released when done, preserved when not [P2]."""
    assert tr.runId is not None
    try:
        done = cleanup_locked(repo, tr.runId)
    except HarnError as exc:
        tr.workspace = {"state": "unknown", "reason": one_line(exc.message, 300)}
        return
    tr.workspace = {"state": done.state, "outcome": done.outcome, "reason": one_line(done.reason, 300),
                    "path": done.path}


def _facts(repo: Repo, job: Job, ending: Ending) -> state.Facts:
    """What is true now that the task is over, read from git [L4]."""
    tr, key = job.result, job.task.key
    tip = repo.ref_oid(f"refs/heads/{tr.branch}")
    ahead = tip is not None and not repo.contains(job.base_oid, tip)
    workspace = tr.workspace or {}
    where = workspace.get("path")
    kept = workspace.get("state") in (PRESERVED_DIRTY, PRESERVED_UNMERGED)
    dirty = bool(kept and where and Path(where).is_dir() and dirty_names(Path(where)))
    return state.Facts(task_id=tr.taskId, key=key, branch=tr.branch, branch_exists=tip is not None, ahead=ahead,
                       landed=ending.state.landed or repo.ref_oid(INTEGRATED_ROOT + key) is not None,
                       workspace=workspace.get("state"), run_id=tr.runId,
                       integration_crashed=marker_for(repo, tr.taskId, tr.addendum).exists(), dirty=dirty)
