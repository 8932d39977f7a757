"""Tokens and cost of the adapters' agent runs, per task and for the run.

Each claude or codex run reports its usage in its final events (Claude Code
its cost in US dollars too; codex none). A task's ``usage`` sums its stage
runs (reviewers and retries included) and the run's ``usage`` sums its
tasks. ``costUsd`` stays null until some run's cost is known (reported,
or priced: ``spend``); ``unknownRuns`` counts the runs whose cost is not,
and ``stages`` splits cost and runs by stage. A task whose agents are plain
commands has no usage (null): its cost is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from git_harn.workflow.agents import spend
from git_harn.workflow.agents.stages import StageOutcome
from git_harn.workflow.model.result import TaskResult

TOKENS = ("inputTokens", "outputTokens", "cachedInputTokens")


def empty() -> dict[str, Any]:
    return {**dict.fromkeys(TOKENS, 0), "costUsd": None, "runs": 0, "unknownRuns": 0, "stages": {}}


def _cost(total: dict[str, Any], cost: float | None) -> None:
    if cost is not None:
        total["costUsd"] = round((total["costUsd"] or 0.0) + float(cost), 6)


def _add(total: dict[str, Any], usage: dict[str, Any], runs: int) -> None:
    """Add a summed usage (a task's, into the run's)."""
    for key in TOKENS:
        total[key] += int(usage.get(key) or 0)
    _cost(total, usage.get("costUsd"))
    total["runs"] += runs
    total["unknownRuns"] += int(usage.get("unknownRuns") or 0)
    for stage, part in (usage.get("stages") or {}).items():
        mine = total["stages"].setdefault(stage, {"costUsd": None, "runs": 0, "unknownRuns": 0})
        _cost(mine, part.get("costUsd"))
        mine["runs"] += int(part.get("runs") or 0)
        mine["unknownRuns"] += int(part.get("unknownRuns") or 0)


def _add_run(total: dict[str, Any], stage: str, usage: dict[str, Any], cost: float | None) -> None:
    """Add one agent run of ``stage`` whose cost is ``cost`` (None: unknown)."""
    for key in TOKENS:
        total[key] += int(usage.get(key) or 0)
    total["runs"] += 1
    part = total["stages"].setdefault(stage, {"costUsd": None, "runs": 0, "unknownRuns": 0})
    part["runs"] += 1
    for counted in (total, part):
        _cost(counted, cost)
        counted["unknownRuns"] += cost is None


def record(tr: TaskResult, outcomes: Iterable[StageOutcome], meter: spend.Meter | None = None) -> None:
    """Count the adapter runs among ``outcomes`` into the task's usage and
    logs, each at its cost (``meter``: reported or priced), and tell the
    run's meter what the stage cost as it ends."""
    for outcome in outcomes:
        costs: list[float | None] = []
        for run in [*outcome.earlierRuns, outcome.agentRun]:  # retried runs first, in order
            if run is None:
                continue
            if tr.usage is None:
                tr.usage = empty()
            cost = meter.cost_of(outcome.stage, run) if meter is not None else spend.reported(run)
            _add_run(tr.usage, outcome.stage, run.get("usage") or {}, cost)
            tr.agentLogs.append(str(run["log"]))
            costs.append(cost)
        if meter is not None:
            meter.charge(tr.key, outcome.stage, costs)


def total(tasks: Iterable[TaskResult]) -> dict[str, Any] | None:
    """The run's usage: the sum of its tasks' (None when no task used an adapter)."""
    found = [t.usage for t in tasks if t.usage is not None]
    if not found:
        return None
    summed = empty()
    for usage in found:
        _add(summed, usage, int(usage.get("runs") or 0))
    return summed
