"""Addenda [R5]: follow-up work on a task that already landed.

An addendum is an indented roadmap item ``- [ ] addendum <n>: <title>`` under
its task, selectable when the task is checked and the addendum's own box is
not. It runs on ``roadmap-<id>-addendum-<n>`` with ``[agents.addendum]`` in
place of plan and implement, then gates, dual review and integration like a
task; integration ticks the addendum's own box and nothing else.

One extra end: an addendum agent that reports every work item done, green
gates and no open issues, but not the strict ``ok: true``, leaves its branch
``manual-merge-ready``: nothing is merged, the branch is kept, and an
operator decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from git_harn.errors import BadInput
from git_harn.git import Oid, Repo
from git_harn.tasks import roadmap as _roadmap
from git_harn.tasks.config import WORKFLOW_FILE, Stage
from git_harn.tasks.roadmap import Task, roadmap_bytes_at, roadmap_file, work_key
from git_harn.workflow.agents.stages import StageOutcome
from git_harn.workflow.model.config import Effective
from git_harn.workflow.model.result import Skipped
from git_harn.workflow.model.state import Outcome, SkipReason
from git_harn.workflow.task.held import held_branch

NO_AGENT_DETAIL = (f"{WORKFLOW_FILE} at the base has no [agents.addendum]; addenda are not run "
                   "without an addendum agent")
HISTORY_LIMIT = 2000  # first-parent commits read back when looking for the commit that ticked a box


@dataclass
class AddendumTask(_roadmap.Task):
    """Addendum ``number`` of task ``id``, as the scheduler and pipeline see it:
    ``id`` is the task's, ``title`` the addendum's."""

    number: int = 0

    @property
    def key(self) -> str:
        return work_key(self.id, self.number)


def number_of(task: Task) -> int | None:
    """The addendum number of a work item, None for a task itself."""
    return task.number if isinstance(task, AddendumTask) else None


def branch_of(task: Task) -> str:
    return _roadmap.task_branch(task.id, number_of(task))


def _work(item: _roadmap.Addendum) -> AddendumTask:
    return AddendumTask(item.task_id, item.title, False, item.line, number=item.number)


def selectable(tasks: list[Task], taken: set[str], held: set[str]) -> list[Task]:
    """Open addenda (task checked, own box not), in roadmap order, minus what
    was taken or is held out."""
    found: list[Task] = []
    for item in _roadmap.open_addenda(tasks):
        work = _work(item)
        if work.key not in taken and work.key not in held:
            found.append(work)
    return found


def held(repo: Repo, eff: Effective, tasks: list[Task], live: dict[str, str] | None = None) -> list[Skipped]:
    """Unticked addenda that this run does not take: a live run works on their
    branch, their branch survives from an earlier run (as for tasks), or no
    ``[agents.addendum]`` is configured."""
    out = []
    for task in tasks:
        for item in task.addenda:
            if item.done:
                continue
            why = held_branch(repo, task.id, live, item.number)
            if why is None and Stage.ADDENDUM not in eff.agents:
                why = Skipped(task.id, SkipReason.NO_ADDENDUM_AGENT.value, NO_AGENT_DETAIL, item.number)
            if why is not None:
                out.append(why)
    return out


# --- judging the addendum agent's report ------------------------------------------


def manual_merge_ready(report: dict[str, Any] | None) -> bool:
    """Every work item done (at least one), green gates, no open issues, and
    yet no strict ``ok: true``."""
    if report is None or report.get("ok") is True:
        return False
    items = report.get("workItems")
    return (isinstance(items, list) and bool(items) and all(i.get("done") is True for i in items)
            and report.get("gatesGreen") is True and report.get("openIssues") == [])


def manual_merge_detail(task: Task, branch: str, tip: Oid) -> str:
    return (f"addendum {number_of(task)} of task {task.id}: the agent reported every work item done, green gates "
            f"and no open issues but not ok: true; nothing was merged and {branch} is kept at {str(tip)[:12]}. "
            "Rerun the gates (git harn gates run), confirm the review evidence, reconcile the roadmap checkbox, "
            "then integrate (git harn integrate) or discard the branch")


def verdict(task: Task, branch: str, outcome: StageOutcome, before: Oid, tip: Oid,
            grew: bool) -> tuple[Outcome, str] | None:
    """(outcome, detail) when the addendum stops here, None when it goes on to
    the gates. ``grew``: the branch has new commits on top of ``before``."""
    if not grew:
        what = "reported ok" if outcome.ok else "stopped"
        return Outcome.PRODUCT_FAILURE, (f"the addendum agent {what} but committed nothing new on {branch} "
                        f"(tip {str(tip)[:12]}, was {str(before)[:12]})")
    if outcome.ok:
        return None
    if manual_merge_ready(outcome.report):
        return Outcome.MANUAL_MERGE_READY, manual_merge_detail(task, branch, tip)
    return Outcome.PRODUCT_FAILURE, outcome.detail or f"the addendum agent reported failure: {outcome.summary}"


# --- the I3 check of an integration agent's work, for an addendum -------------------


def landed_problem(repo: Repo, task: Task, landed: Oid, since: Oid, upstream: str) -> str | None:
    """None when ``landed`` has this addendum ticked and the commit that ticked
    it changed no other roadmap line; else why not."""
    number = number_of(task)
    assert number is not None
    path = roadmap_file(repo)
    what = f"addendum {number} of task {task.id}"

    def text(commit: Oid) -> str:
        return (roadmap_bytes_at(repo, commit) or b"").decode("utf-8", "surrogateescape")

    def ticked(body: str) -> bool:
        found = _roadmap.find_task(_roadmap.parse_roadmap(body), task.id)
        item = found.addendum(number) if found is not None else None
        return item is not None and item.done

    if not ticked(text(landed)):
        return (f"the integration report passed the check but {upstream} ({str(landed)[:12]}) does not have "
                f"{what} ticked")
    commit = landed
    for _ in range(HISTORY_LIMIT):
        parents = repo.commit_info(commit).parents
        if commit == since or not parents:
            return None
        before = text(parents[0])
        if not ticked(before):
            try:
                wanted, _ = _roadmap.tick_addendum(before, task.id, number)
            except BadInput:  # the same commit wrote the addendum in, ticked
                wanted = ""
            if text(commit) != wanted:
                return (f"{str(commit)[:12]} on {upstream} ticks {what} but changes other lines of {path} too; "
                        "an integration may tick the addendum's own box and nothing else")
            return None
        commit = parents[0]
    return None
