"""The task lifecycle [L1]: every state a workflow task can be in, the moves
allowed between them (one table), and the one function that ends a task.

A task walks: pending → selected → (claimed) → starting → the stages of its
path (planning, implementing or writing-addendum, gating, reviewing,
integrating; a review that asks for changes goes back to implementing) →
an end (in pull-request mode integration ends ``proposed``: the squash waits
in a request, not landed, its claim kept; the next run reconciles it [F1]).
What a stage came to is an ``Outcome`` (ok, a product failure, a fault of
some class, an interruption, a lost claim …); which end that is,
is decided here and nowhere else (``ending_for``). The pipeline says what
happened; it never names a status.

Public API (for the runner, recovery, remediation, rendering, and anyone
who reads a recorded task: nothing outside this module compares a status
string):

- ``State``: the enum. ``state.reported`` is the status the result schema
  names (``running`` for every in-flight state, ``halted`` for both
  ``INTERRUPTED`` and ``HALTED``, ``failed`` for ``REFUSED``); the rules are
  properties: ``terminal``, ``halted``, ``in_flight``, ``landed``, ``assessable``,
  ``salvaged_as_infra``, ``suppresses_remediation``, ``counts_as_auth_fault``,
  ``resumable`` (its branch may re-enter a later run), ``fault`` (the fault
  class it counts as, or None), ``triaged_severity(stage)`` (which review
  findings remediation takes from it).
- ``STATUSES``: every status the result schema names, derived from ``State``,
  in the order a run's summary counts them.
- ``State.of(doc)``: a recorded task (``workflow.json``'s task member, or a
  ``TaskResult``) back to its state; ``state`` is recorded beside ``status``.
- ``Outcome``: what one stage came to. ``ending_for(outcome, stage)``: the
  end state it leads to (a fault at ``integrate`` halts: never retried [I4]).
- ``TRANSITIONS``: ``{state: frozenset of states it may move to}``;
  ``allowed(a, b)``; ``Lifecycle``: one task's walk, ``enter(state)`` raises
  ``IllegalTransition`` for a move the table does not have, ``stop(...)``
  returns the ``Ending``; ``interrupted(before, detail)`` ends it between
  stages; ``done(detail)``.
- ``Ending``: state, stage, detail, fault kind: what ended the task, before
  the facts at the end are known.
- ``Facts``: what is true when the task is over (the branch, work beyond its
  base, landed, the workspace's state); ``advice(ending, facts, where)``
  gives the one next step (``Next``: an exact command, or none, and why).
- ``survivor_advice(...)``: the next step for a surviving branch a run
  left unresolved (the needs-operator-recovery halt).
- ``end(tr, ending, facts, where)``: the ONE writer of a task's final
  ``status``, ``state``, ``stage``, ``detail``, ``fault``, ``faultKind``
  and ``next``.
- ``interrupt(tr, stage, detail)``: the end of a task the runner had to
  leave in flight (interrupted, runner gone), through ``end`` too.
- ``SkipReason``: why a task was not started (``surviving-branch``,
  ``max-tasks``, ``waiting-for-requirements``, ``auth-fault-halt`` …).
- ``suppression(states, interrupted, blocked)``: why a run may write no
  remediation, or None; ``WorkflowResult.remediationSuppressed`` and the
  flush both ask it.
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from git_harn.tasks.config import LandMode, Stage
from git_harn.text import Word

# fault classes (the host decides them from what it sees: stages.judge)
INFRA = "infra"
PROVIDER = "provider"
AUTH = "auth"
CONFIG = "config"  # the agent refused its own command line or setup: it would refuse again
# the shared git control surface (config, hooks, info, admin files, a ref not the task's own) changed
# during a stage, or the branch moved after its verdict [T2] [T4]: never retried, halts new starts
TAMPER = "tamper"
# the fault kind of a tamper an integration agent made: the base moved by what nobody judged [T4]
UNJUDGED_LANDING = "unjudged-landing"
INTERRUPTED_FAULT = "interrupted"
FAULTS = (INFRA, PROVIDER, AUTH, CONFIG, TAMPER, INTERRUPTED_FAULT)  # every fault class: the one list
# the run's spending limit was reached (workflow/agents/spend.py): the skip reason of a task it kept from
# starting, and the faultKind of one it stopped between stages (or, with --hard-limit, in one)
BUDGET = "budget"


class TaskEnd(Protocol):
    """What ``end`` writes on a task (``result.TaskResult`` has it): the
    members are named as the result schema names them."""

    state: str
    status: str
    stage: str | None
    detail: str
    fault: str | None
    faultKind: str | None
    next: dict[str, Any] | None


class IllegalTransition(RuntimeError):
    """A move the table does not have: a bug in the caller, never the task's trouble."""


