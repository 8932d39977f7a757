"""Which roadmap tasks a run takes: unblocked (unchecked, every ``Requires:``
id checked), in roadmap order, minus those already taken and survivors of
earlier runs (an existing ``roadmap-<id>`` branch), which are held out; and
why the others were left out (a requirement that names no task among them).
A branch whose workspace a live run holds (its run lock) is held out too,
and is never a survivor, in any mode [L2]."""

from __future__ import annotations

from git_harn.git import Repo
from git_harn.tasks.roadmap import Task, task_branch, unblocked, unknown_requirements
from git_harn.workflow.model.result import Skipped
from git_harn.workflow.model.state import SkipReason
from git_harn.workflow.task import addenda


def in_use(task_id: str, branch: str, live: dict[str, str], addendum: int | None = None) -> Skipped:
    return Skipped(task_id, SkipReason.LIVE_RUN.value, f"{branch} is in use: {live[branch]}; it is not a survivor",
                   addendum)


def survivors(repo: Repo, tasks: list[Task], live: dict[str, str] | None = None) -> list[Skipped]:
    held = []
    for task in tasks:
        branch = task_branch(task.id)
        if task.done:
            continue
        if live and branch in live:
            held.append(in_use(task.id, branch, live))
        elif repo.ref_oid(f"refs/heads/{branch}") is not None:
            held.append(Skipped(task.id, SkipReason.SURVIVING_BRANCH.value,
                                f"{branch} exists (left by an earlier run); "
                                "assess, resume or remove it before this task is selected again"))
    return held


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
