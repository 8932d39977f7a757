"""Circuit breakers: faults that say "the rest will fail the same way" stop
new starts instead of failing the rest of the roadmap one task at a time.

- **auth**: the first task that ends with an auth fault stops the run from
  starting tasks; the ones running finish, the rest are skipped with reason
  ``auth-fault-halt``, and the run ends halted, naming the fault and the
  auth preflight that would have stopped the run before anything started.
- **tamper**: the first task that ends with a tamper fault (a stage changed
  what the host obeys [T2], or its branch moved after its verdict [T4])
  stops new starts as an auth fault does, with reason ``tamper-halt``; the
  run ends halted, naming each change (undone) and where its evidence is.
- **provider**: a provider fault that names a reset time (``resetAt`` of a
  fault report, or the adapter's reading of the CLI) stops new starts of
  tasks that use that agent until then. With ``--wait-for-provider[=<max>]``
  the run waits for the reset (when it is at most ``max`` away), saying so,
  and an interruption stops the wait as it stops the run; then it goes on.
  Without it, or beyond ``max``, those tasks are skipped with reason
  ``provider-fault-halt`` and the run says when to relaunch.

- **budget**: once the run's spending limit is reached (``agents.spend``),
  no agent stage starts: tasks between stages halt (kept as survivors),
  the rest are skipped with reason ``budget``, and the run ends halted with
  what it spent and the relaunch that goes on (``state.budget_advice``).

An agent is known by its adapter (``claude``, ``codex``), else by the name of
its executable: stages that run the same CLI share one account's limits.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_harn.clock import epoch_of, iso_of
from git_harn.errors import BadInput, HarnError
from git_harn.files import loads_json, read_private
from git_harn.tasks.config import COMMAND_ADAPTER, AgentSettings
from git_harn.text import one_line
from git_harn.workflow.agents.spend import Meter
from git_harn.workflow.agents.stages import Agents
from git_harn.workflow.model.config import Effective
from git_harn.workflow.model.result import TaskResult
from git_harn.workflow.model.state import BUDGET, PROVIDER, Next, SkipReason, State, Where, budget_advice, halt_advice

DEFAULT_WAIT = 6 * 3600.0  # --wait-for-provider without a value: a usage window is at most a few hours
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smh]?)")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600}
PROGRESS_EVERY = 60.0  # seconds between the lines of a wait
REPORT_LIMIT = 1 << 20  # a stage report is at most 1 MiB (stages.MAX_REPORT_BYTES)


def parse_wait(text: str | None) -> float | None:
    """``--wait-for-provider`` ("": ``DEFAULT_WAIT``) or ``=<max>``: seconds,
    or with ``s``, ``m``, ``h``; None when not given."""
    if text is None:
        return None
    if not text.strip():
        return DEFAULT_WAIT
    found = _DURATION.fullmatch(text.strip())
    if found is None or float(found.group(1)) <= 0:
        raise BadInput(f"--wait-for-provider: {text!r} is not a duration (like 900, 30m or 5h)")
    return float(found.group(1)) * _UNIT[found.group(2)]


def agent_key(agent: AgentSettings) -> str | None:
    if not agent.command:
        return None  # builtin (git-harn's own), or [agents.preflight] with checks only: no provider
    return agent.adapter if agent.adapter != COMMAND_ADAPTER else Path(agent.command[0]).name


@dataclass
class Limit:
    agent: str
    until: float
    taskId: str


@dataclass
class Breakers:
    """The breakers of one run; the scheduler asks them before each start."""

    agents: dict[str, AgentSettings]
    wait_max: float | None = None
    auth: dict[str, Any] | None = None
    tamper: dict[str, Any] | None = None
    limits: dict[str, Limit] = field(default_factory=dict)
    waits: list[dict[str, Any]] = field(default_factory=list)
    gave_up: Limit | None = None
    _waiting: Limit | None = None
    _since: float = 0.0
    _said: float = 0.0
    meter: Meter | None = None  # the run's spending and its limit
    budget_halted: int = 0  # tasks the limit halted between stages (or in one, --hard-limit)
    on_wait: Callable[[Limit], None] | None = None  # told once as each wait for a provider begins

    # --- tripping ------------------------------------------------------------------

    def task_ended(self, tr: TaskResult, scratch: Path) -> None:
        if tr.faultKind == BUDGET:
            self.budget_halted += 1
        if is_tamper_fault(tr) and self.tamper is None:
            self.tamper = {"taskId": tr.key, "stage": tr.stage, "detail": one_line(tr.detail, 1500)}
        if is_auth_fault(tr) and self.auth is None:
            self.auth = {"taskId": tr.key, "stage": tr.stage, "detail": one_line(tr.detail, 300),
                         "agent": self._agent_of(tr.stage)}
        if is_provider_fault(tr):
            until = _reset_of(tr, scratch)
            key = self._agent_of(tr.stage)
            if until is not None and key is not None and until > time.time():
                known = self.limits.get(key)
                if known is None or until > known.until:
                    self.limits[key] = Limit(key, until, tr.key)

    def tamper_found(self, key: str, blamed: list[str], detail: str) -> None:
        """A change the seal found and blamed on no task still running (one
        that had ended, or none): new starts stop all the same [T2]."""
        if self.tamper is None:
            stage = blamed[0].split(" ", 1)[1] if blamed and " " in blamed[0] else None
            self.tamper = {"taskId": key or None, "stage": stage, "detail": one_line(detail, 1500)}

    def _agent_of(self, stage: str | None) -> str | None:
        agent = self.agents.get(stage or "")
        return agent_key(agent) if agent is not None else None

    # --- asking -------------------------------------------------------------------

    def halted(self) -> SkipReason | None:
        """The skip reason of every task not started from now on, or None."""
        if self.tamper is not None:
            return SkipReason.TAMPER_HALT
        if self.auth is not None:
            return SkipReason.AUTH_FAULT_HALT
        if self.meter is not None and self.meter.reached():
            return SkipReason.BUDGET_HALT
        return SkipReason.PROVIDER_FAULT_HALT if self.gave_up is not None else None

    def advice(self, where: Where) -> Next:
        """The run's next step once it stopped starting tasks."""
        reason = self.halted()
        if reason is SkipReason.BUDGET_HALT and self.meter is not None and self.meter.limit is not None:
            return budget_advice(self.meter.limit, self.meter.spent, where, self.budget_halted > 0)
        return halt_advice(reason, where, self.wait_needed())

    def wait_needed(self) -> float | None:
        """Seconds until the limit the run gave up on is reached, if any."""
        return max(0.0, self.gave_up.until - time.time()) if self.gave_up is not None else None

    def blocking(self) -> Limit | None:
        """The limit that keeps a task from starting now (the latest of those
        of the agents a task uses), else None."""
        now = time.time()
        used = {agent_key(a) for a in self.agents.values()}
        found = [lim for key, lim in self.limits.items() if key in used and lim.until > now]
        return max(found, key=lambda lim: lim.until) if found else None

    def may_wait(self, limit: Limit) -> bool:
        if self.wait_max is None or limit.until - time.time() > self.wait_max:
            self.gave_up = limit
            return False
        return True

    def waiting(self, limit: Limit, say: Any) -> None:
        """Called while the run holds its starts for ``limit``: a line now and
        then, so an overnight run shows why it is idle."""
        now = time.time()
        if self._waiting is not limit:
            self._waiting, self._since, self._said = limit, now, 0.0
            self.waits.append({"agent": limit.agent, "until": iso_of(limit.until), "since": iso_of(now),
                               "taskId": limit.taskId, "waitedSeconds": 0})
            if self.on_wait is not None:
                self.on_wait(limit)
        self.waits[-1]["waitedSeconds"] = round(now - self._since)
        if now - self._said >= PROGRESS_EVERY:
            self._said = now
            left = max(0, int(limit.until - now))
            say(f"waiting for the provider of {limit.agent} until {iso_of(limit.until)} "
                f"({left // 60} min {left % 60} s left; Ctrl-C stops the run)")

    # --- the end -------------------------------------------------------------------

    def halt_line(self, remote: str, base: str, skipped: int) -> str | None:
        if self.tamper is not None:
            where = (f"at {self.tamper['stage'] or 'its end'} of task {self.tamper['taskId']}"
                     if self.tamper["taskId"] else "between stages")
            return (f"tamper fault {where}: {self.tamper['detail']}; stopped starting tasks "
                    f"({skipped} not started)")
        if self.auth is not None:
            return (f"auth fault at {self.auth['stage']} of task {self.auth['taskId']}: {self.auth['detail']}; "
                    f"stopped starting tasks ({skipped} not started); add an auth preflight to "
                    f".harn/workflow.toml so that a run without credentials starts nothing: "
                    f"{preflight_line(remote, base)}")
        if self.meter is not None and self.meter.reached():
            # reached by the last stage the run wanted, the limit stopped nothing: the run finished, and
            # a relaunch for "the tasks not started" would be advice with nothing to do [L4] [C1]
            stopped = skipped > 0 or self.budget_halted > 0
            return self.meter.halt_line(skipped, self.budget_halted) if stopped else None
        if self.gave_up is not None:
            when = iso_of(self.gave_up.until)
            return (f"the provider of {self.gave_up.agent} is limited until {when} (a provider fault of task "
                    f"{self.gave_up.taskId}): {skipped} task(s) not started; relaunch after {when}, or with "
                    "--wait-for-provider to wait for it")
        return None

    def shown(self) -> dict[str, Any] | None:
        spending = self.meter.shown() if self.meter is not None else None
        if self.auth is None and self.tamper is None and not self.limits and not self.waits and spending is None:
            return None
        return {"auth": self.auth, "tamper": self.tamper, "spending": spending,
                "providerLimits": [{"agent": lim.agent, "until": iso_of(lim.until), "taskId": lim.taskId}
                                   for lim in self.limits.values()],
                "waits": list(self.waits), "waitForProvider": self.wait_max,
                "gaveUp": self.gave_up.agent if self.gave_up is not None else None}