class State(enum.Enum):
    # not started
    PENDING = "pending"
    PLANNED = "planned"  # a dry run: would start
    SELECTED = "selected"
    CLAIMED = "claimed"
    # in flight
    STARTING = "starting"  # making or resuming the workspace
    PLANNING = "planning"
    IMPLEMENTING = "implementing"
    WRITING_ADDENDUM = "writing-addendum"
    GATING = "gating"
    REVIEWING = "reviewing"
    INTEGRATING = "integrating"
    # ends
    DONE = "done"
    FAILED = "failed"  # a product failure: the agent's work or the host's checks said no
    REFUSED = "refused"  # review asked for changes in every round: reported failed
    BLOCKED = "blocked"  # the ExecPlan says Status: BLOCKED
    HALTED = "halted"  # an operator must look before anything else happens (integration)
    INTERRUPTED = "interrupted"  # the run was stopped, or its runner is gone: reported halted
    INFRA_FAULT = "infra-fault"
    PROVIDER_FAULT = "provider-fault"
    AUTH_FAULT = "auth-fault"
    CONFIG_FAULT = "config-fault"  # never retried: fix the agent's command line, then relaunch
    TAMPER_FAULT = "tamper-fault"  # a stage changed what the host obeys: undone, kept as evidence [T2]
    MANUAL_MERGE_READY = "manual-merge-ready"  # an addendum an operator merges [R5]
    # the judged squash waits in a pull request on the forge [F1]: not landed, its claim kept;
    # the next run reconciles it (merged: done; closed: refused; open: held) [F2]
    PROPOSED = "proposed"

    @property
    def reported(self) -> str:
        """The status the result schema names for this state."""
        return _REPORTED.get(self, self.value)

    @property
    def terminal(self) -> bool:
        return self in ENDS

    @property
    def halted(self) -> bool:
        """Reported halted: stopped with its work kept, for a relaunch or an operator's look."""
        return self.reported == State.HALTED.value

    @property
    def in_flight(self) -> bool:
        return self in IN_FLIGHT

    @property
    def landed(self) -> bool:
        return self is State.DONE

    @property
    def delivered(self) -> bool:
        """Its work left the run as the landing mode asks: landed, or proposed [F1]."""
        return self in (State.DONE, State.PROPOSED)

    @property
    def assessable(self) -> bool:
        """A surviving branch the assessor judges before cleanup [A1]."""
        return self in (State.FAILED, State.REFUSED, State.BLOCKED, State.HALTED)

    @property
    def salvaged_as_infra(self) -> bool:
        """Not judged: its process died; its ExecPlans are salvaged as an infra fault."""
        return self is State.INFRA_FAULT

    @property
    def suppresses_remediation(self) -> bool:
        """Transient adapter trouble must not create roadmap work."""
        return self in (State.PROVIDER_FAULT, State.AUTH_FAULT)

    @property
    def counts_as_auth_fault(self) -> bool:
        return self is State.AUTH_FAULT

    @property
    def resumable(self) -> bool:
        """Its branch may re-enter a later run (recovery), when it holds work."""
        return self.terminal and self not in (State.DONE, State.BLOCKED, State.MANUAL_MERGE_READY,
                                              State.TAMPER_FAULT, State.PROPOSED)

    @property
    def fault(self) -> str | None:
        """The fault class this end counts as in ``faultMetrics``."""
        return _FAULT_OF.get(self)

    def triaged_severity(self, stage: str | None) -> str | None:
        """Which findings of the final review round remediation turns into
        addenda: the advice on work that landed, the blocking findings of a
        task that ended at review (refused, or failed there on a host check)."""
        if self is State.DONE:
            return "advisory"
        ended_at_review = self is State.REFUSED or (self is State.FAILED and stage == Stage.REVIEW)
        return "blocking" if ended_at_review else None

    @property
    def triaged(self) -> bool:
        """False: what its reviewers saw says nothing reliable (its process
        died, or it tampered with what the host obeys)."""
        return self not in (State.INFRA_FAULT, State.TAMPER_FAULT)

    @classmethod
    def of(cls, task: Any) -> State:
        """A recorded task (a dict or a ``TaskResult``) back to its state: its
        ``state`` when that reports its ``status``, else what the status and
        fault say (records written before states were recorded)."""
        get = task.get if isinstance(task, dict) else (lambda key, default=None: getattr(task, key, default))
        recorded, status = _BY_VALUE.get(str(get("state"))), str(get("status"))
        if recorded is not None and recorded.reported == status:
            return recorded
        if status == "halted" and get("fault") == INTERRUPTED_FAULT:
            return cls.INTERRUPTED
        if status == "failed" and get("stage") == Stage.REVIEW:
            return cls.REFUSED
        if status == "running":
            return cls.STARTING
        return _BY_VALUE.get(status, cls.PENDING)


