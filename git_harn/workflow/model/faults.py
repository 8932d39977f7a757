"""Fault classes and what each does to a task [R2].

The host decides the class from what it sees (``stages.judge``): *infra*
when the agent's process timed out, died, or never wrote a valid report;
*provider* for exit 75 or a fault report of class provider; *auth* for
exit 77 or class auth; *config* for exit 78, class config, or an
executable that cannot be started. A valid report that says the work
failed is a product failure, not a fault.

- infra: the stage is retried in place (``retries``); a fault that persists
  ends the task ``infra-fault``.
- provider, auth: the task ends ``provider-fault`` / ``auth-fault`` at
  once; such a run suppresses the final remediation flush.
- config: the agent refused its own command line or setup (an unknown
  flag, root without ``IS_SANDBOX=1``, no such executable), which it would
  do again: the task ends ``config-fault`` at once, after one attempt, with
  the agent's own message; it is not assessed. It does not suppress the
  remediation flush: the other tasks' findings are still theirs.
- tamper: the stage changed what the host obeys (the shared git config and
  its includes, hooks, info, worktree admin files, a ref that is not the
  task's own) or its branch moved after its verdict [T2] [T4]: the change is
  undone, the tampered copies kept as evidence (an integration agent that
  put on the base what nobody judged, ``unjudged-landing``, cannot be
  undone: the detail names the commits to inspect), the task ends
  ``tamper-fault`` at once, is never retried nor assessed, and no task
  starts after it (``breakers``).
- integration: a fault there is never retried, whatever its class [I4];
  the detail says to inspect ``<remote>/<base>`` and the roadmap first.

Which end each class leads to is ``state.ending_for``; what to do next is
``state.advice``, from the facts at the end, so no detail here names a
command.

``faultMetrics`` counts the retries taken and the terminal faults per class.
"""

from __future__ import annotations

from collections.abc import Iterable

from git_harn.workflow.model.result import TaskResult, zero_fault_metrics
from git_harn.workflow.model.state import AUTH, CONFIG, INFRA, PROVIDER, TAMPER

METRIC_FOR = {INFRA: "infraFaults", PROVIDER: "providerFaults", AUTH: "authFaults", CONFIG: "configFaults",
             TAMPER: "tamperFaults"}


def halt_detail(stage: str, fault: str, detail: str, attempts: int) -> str:
    """The detail of a task a fault ended: what was seen (the next step is
    the task's ``next``, from the facts at its end)."""
    if fault == INFRA:
        return f"infra fault at {stage} after {attempts} attempt(s): {detail}; the branch carries no verdict"
    if fault in (PROVIDER, AUTH):
        return f"{fault} fault at {stage}: {detail}; not assessed; relaunch when the {fault} is back"
    if fault == CONFIG:
        return f"config fault at {stage}: {detail}; not retried (the agent would refuse again), not assessed"
    if fault == TAMPER:
        return f"tamper fault at {stage}: {detail}; undone, kept as evidence, not retried, not assessed"
    return detail


def integration_detail(detail: str, upstream: str) -> str:
    """A fault during integration is never retried: a hidden success may already have pushed [I4]."""
    return f"{detail}; inspect {upstream} and the roadmap there before relaunching"


def metrics(tasks: Iterable[TaskResult]) -> dict[str, int]:
    """``faultMetrics``: in-place retries taken, and the tasks each fault class ended."""
    counted = zero_fault_metrics()
    for task in tasks:
        counted["infraRetries"] += task.infraRetries
        key = METRIC_FOR.get(task.fault or "")
        if key is not None:
            counted[key] += 1
    return counted