def meter_for(eff: Effective, agents: Agents, grace: float) -> Meter:
    """The run's meter, on its agents (each stage tells it what it cost);
    with ``--hard-limit`` its crossing stops every agent still running."""
    meter = Meter(eff.maxCostUsd, dict(eff.agents), dict(eff.prices), eff.hardLimit)
    if eff.hardLimit:
        meter.on_reached = lambda: agents.stop_for(BUDGET, grace)
    agents.meter = meter
    return meter


def preflight_line(remote: str, base: str) -> str:
    # ``git-harn`` is what ``git harn`` runs: the preflight is an argv, never a shell
    command = ["git-harn", "workflow", "check", "--live", "--remote", remote, "--base", base]
    return f"[agents.preflight] command = {json.dumps(command)}"


def is_auth_fault(tr: TaskResult) -> bool:
    return State.of(tr).counts_as_auth_fault


def is_tamper_fault(tr: TaskResult) -> bool:
    return State.of(tr) is State.TAMPER_FAULT


def is_provider_fault(tr: TaskResult) -> bool:
    return State.of(tr).fault == PROVIDER


def _reset_of(tr: TaskResult, scratch: Path) -> float | None:
    """The reset time the fault named: the stage's fault report (kept in the
    run folder), whose ``resetAt`` an adapter fills from the CLI's words."""
    stage = tr.stage or ""
    found: list[float] = []
    for report in sorted(scratch.glob(f"{tr.taskId}-{stage}-*.report.json")):
        try:  # an agent's file in a folder it can write: never read through its links [P5]
            document = loads_json(read_private(report, REPORT_LIMIT))
        except (OSError, ValueError, HarnError):
            continue
        fault = document.get("fault") if isinstance(document, dict) else None
        when = epoch_of(fault.get("resetAt")) if isinstance(fault, dict) else None
        if when is not None:
            found.append(when)
    return max(found) if found else None