_REPORTED = {State.STARTING: "running", State.PLANNING: "running", State.IMPLEMENTING: "running",
             State.WRITING_ADDENDUM: "running", State.GATING: "running", State.REVIEWING: "running",
             State.INTEGRATING: "running", State.SELECTED: "running", State.CLAIMED: "running",
             State.REFUSED: "failed", State.INTERRUPTED: "halted"}
_FAULT_OF = {State.INFRA_FAULT: INFRA, State.PROVIDER_FAULT: PROVIDER, State.AUTH_FAULT: AUTH,
             State.CONFIG_FAULT: CONFIG, State.TAMPER_FAULT: TAMPER, State.INTERRUPTED: INTERRUPTED_FAULT}
_BY_VALUE = {s.value: s for s in State}

ENDS = frozenset({State.DONE, State.FAILED, State.REFUSED, State.BLOCKED, State.HALTED, State.INTERRUPTED,
                  State.INFRA_FAULT, State.PROVIDER_FAULT, State.AUTH_FAULT, State.CONFIG_FAULT,
                  State.TAMPER_FAULT, State.MANUAL_MERGE_READY, State.PROPOSED})
# every status the result schema names, in the order a run's summary counts them: the ends as
# declared, then what has not ended (planned, running), pending last
STATUSES: tuple[str, ...] = tuple(dict.fromkeys(
    s.reported for s in sorted(State, key=lambda s: (not s.terminal, s is State.PENDING))))
STAGES = frozenset({State.PLANNING, State.IMPLEMENTING, State.WRITING_ADDENDUM, State.GATING, State.REVIEWING,
                    State.INTEGRATING})
IN_FLIGHT = frozenset({State.SELECTED, State.CLAIMED, State.STARTING}) | STAGES
# every end a stage can lead to; BLOCKED only from a writing stage, MANUAL_MERGE_READY only from an
# addendum, REFUSED only from review, HALTED only from integration
_STAGE_ENDS = frozenset({State.FAILED, State.INTERRUPTED, State.INFRA_FAULT, State.PROVIDER_FAULT,
                         State.AUTH_FAULT, State.CONFIG_FAULT, State.TAMPER_FAULT})
