"""What a run spends on its agents, summed as each stage run ends, and its
spending limit (``--max-cost-usd``, ``workflow.maxCostUsd``).

The cost of one agent run is, first found:

1. what the agent reported: Claude Code's ``total_cost_usd``;
2. its tokens at ``[prices.<model>]`` of the workflow configuration (the
   agent's ``model``, else ``[prices.<adapter>]``): dollars per million
   input, cached input and output tokens. codex reports tokens only, and
   counts the cached ones among its input tokens; Claude Code counts them
   apart (``cache_read`` and ``cache_creation`` tokens);
3. unknown: the run is counted as such, never as nothing. A plain command
   agent reports nothing: each of its stage runs is unknown.

Once the sum reaches the limit no agent stage starts: a task between
stages ends there (halted, ``faultKind`` ``budget``, its branch kept as a
survivor), no task starts (skipped, reason ``budget``), the stages already
running finish and are counted (the sum may pass the limit by what they
cost). With ``--hard-limit`` the crossing stops them too, as an
interruption would: their committed work stays, the rest of their stage
is lost; and each claude stage gets ``--max-budget-usd`` no higher than
what is left of the limit as it starts. The host's own stages (gates, the builtin integration) spend
nothing and go on, so work already paid for still lands.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from git_harn.tasks.config import COMMAND_ADAPTER, AgentSettings, Price, Stage

if TYPE_CHECKING:  # what prints a cost loads no run's configuration
    from git_harn.workflow.model.config import Effective

MILLION = 1_000_000
# a task's path: how costs are listed
STAGE_ORDER = (Stage.PLAN, Stage.IMPLEMENT, Stage.ADDENDUM, Stage.REVIEW, Stage.INTEGRATE)


def reported(run: Mapping[str, Any]) -> float | None:
    """The cost an agent run reported itself, or None."""
    cost = (run.get("usage") or {}).get("costUsd")
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0 else None


def priced(run: Mapping[str, Any], price: Price | None) -> float | None:
    """An agent run's tokens at ``price``; None without a price."""
    if price is None:
        return None
    usage = run.get("usage") or {}
    inputs, cached, output = (int(usage.get(k) or 0) for k in ("inputTokens", "cachedInputTokens", "outputTokens"))
    if run.get("adapter") == "codex":  # codex's input tokens include the cached ones
        inputs = max(0, inputs - cached)
    return round((inputs * price.input + cached * price.cached + output * price.output) / MILLION, 6)


def price_key(agent: AgentSettings) -> str:
    """The ``[prices.<key>]`` an agent's tokens are priced at: its model, else its adapter."""
    return agent.model or agent.adapter


def unpriced(agents: Mapping[str, AgentSettings], prices: Mapping[str, Price]) -> list[str]:
    """The stages whose agents' cost will be unknown, and why: what a limit cannot count."""
    found = []
    for stage, agent in sorted(agents.items()):
        if agent.builtin or not agent.command or stage in (Stage.PREFLIGHT, Stage.ASSESS):
            continue
        if agent.adapter == COMMAND_ADAPTER:
            found.append(f"{stage} (a plain command reports no cost)")
        elif agent.adapter != "claude" and price_key(agent) not in prices:
            found.append(f"{stage} ({agent.adapter} reports tokens only and [prices.{price_key(agent)}] is not set)")
    return found


def limit_warning(eff: Effective) -> str | None:
    """What a run's spending limit cannot see, said once as the run starts."""
    if eff.maxCostUsd is None:
        return None
    blind = unpriced(eff.agents, eff.prices)
    if not blind:
        return None
    return (f"spending limit ${eff.maxCostUsd:.2f}: the cost of these stages is unknown and not counted: "
            f"{'; '.join(blind)}")


