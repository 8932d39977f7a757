"""The run result (``schemas/workflow-result.schema.json``): what ``workflow
run --json`` prints and what the workflow record holds.

Later work adds members (fault classes, assessments, salvages, recovery);
every consumer reads by name, so adding one changes nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from git_harn.results import Result

# task status
PENDING = "pending"
RUNNING = "running"
DONE = "done"
FAILED = "failed"
BLOCKED = "blocked"
HALTED = "halted"
PLANNED = "planned"
MANUAL_MERGE_READY = "manual-merge-ready"  # an addendum whose agent did all but say ok (seed 002)
FINISHED = (DONE, FAILED, BLOCKED, HALTED, MANUAL_MERGE_READY)

# skip reasons
SURVIVING_BRANCH = "surviving-branch"
MAX_TASKS = "max-tasks"
WAITING = "waiting-for-requirements"

# workflow outcomes (exit codes in errors.EXIT_FOR_OUTCOME)
ALL_DONE = "workflow-done"
INCOMPLETE = "workflow-incomplete"
DRY_RUN = "workflow-dry-run"
INTERRUPTED = "workflow-interrupted"
IN_PROGRESS = "workflow-running"


def zero_fault_metrics() -> dict[str, int]:
    return {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0}


@dataclass
class Skipped:
    taskId: str
    reason: str
    detail: str = ""
    addendum: int | None = None  # set when the skipped work is addendum <n> of the task

    @property
    def key(self) -> str:
        return self.taskId if self.addendum is None else f"{self.taskId}-addendum-{self.addendum}"


@dataclass
class TaskResult:
    taskId: str
    title: str
    branch: str
    runId: str | None
    status: str = PENDING
    stage: str | None = None
    detail: str = ""
    attempts: dict[str, int] = field(default_factory=dict)
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage -> last report summary
    review: dict[str, Any] | None = None
    gates: dict[str, Any] | None = None
    integration: dict[str, Any] | None = None
    tip: str | None = None
    integratedRef: str | None = None
    workspace: dict[str, Any] | None = None  # what cleanup did: state, reason
    fault: str | None = None  # the class of an infrastructure fault (timeout, crash, invalid-report)
    baseOid: str | None = None
    startedAt: str | None = None
    finishedAt: str | None = None
    addendum: int | None = None  # addendum <n> of the task, on roadmap-<id>-addendum-<n>

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def key(self) -> str:
        """``<id>``, or ``<id>-addendum-<n>``: what names this work in a run."""
        return self.taskId if self.addendum is None else f"{self.taskId}-addendum-{self.addendum}"


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
    tasks: list[TaskResult] = field(default_factory=list)
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    faultMetrics: dict[str, int] = field(default_factory=zero_fault_metrics)
    remediation: dict[str, Any] | None = None  # triage and the final flush (workflow/remediation.py)
    summary: str = ""
    halted: str | None = None
    interrupted: bool = False
    finished: bool = False

    @property
    def outcome(self) -> str:
        if self.dryRun:
            return DRY_RUN
        if self.interrupted:
            return INTERRUPTED
        if not self.finished:
            return IN_PROGRESS
        return ALL_DONE if all(t.status == DONE for t in self.tasks) else INCOMPLETE

    def task(self, task_id: str) -> TaskResult | None:
        return next((t for t in self.tasks if t.taskId == task_id), None)

    def make_summary(self) -> str:
        count = len(self.tasks)
        noun = "task" if count == 1 else "tasks"
        if not count:
            return "0 tasks: nothing selectable"
        order = [DONE, FAILED, BLOCKED, HALTED, MANUAL_MERGE_READY, PLANNED, RUNNING, PENDING]
        parts = [f"{sum(t.status == s for t in self.tasks)} {s}" for s in order
                 if any(t.status == s for t in self.tasks)]
        return f"{count} {noun}: " + ", ".join(parts)

    def document(self) -> dict[str, Any]:
        body = super().document()
        body["outcome"] = self.outcome
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