# a lost lock or claim, an interruption, a bug; a tamper the host found before a stage began
_ANYWHERE = frozenset({State.FAILED, State.INTERRUPTED, State.TAMPER_FAULT})

TRANSITIONS: dict[State, frozenset[State]] = {
    State.PENDING: frozenset({State.SELECTED, State.PLANNED, State.INTERRUPTED}),
    State.PLANNED: frozenset(),
    State.SELECTED: frozenset({State.CLAIMED, State.STARTING}) | _ANYWHERE,
    State.CLAIMED: frozenset({State.STARTING}) | _ANYWHERE,
    State.STARTING: frozenset({State.PLANNING, State.IMPLEMENTING, State.WRITING_ADDENDUM, State.GATING,
                               State.REVIEWING}) | _ANYWHERE,
    State.PLANNING: frozenset({State.IMPLEMENTING, State.BLOCKED}) | _STAGE_ENDS,
    State.IMPLEMENTING: frozenset({State.GATING, State.BLOCKED}) | _STAGE_ENDS,
    State.WRITING_ADDENDUM: frozenset({State.GATING, State.BLOCKED, State.MANUAL_MERGE_READY}) | _STAGE_ENDS,
    State.GATING: frozenset({State.REVIEWING}) | _STAGE_ENDS,
    State.REVIEWING: frozenset({State.IMPLEMENTING, State.WRITING_ADDENDUM, State.INTEGRATING,
                                State.REFUSED}) | _STAGE_ENDS,
    State.INTEGRATING: frozenset({State.DONE, State.PROPOSED, State.HALTED}) | _STAGE_ENDS,
    **{end: frozenset() for end in ENDS},
}

# the stage names of the result schema, and the state each one is
STAGE_STATE: dict[str, State] = {
    Stage.WORKSPACE: State.STARTING, Stage.PLAN: State.PLANNING, Stage.IMPLEMENT: State.IMPLEMENTING,
    Stage.ADDENDUM: State.WRITING_ADDENDUM, Stage.GATES: State.GATING, Stage.REVIEW: State.REVIEWING,
    Stage.INTEGRATE: State.INTEGRATING}


def allowed(before: State, after: State) -> bool:
    return after in TRANSITIONS[before]


class Outcome(enum.Enum):
    """What one stage came to, as the host saw it."""

    OK = "ok"
    PRODUCT_FAILURE = "product-failure"  # a valid report of failure, or a host check that failed
    BLOCKED = "blocked"  # the ExecPlan says BLOCKED
    CHANGES_REQUESTED = "changes-requested"  # review, in its last round
    MANUAL_MERGE_READY = "manual-merge-ready"
    HALT = "halt"  # an operator must look (an integration the host cannot confirm)
    PROPOSED = "proposed"  # integration opened (or found) the task's pull request [F1]
    INFRA = INFRA
    PROVIDER = PROVIDER
    AUTH = AUTH
    CONFIG = CONFIG
    TAMPER = TAMPER
    INTERRUPTED = INTERRUPTED_FAULT
    LOST_CLAIM = "lost-claim"  # a lock or claim this task held was lost
    ERROR = "error"  # git or the host failed under the task (a HarnError)

    @classmethod
    def of_fault(cls, fault: str) -> Outcome:
        return {INFRA: cls.INFRA, PROVIDER: cls.PROVIDER, AUTH: cls.AUTH, CONFIG: cls.CONFIG, TAMPER: cls.TAMPER,
                INTERRUPTED_FAULT: cls.INTERRUPTED}.get(fault, cls.INFRA)