@dataclass
class Meter:
    """The run's spending: thread-safe, told by every task's worker as its
    stage runs end (``charge``), asked before each agent stage starts."""

    limit: float | None
    agents: dict[str, AgentSettings]
    prices: dict[str, Price] = field(default_factory=dict)
    hard: bool = False
    on_reached: Callable[[], None] | None = None  # called once, by the thread whose charge crossed the limit
    spent: float = 0.0
    runs: int = 0  # agent runs whose cost is known
    unknown: int = 0  # agent runs (or plain command stage runs) whose cost is not
    crossing: dict[str, Any] | None = None  # the charge that reached the limit
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cost_of(self, stage: str, run: Mapping[str, Any]) -> float | None:
        """One adapter run of ``stage``: reported, else priced, else None (unknown)."""
        cost = reported(run)
        if cost is not None:
            return cost
        agent = self.agents.get(stage)
        return priced(run, self.prices.get(price_key(agent))) if agent is not None else None

    def charge(self, key: str, stage: str, costs: list[float | None]) -> None:
        """A stage of task ``key`` ended: its runs' costs (None: unknown). A
        stage of a plain command agent has no adapter run: one unknown."""
        if not costs and self._reports_nothing(stage):
            costs = [None]
        crossed = False
        with self._lock:
            for cost in costs:
                if cost is None:
                    self.unknown += 1
                    continue
                self.runs += 1
                self.spent = round(self.spent + cost, 6)
            if self.limit is not None and self.crossing is None and self.spent >= self.limit:
                self.crossing = {"taskId": key, "stage": stage, "spentUsd": self.spent}
                crossed = True
        if crossed and self.on_reached is not None:
            self.on_reached()

    def bound(self, agent: AgentSettings) -> AgentSettings:
        """A claude agent under a hard limit: its session may spend at most
        what is left of the limit as the stage starts (its own
        ``--max-budget-usd``, which Claude Code keeps), so that a stage
        running at the crossing cannot spend far past it."""
        if not self.hard or self.limit is None or agent.adapter != "claude":
            return agent
        with self._lock:
            left = max(0.01, round(self.limit - self.spent, 2))
        if agent.maxBudgetUsd is not None and agent.maxBudgetUsd <= left:
            return agent
        return replace(agent, maxBudgetUsd=left)

    def _reports_nothing(self, stage: str) -> bool:
        agent = self.agents.get(stage)
        return agent is not None and not agent.builtin and agent.adapter == COMMAND_ADAPTER

    def reached(self) -> bool:
        return self.crossing is not None

    def stops(self, stage: str) -> bool:
        """Whether ``stage`` may not start now: the limit is reached and it
        runs an agent (gates and the builtin integration spend nothing)."""
        agent = self.agents.get(stage)
        return self.reached() and agent is not None and not agent.builtin

    def shown(self) -> dict[str, Any] | None:
        """The run's ``spending`` member (None: no limit was set)."""
        if self.limit is None:
            return None
        with self._lock:
            return {"limitUsd": self.limit, "spentUsd": self.spent, "hard": self.hard, "runs": self.runs,
                    "unknownRuns": self.unknown, "reached": dict(self.crossing) if self.crossing else None}

    def halt_line(self, skipped: int, halted: int) -> str | None:
        """The run's halt, once the limit was reached."""
        if self.crossing is None or self.limit is None:
            return None
        unknown = f"; {self.unknown} stage run(s) reported no cost and are not counted" if self.unknown else ""
        return (f"spending limit reached: ${self.spent:.2f} spent of ${self.limit:.2f} (at "
                f"{self.crossing['stage']} of task {self.crossing['taskId']}){unknown}; stopped starting stages "
                f"({halted} task(s) halted with their work kept, {skipped} not started)")


# --- as show, list and the page print it ---------------------------------------------


def cost_text(usage: Mapping[str, Any] | None) -> str:
    """A measured cost, marked where it is unknown: ``$1.23``, ``$1.23 + 2 runs
    unknown``, ``unknown`` (no run's cost is known, or no agent reported any usage)."""
    if not usage:
        return "unknown"
    cost, unknown = usage.get("costUsd"), int(usage.get("unknownRuns") or 0)
    if not isinstance(cost, (int, float)):
        return "unknown"
    return f"${cost:.2f}" + (f" + {unknown} run{'s' if unknown != 1 else ''} unknown" if unknown else "")


def stage_costs(usage: Mapping[str, Any] | None) -> str:
    """Cost by stage: ``plan $1.00, implement $1.00, review $0.91``; empty without usage."""
    stages = (usage or {}).get("stages") or {}
    order = sorted(stages, key=lambda s: (STAGE_ORDER.index(s) if s in STAGE_ORDER else len(STAGE_ORDER), s))
    return ", ".join(f"{stage} {cost_text(stages[stage])}" for stage in order if isinstance(stages[stage], dict))


def spending_text(spending: Mapping[str, Any] | None) -> str | None:
    """The run's spending against its limit, or None without a limit."""
    if not spending:
        return None
    reached = spending.get("reached")
    where = f", reached at {reached['stage']} of task {reached['taskId']}" if reached else ""
    unknown = int(spending.get("unknownRuns") or 0)
    return (f"spent ${float(spending['spentUsd']):.2f} of the ${float(spending['limitUsd']):.2f} limit"
            f"{' (hard)' if spending.get('hard') else ''}{where}"
            + (f"; {unknown} stage run(s) of unknown cost not counted" if unknown else ""))
