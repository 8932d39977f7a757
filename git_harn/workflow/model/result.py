"""The run result (``schemas/workflow-result.schema.json``): what ``workflow
run --json`` prints and what the workflow record holds.

Later work adds members (fault classes, assessments, salvages, recovery);
every consumer reads by name, so adding one changes nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from git_harn.results import Result
from git_harn.tasks.roadmap import Unparsed, work_key
from git_harn.text import jsonable
from git_harn.workflow.model.state import STATUSES, State, suppression

# workflow outcomes (exit codes in errors.EXIT_FOR_OUTCOME)
ALL_DONE = "workflow-done"
INCOMPLETE = "workflow-incomplete"
DRY_RUN = "workflow-dry-run"
INTERRUPTED = "workflow-interrupted"
IN_PROGRESS = "workflow-running"
BLOCKED_RUN = "workflow-blocked"  # e.g. the auth preflight failed: nothing started


def zero_fault_metrics() -> dict[str, int]:
    return {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0, "configFaults": 0,
            "tamperFaults": 0}


@dataclass
class Skipped:
    taskId: str
    reason: str
    detail: str = ""
    addendum: int | None = None  # set when the skipped work is addendum <n> of the task

    @property
    def key(self) -> str:
        return work_key(self.taskId, self.addendum)


@dataclass
class TaskResult:
    taskId: str
    title: str
    branch: str
    runId: str | None
    status: str = State.PENDING.reported  # what the result schema names (State.reported)
    stage: str | None = None
    detail: str = ""
    attempts: dict[str, int] = field(default_factory=dict)
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage -> last report summary
    review: dict[str, Any] | None = None
    gates: dict[str, Any] | None = None
    integration: dict[str, Any] | None = None
    tip: str | None = None
    judged: str | None = None  # the commit the gates and both reviewers passed: the only one integration lands [T4]
    integratedRef: str | None = None
    workspace: dict[str, Any] | None = None  # what cleanup did: state, reason
    fault: str | None = None  # the fault class that ended the task: infra, provider, auth, interrupted
    faultKind: str | None = None  # what was seen: timeout, crash, invalid-report, exit-75, exit-77, fault-report
    infraRetries: int = 0  # in-place retries of this task's stages after infra faults
    assessment: dict[str, Any] | None = None  # the surviving branch judged (schemas/assessment.schema.json)
    salvage: dict[str, Any] | None = None  # artefact salvage: classification, committed, skipped, sha, detail
    baseOid: str | None = None
    startedAt: str | None = None
    finishedAt: str | None = None
    usage: dict[str, Any] | None = None  # tokens and cost of its claude/codex agent runs
    agentLogs: list[str] = field(default_factory=list)  # event logs of those runs, in order
    addendum: int | None = None  # addendum <n> of the task, on roadmap-<id>-addendum-<n>
    state: str = State.PENDING.value  # the lifecycle state (workflow/model/state.py); ``status`` is what it reports
    next: dict[str, Any] | None = None  # the one next step: {"command", "why"} (state.advice)
    # every stage attempt, review round and wait, with its start, end and outcome (pipeline.Attempts)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    # workflow.land = pull-request: the request its squash waits in {forge, url, number, head, branch, state} [F1]
    proposal: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return State.of(self).terminal

    @property
    def key(self) -> str:
        """``<id>``, or ``<id>-addendum-<n>``: what names this work in a run."""
        return work_key(self.taskId, self.addendum)


@dataclass
class WorkflowResult(Result):
    SCHEMA: ClassVar[str] = "workflow-result"

    workflowId: str
    base: str
    remote: str
    baseOid: str
    dryRun: bool
    startedAt: str
    finishedAt: str | None = None
    selected: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    unparsed: list[Unparsed] = field(default_factory=list)  # checkbox lines of the roadmap that are no task
    tasks: list[TaskResult] = field(default_factory=list)
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    faultMetrics: dict[str, int] = field(default_factory=zero_fault_metrics)
    claims: dict[str, Any] | None = None  # claims made, lost, released, refreshed (workflow.claims)
    recovery: dict[str, Any] | None = None  # resumePartialBranches: the recovery pass [R8]
    assessments: list[dict[str, Any]] = field(default_factory=list)  # one per assessed task
    salvages: list[dict[str, Any]] = field(default_factory=list)  # one per task where salvage ran or skipped
    remediation: dict[str, Any] | None = None  # triage and the final flush (workflow/after/remediation.py)
    summary: str = ""
    halted: str | None = None
    interrupted: bool = False
    finished: bool = False
    usage: dict[str, Any] | None = None  # the tasks' usage summed
    blocked: str | None = None  # "auth-preflight-failed": the run started nothing
    preflight: dict[str, Any] | None = None  # what [agents.preflight] said
    # the runner's lease and liveness (workflow/ledger/record.py, workflow/after/settle.py) [L2] [L3]
    runner: dict[str, Any] | None = None  # host, clone, pid, process start, group, heartbeatAt
    settled: list[dict[str, Any]] = field(default_factory=list)  # dead runs settled before selection
    # the proposals of earlier runs, as this run reconciled them before it selected [F2]
    proposals: list[dict[str, Any]] = field(default_factory=list)
    closed: dict[str, Any] | None = None  # set when another process closed a dead runner's record
    breakers: dict[str, Any] | None = None  # circuit breakers: the auth halt, provider limits and waits
    next: dict[str, Any] | None = None  # the run's own next step when it halted before any task (state.Next)
    waits: list[dict[str, Any]] = field(default_factory=list)  # the run's own waits (its final flush's merge lock)
    # tasks not started that wait for tasks they require, as the runner sees them now: {taskId, requires};
    # empty once the run ends (those left are in ``skipped``). What ``workflow watch`` says it waits for.
    waiting: list[dict[str, str]] = field(default_factory=list)
    baseOidAfter: str | None = None  # the base's tip on the remote when the run finished
    remoteUrl: str | None = None  # the remote's URL at the start (no credentials): doctor compares [T1]

    @property
    def outcome(self) -> str:
        if self.dryRun:
            return DRY_RUN
        if self.blocked is not None:
            return BLOCKED_RUN
        if self.interrupted:
            return INTERRUPTED
        if not self.finished:
            return IN_PROGRESS
        if self.recovery and self.recovery.get("unresolved"):
            return INCOMPLETE  # halted: needs-operator-recovery, never a clean stop
        if self.halted is not None:
            return INCOMPLETE  # e.g. the roadmap became bad input: what it holds was not run
        return ALL_DONE if all(State.of(t).delivered for t in self.tasks) else INCOMPLETE

    @property
    def remediationSuppressed(self) -> bool:
        """The final remediation flush writes no roadmap work: the one rule
        the flush asks too (state.suppression)."""
        return suppression((State.of(t) for t in self.tasks), self.interrupted, self.blocked,
                           self.faultMetrics) is not None

    def task(self, task_id: str) -> TaskResult | None:
        return next((t for t in self.tasks if t.taskId == task_id), None)

    def make_summary(self) -> str:
        count = len(self.tasks)
        noun = "task" if count == 1 else "tasks"
        if not count:
            return "0 tasks: nothing selectable"
        shown = [t.status for t in self.tasks]  # the reported status, as the schema names it
        parts = [f"{shown.count(s)} {s}" for s in STATUSES if s in shown]
        salvaged = sum(1 for t in self.tasks if t.salvage is not None and t.salvage.get("committed"))
        suffix = f" | salvaged artefacts on {salvaged} branch(es)" if salvaged else ""
        return f"{count} {noun}: " + ", ".join(parts) + suffix

    def document(self) -> dict[str, Any]:
        body = super().document()
        body["outcome"] = self.outcome
        body["remediationSuppressed"] = self.remediationSuppressed
        return body

    def head(self) -> dict[str, Any]:
        """``document()`` without its tasks: what the record keeps beside
        them, built without walking them (workflow/ledger/journal.py)."""
        body: dict[str, Any] = {"schemaVersion": self.SCHEMA_VERSION}
        body.update((f.name, jsonable(getattr(self, f.name))) for f in fields(self)
                    if f.name not in ("tasks", "schemaVersion"))
        body["outcome"] = self.outcome
        body["remediationSuppressed"] = self.remediationSuppressed
        return body


@dataclass
class StoredWorkflow(Result):
    """A workflow record as stored, for ``workflow show`` (exit 0: it was found)."""

    SCHEMA: ClassVar[str] = "workflow-result"

    body: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return "ok"

    def document(self) -> dict[str, Any]:
        return self.body


@dataclass
class WorkflowList(Result):
    SCHEMA: ClassVar[str] = "workflow-list"

    workflows: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)  # every proposal, as reconciled now [F2]

    @property
    def outcome(self) -> str:
        return "ok"


@dataclass
class InitResult(Result):
    SCHEMA: ClassVar[str] = "workflow-init"

    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return "ok"