_END_FOR = {Outcome.PRODUCT_FAILURE: State.FAILED, Outcome.BLOCKED: State.BLOCKED,
            Outcome.CHANGES_REQUESTED: State.REFUSED, Outcome.MANUAL_MERGE_READY: State.MANUAL_MERGE_READY,
            Outcome.HALT: State.HALTED, Outcome.PROPOSED: State.PROPOSED,
            Outcome.INFRA: State.INFRA_FAULT, Outcome.PROVIDER: State.PROVIDER_FAULT,
            Outcome.AUTH: State.AUTH_FAULT, Outcome.CONFIG: State.CONFIG_FAULT, Outcome.TAMPER: State.TAMPER_FAULT,
            Outcome.INTERRUPTED: State.INTERRUPTED,
            Outcome.LOST_CLAIM: State.FAILED, Outcome.ERROR: State.FAILED}


def ending_for(outcome: Outcome, stage: str | None) -> State:
    """The end state an outcome at ``stage`` leads to. A fault during
    integration halts whatever its class, except provider and auth: a hidden
    success may already have pushed, and it is never retried [I4]."""
    if outcome is Outcome.OK:
        raise IllegalTransition("an ok outcome does not end a task")
    if stage == Stage.INTEGRATE and outcome in (Outcome.INFRA, Outcome.INTERRUPTED):
        return State.HALTED
    return _END_FOR[outcome]


@dataclass
class Ending:
    """How a task ended, as the stage that ended it saw it."""

    state: State
    stage: str | None
    detail: str
    fault: str | None = None  # the fault class seen (infra, provider, auth, config, tamper, interrupted)
    faultKind: str | None = None  # timeout, crash, invalid-report, exit-75 …

    @property
    def assessable(self) -> bool:
        """Judged before cleanup; not when an interruption halted it mid-integration."""
        return self.state.assessable and self.fault != INTERRUPTED_FAULT


class Lifecycle:
    """One task's walk through the table; thread-confined (one worker each)."""

    def __init__(self, start: State = State.PENDING) -> None:
        self.state = start
        self.walked: list[State] = [start]

    def enter(self, state: State) -> None:
        if not allowed(self.state, state):
            raise IllegalTransition(f"{self.state.value} → {state.value} is not in the lifecycle table")
        self.state = state
        self.walked.append(state)

    def stop(self, outcome: Outcome, stage: str | None, detail: str, fault: str | None = None,
             kind: str | None = None) -> Ending:
        end = ending_for(outcome, stage)
        self.enter(end)
        shown = fault if fault is not None else end.fault
        return Ending(end, stage, detail, shown, kind)

    def interrupted(self, before: str, detail: str, kind: str | None = None) -> Ending:
        """Stopped between stages, before ``before`` began: nothing of it ran
        (``kind``: why, when not an interruption of the run: ``BUDGET``)."""
        self.enter(State.INTERRUPTED)
        return Ending(State.INTERRUPTED, before, detail, INTERRUPTED_FAULT, kind)

    def done(self, detail: str) -> Ending:
        self.enter(State.DONE)
        return Ending(State.DONE, Stage.DONE, detail)


class SkipReason(Word):
    """Why a task was not started: the one list of these words (a task's ``skipped`` entry)."""

    SURVIVING_BRANCH = "surviving-branch"
    MAX_TASKS = "max-tasks"
    WAITING = "waiting-for-requirements"
    LIVE_RUN = "live-run"  # the branch's workspace is held by a live run: never a survivor [L2]
    UNKNOWN_REQUIREMENT = "unknown-requirement"  # a Requires: id that names no task: it can never run
    NO_ADDENDUM_AGENT = "no-addendum-agent"  # the base's workflow.toml names no [agents.addendum] [R5]
    AUTH_FAULT_HALT = "auth-fault-halt"  # an auth fault earlier in the run stopped new starts
    TAMPER_HALT = "tamper-halt"  # a stage tampered with what the host obeys: nothing new starts [T2]
    PROVIDER_FAULT_HALT = "provider-fault-halt"  # a provider's reset time is not reached yet
    BUDGET_HALT = BUDGET  # the run's spending limit was reached: no agent stage starts
    RUNNER_GONE = "runner-gone"
    CLAIMED_ELSEWHERE = "claimed-elsewhere"  # another run holds the task's claim on the remote
    DONE_ELSEWHERE = "done-elsewhere"  # the base on the remote has it ticked already
    CLAIM_FAILED = "claim-failed"  # its claim could not be made or confirmed on the remote
    PROPOSED = "proposed"  # its squash waits in an open pull request: held, never failed [F2]


