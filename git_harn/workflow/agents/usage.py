"""Tokens and cost of the adapters' agent runs, per task and for the run.

Each claude or codex run reports its usage in its final events (Claude Code
its cost in US dollars too; codex none). A task's ``usage`` sums its stage
runs (reviewers and retries included) and the run's ``usage`` sums its
tasks. ``costUsd`` stays null until some run reported a cost. A task whose
agents are plain commands has no usage (null).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from git_harn.workflow.agents.stages import StageOutcome
from git_harn.workflow.model.result import TaskResult

TOKENS = ("inputTokens", "outputTokens", "cachedInputTokens")


def empty() -> dict[str, Any]:
    return {**dict.fromkeys(TOKENS, 0), "costUsd": None, "runs": 0}


def _add(total: dict[str, Any], usage: dict[str, Any], runs: int) -> None:
    for key in TOKENS:
        total[key] += int(usage.get(key) or 0)
    if usage.get("costUsd") is not None:
        total["costUsd"] = round((total["costUsd"] or 0.0) + float(usage["costUsd"]), 6)
    total["runs"] += runs


def record(tr: TaskResult, outcomes: Iterable[StageOutcome]) -> None:
    """Count the adapter runs among ``outcomes`` into the task's usage and logs."""
    for outcome in outcomes:
        for run in [*outcome.earlierRuns, outcome.agentRun]:  # retried runs first, in order
            if run is None:
                continue
            if tr.usage is None:
                tr.usage = empty()
            _add(tr.usage, run.get("usage") or {}, 1)
            tr.agentLogs.append(str(run["log"]))


def total(tasks: Iterable[TaskResult]) -> dict[str, Any] | None:
    """The run's usage: the sum of its tasks' (None when no task used an adapter)."""
    found = [t.usage for t in tasks if t.usage is not None]
    if not found:
        return None
    summed = empty()
    for usage in found:
        _add(summed, usage, int(usage.get("runs") or 0))
    return summed
