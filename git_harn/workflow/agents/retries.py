"""In-place retries of a stage agent [R2].

Two loops, one inside the other, both in the same worktree:

- **schema retries**: a run that exits 0 without a valid report is run
  again, up to ``schemaRetries`` times, with the validation error in its
  stdin JSON (``schemaError``) and in ``HARN_SCHEMA_ERROR``. When the report
  stays invalid, that is an infra fault.
- **infra retries**: an infra fault (time-out, a process that died, schema
  retries exhausted) carries no evidence about the task branch, so the stage
  runs again, up to ``stageAttempts`` attempts in all. Each retry is counted
  in the task's ``infraRetries``.

Provider and auth faults, interruptions and valid reports end both loops at
once. The integration stage never comes here: it is never retried [I4].
"""

from __future__ import annotations

from typing import Any

from git_harn.tasks.config import AgentSettings
from git_harn.workflow.agents.stages import INVALID_REPORT, StageOutcome, TaskContext, run_stage
from git_harn.workflow.model.state import INFRA


def run_in_place(ctx: TaskContext, agent: AgentSettings, attempt: int, timeout: float,
                 extra: dict[str, Any] | None = None, reviewer: int | None = None) -> StageOutcome:
    """Run a stage agent until it gives a verdict or a fault that is not
    infra, or its attempts run out; the outcome of the last run."""
    tries = max(1, ctx.stage_attempts)
    outcome = _with_schema_retries(ctx, agent, attempt, timeout, extra or {}, reviewer, "")
    for number in range(2, tries + 1):
        if outcome.fault != INFRA or ctx.agents.stop.is_set():
            break
        following = ctx.on_retry(agent.stage, reviewer, outcome.faultKind) if ctx.on_retry is not None else None
        label = f"-try{number}" if following is None or following == attempt else ""
        attempt = following or attempt
        outcome = _carry(outcome, _with_schema_retries(ctx, agent, attempt, timeout, extra or {}, reviewer, label))
        outcome.tries = number
    return outcome


def _with_schema_retries(ctx: TaskContext, agent: AgentSettings, attempt: int, timeout: float,
                         extra: dict[str, Any], reviewer: int | None, label: str) -> StageOutcome:
    outcome = run_stage(ctx, agent, attempt, timeout, extra, reviewer, label)
    for retry in range(1, ctx.schema_retries + 1):
        if outcome.faultKind != INVALID_REPORT or ctx.agents.stop.is_set():
            return outcome
        error = outcome.detail
        outcome = _carry(outcome, run_stage(ctx, agent, attempt, timeout, {**extra, "schemaError": error},
                                            reviewer, f"{label}-schema{retry}"))
        outcome.schemaRetries = retry
    if outcome.faultKind == INVALID_REPORT and ctx.schema_retries:
        outcome.detail += f" (still after {ctx.schema_retries} schema retries with the error)"
    return outcome


def _carry(before: StageOutcome, after: StageOutcome) -> StageOutcome:
    """``after`` replaces ``before``; the adapter runs before it still count
    (their usage and event logs are the task's too)."""
    own = [before.agentRun] if before.agentRun is not None else []
    after.earlierRuns = [*before.earlierRuns, *own, *after.earlierRuns]
    faulted = [before.fault_entry()] if before.fault is not None else []
    after.earlierFaults = [*before.earlierFaults, *faulted, *after.earlierFaults]
    return after