def suppression(states: Iterable[State], interrupted: bool, blocked: str | None,
                metrics: dict[str, int] | None = None) -> str | None:
    """Why a run must write no remediation (a provider or auth fault, counted
    in its tasks or its ``faultMetrics``, a blocked start, an interruption),
    or None."""
    ends = list(states)
    counted = metrics or {}
    for state, metric in ((State.PROVIDER_FAULT, "providerFaults"), (State.AUTH_FAULT, "authFaults")):
        if state in ends or counted.get(metric, 0) > 0:
            return str(state.value)
    if blocked is not None:
        return blocked
    return State.INTERRUPTED.value if interrupted else None


# --- the end: facts, advice, and the one writer -----------------------------------


@dataclass
class Where:
    """Where the run ran, for commands that must run as printed: the flags
    the operator gave are given again (a flag, never a configuration key)."""

    remote: str
    base: str
    flags: tuple[str, ...] = ()  # e.g. ("--remote", "up", "--base", "trunk") when given
    # what ``git harn integrate`` must be given to land as the run lands, since it reads no
    # workflow.toml: a pull-request run's --land, --forge and --forge-url, whether given by
    # flag or by the file (None: ``flags``). Without them a printed integrate of a
    # pull-request run would push onto the base, or push the landing branch and open no request
    integrate_flags: tuple[str, ...] | None = None

    def workflow_run(self, *extra: str) -> str:
        return harn_command("workflow", "run", *self.flags, *extra)

    def integrate(self, branch: str, *extra: str) -> str:
        flags = self.flags if self.integrate_flags is None else self.integrate_flags
        return harn_command("integrate", branch, *flags, *extra)


def landing_flags(land: str | None, forge: str | None, forge_url: str | None, auto_merge: bool) -> tuple[str, ...]:
    """The flags of ``integrate`` that land as a run with these settings
    does (``land``: ``pull-request`` or anything else, which is a push):
    flags, never configuration keys [L4] [F1]."""
    if land != LandMode.PULL_REQUEST.value:
        return ()
    flags: tuple[str, ...] = ("--land", LandMode.PULL_REQUEST.value)
    flags += ("--forge", forge) if forge else ()
    flags += ("--forge-url", forge_url) if forge_url else ()
    return flags + (("--auto-merge",) if auto_merge else ())


@dataclass
class Facts:
    """What is true when a task is over, read from git, not from the stages."""

    task_id: str
    key: str  # <id>, or <id>-addendum-<n>
    branch: str
    branch_exists: bool
    ahead: bool  # the branch holds committed work beyond its base
    landed: bool  # refs/harnery/integrated/<key> or the task's squash is on the base
    workspace: str | None = None  # released, preserved, unknown, or None: never made
    run_id: str | None = None
    integration_crashed: bool = False  # an integrate of this task died midway (its marker is left)
    dirty: bool = False  # the preserved workspace holds uncommitted work


@dataclass
class Next:
    """The one next step: an exact command (None: nothing to do) and why."""

    command: str | None
    why: str

    def document(self) -> dict[str, Any]:
        return {"command": self.command, "why": self.why}


RESUME_FLAGS = ("--resume-partial-branches", "--resume-mode", "continue")
# what a continue-mode resume does, said once for every end that advises it
RESUMED = ("a resumed run goes on from where its ExecPlan says (a tip whose gates failed or whose reviewers "
           "refused it is implemented again with what they said)")


