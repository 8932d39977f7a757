"""Which roadmap tasks a run takes: unblocked (unchecked, every ``Requires:``
id checked), in roadmap order, minus those already taken and survivors of
earlier runs (an existing ``roadmap-<id>`` branch), which are held out; and
why the others were left out (a requirement that names no task among them).
A branch whose workspace a live run holds (its run lock) is held out too,
and is never a survivor, in any mode [L2]."""

from __future__ import annotations

from git_harn.git import Repo
from git_harn.tasks.roadmap import Task, unblocked, unknown_requirements
from git_harn.workflow.model.result import Skipped
from git_harn.workflow.model.state import SkipReason
from git_harn.workflow.task import addenda
from git_harn.workflow.task.held import held_branch


def survivors(repo: Repo, tasks: list[Task], live: dict[str, str] | None = None) -> list[Skipped]:
    """Unticked tasks whose branch a live run holds or an earlier run left."""
    found = (held_branch(repo, task.id, live) for task in tasks if not task.done)
    return [why for why in found if why is not None]


def selectable(tasks: list[Task], taken: set[str], held: set[str]) -> list[Task]:
    """Unblocked tasks, then open addenda (keys: ``<id>``, ``<id>-addendum-<n>``)."""
    return ([t for t in unblocked(tasks) if t.id not in taken and t.id not in held]
            + addenda.selectable(tasks, taken, held))


def left_out(tasks: list[Task], taken: set[str], held: set[str], limited: bool,
             halted: str | None = None) -> list[Skipped]:
    """Unchecked tasks the run did not take, and why (``halted``: the reason of
    those a circuit breaker kept from starting)."""
    done = {t.id for t in tasks if t.done}
    out = []
    for task in tasks:
        if task.done or task.id in taken or task.id in held:
            continue
        unknown = unknown_requirements(tasks, task)
        missing = [r for r in task.requires if r not in done]
        if unknown:
            out.append(Skipped(task.id, SkipReason.UNKNOWN_REQUIREMENT.value,
                               f"requires {', '.join(unknown)}, which names no task "
                               "in the roadmap; fix its Requires: line"))
        elif missing:
            out.append(Skipped(task.id, SkipReason.WAITING.value, "requires " + ", ".join(missing)))
        elif halted is not None:
            out.append(Skipped(task.id, halted, "not started: the run stopped starting tasks (see halted)"))
        elif limited:
            out.append(Skipped(task.id, SkipReason.MAX_TASKS.value, "the run reached --max-tasks"))
    return out


def waiting(tasks: list[Task]) -> dict[str, str]:
    """Unchecked tasks that wait for tasks they require (which exist but are
    not ticked yet): task id -> what they wait for."""
    done = {t.id for t in tasks if t.done}
    out = {}
    for task in tasks:
        missing = [r for r in task.requires if r not in done]
        if not task.done and missing and not unknown_requirements(tasks, task):
            out[task.id] = "requires " + ", ".join(missing)
    return out