def advice(ending: Ending, facts: Facts, where: Where) -> Next:
    """The next step for a task that ended, from the facts at its end [L4]:
    it names flags, never keys, and only branches and runs that exist."""
    state = ending.state
    if state.landed or facts.landed:
        return Next(None, "landed")
    if state is State.PROPOSED:
        return Next(None, "proposed on the forge: the next run reconciles it (merged: done; closed: refused; "
                    "open: held, with its branch)")
    step = _advice_from_facts(state, facts, where)
    first = _UNJUDGED_FIRST if ending.faultKind == UNJUDGED_LANDING else _FIRST.get(state)
    if first is not None and step.command is not None:
        # the same command on the same state would end the same way: say what must change first
        step.why = f"{first.format(branch=facts.branch, upstream=f'{where.remote}/{where.base}')}, then run this: " \
                   f"{step.why}"
    return step


# An end whose cause is outside the task's work: what has to change before its next step can do better.
_UNJUDGED_FIRST = ("an integration agent put on {upstream} what nobody judged (the detail names the commits; "
                   "git-harn does not unpush): inspect them there and revert what should not stay")
_FIRST = {
    State.TAMPER_FAULT: ("a stage changed what the host obeys (the detail names each change, undone; the evidence "
                         "is in the run folder): inspect {branch} as hostile work"),
    State.CONFIG_FAULT: ("the agent refused its own command line or setup (see the detail): fix it first "
                         "(git harn workflow check shows each agent's)"),
    State.AUTH_FAULT: ("the agent's credential was refused (see the detail): make it work again first "
                       "(git harn workflow check --live says when it does)"),
    State.PROVIDER_FAULT: ("the agent's provider did not serve (a usage limit or an outage, see the detail): "
                           "wait until it serves again"),
    State.INFRA_FAULT: ("the stage failed for a reason outside the task's work (a crash, a hang or the machine, "
                        "see the detail): fix or wait that out first"),
}


def _advice_from_facts(state: State, facts: Facts, where: Where) -> Next:
    if facts.integration_crashed and facts.branch_exists:
        return Next(where.integrate(facts.branch, "--resume-after-crash"),
                    f"an integrate of {facts.branch} died midway: inspect {where.remote}/{where.base} and the "
                    "roadmap there (it may have pushed), then finish it")
    if not facts.branch_exists:
        return Next(where.workflow_run(), f"{facts.branch} holds no work beyond {where.remote}/{where.base} "
                    "and is gone: a relaunch starts the task afresh")
    if state is State.MANUAL_MERGE_READY or state is State.HALTED:
        return Next(where.integrate(facts.branch),
                    f"an operator checks {facts.branch} (see the detail), then lands it")
    if state.resumable and facts.ahead and not facts.dirty:
        return Next(where.workflow_run(*RESUME_FLAGS),
                    f"{facts.branch} keeps its committed work: {RESUMED}")
    return Next(harn_command("workflow", "discard", facts.task_id, "--yes"),
                f"{facts.branch} cannot be resumed as it is ({_why_not(state, facts)}): discard keeps its work "
                "on harnery/salvage/ and lets a relaunch start the task afresh")


def survivor_advice(task_id: str, branch: str, why: str, where: Where, resumable: bool = True,
                    waiting: bool = False, addendum: bool = False, extra: tuple[str, ...] = ()) -> Next:
    """The next step for a surviving branch a run left unresolved (needs-operator-recovery)."""
    if waiting:
        return Next(None, f"{branch} waits for tasks it requires: a later run takes it once they are ticked")
    if addendum:
        return Next(where.integrate(branch),
                    f"{branch} is an addendum branch: an operator checks it, then lands it")
    if resumable:
        return Next(where.workflow_run(*RESUME_FLAGS, *extra),
                    f"{branch} ({why}): {RESUMED}")
    return Next(harn_command("workflow", "discard", task_id, "--yes"),
                f"{branch} cannot be resumed as it is ({why}): discard keeps its work on harnery/salvage/ and "
                "lets a relaunch start the task afresh")


def _why_not(state: State, facts: Facts) -> str:
    if facts.dirty:
        return "its workspace has uncommitted work"
    if state is State.BLOCKED:
        return "its ExecPlan says BLOCKED"
    if facts.ahead:  # it holds work, yet its end is one a run never resumes
        return f"a task that ended {state.value} is never resumed"
    return "it holds no committed work of its own"


def halt_advice(reason: SkipReason | None, where: Where, wait_seconds: float | None = None) -> Next:
    """The run's own next step when it stopped starting tasks (a breaker, or
    a roadmap it could not read again): the relaunch that starts the tasks it
    left, since a task never started leaves no branch [L4]."""
    if reason is SkipReason.PROVIDER_FAULT_HALT and wait_seconds is not None:
        bound = str(max(60, int(wait_seconds) + 60))  # the reset time, and a minute for the provider's clock
        return Next(where.workflow_run(f"--wait-for-provider={bound}"),
                    "the tasks not started wait for the provider's reset time, then run")
    if reason is SkipReason.TAMPER_HALT:
        return Next(where.workflow_run(), "a stage tampered with the repository's git control surface; the "
                    "changes were undone and kept as evidence in the run folder: once you have read them, a "
                    "relaunch starts the tasks not started")
    if reason is SkipReason.AUTH_FAULT_HALT:
        return Next(where.workflow_run(), "the tasks not started run once the credential works again "
                    f"({harn_command('workflow', 'check', '--live')} says so)")
    return Next(where.workflow_run(), "once the roadmap on the base reads again, a relaunch starts what is left")


def budget_advice(limit: float, spent: float, where: Where, survivors: bool) -> Next:
    """The run's next step once its spending limit stopped it: the relaunch
    that goes on with what is left (``survivors``: tasks it halted keep their
    work on their branches, which the relaunch resumes). A relaunch is a run
    of its own and counts from nothing; the limit it is given is twice this
    one, so that it is never the same advice twice in a row."""
    more = max(round(2 * limit, 2), 0.01)
    resume = RESUME_FLAGS if survivors else ()
    left = ("the tasks it halted keep their work and are resumed, the tasks not started start" if survivors
            else "the tasks not started start")
    return Next(where.workflow_run(*resume, "--max-cost-usd", f"{more:g}"),
                f"the run spent ${spent:.2f} of its ${limit:.2f} limit: {left}, and the relaunch spends at "
                f"most ${more:.2f} (choose your own amount)")


def harn_command(*words: str) -> str:
    """A ``git harn`` command for an operator to run, quoted as a shell
    would need it (it is printed, never run here)."""
    return "git harn " + shlex.join(words)


def end(tr: TaskEnd, ending: Ending, facts: Facts | None, where: Where | None) -> None:
    """End a task: the only writer of its final status, state, stage, detail,
    fault, fault kind and next step [L1]."""
    if not ending.state.terminal:
        raise IllegalTransition(f"{ending.state.value} is not an end")
    tr.state = ending.state.value
    tr.status = ending.state.reported
    tr.stage = ending.stage
    tr.detail = ending.detail
    tr.fault = ending.fault
    tr.faultKind = ending.faultKind
    tr.next = advice(ending, facts, where).document() if facts is not None and where is not None else None


def track(tr: TaskEnd, now: State, stage: str | None) -> None:
    """A task in flight: where it stands (the record shows it ``running``)."""
    if now.terminal:
        raise IllegalTransition(f"{now.value} is an end: only end() writes it")
    tr.state, tr.status = now.value, now.reported
    if stage is not None:
        tr.stage = stage


def interrupt(tr: TaskEnd, stage: str | None, detail: str) -> None:
    """A task the runner had to leave in flight: interrupted where it stood."""
    end(tr, Ending(State.INTERRUPTED, stage, detail, INTERRUPTED_FAULT), None, None)

