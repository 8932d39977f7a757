"""Why a task's or an addendum's branch is held out of a run's selection: a
live run works on it (its run lock), or it survives from an earlier run, to
be assessed, resumed, integrated or removed first [L2]. The one place both
kinds of work ask."""

from __future__ import annotations

from git_harn.git import Repo
from git_harn.tasks.roadmap import task_branch
from git_harn.workflow.model.result import Skipped
from git_harn.workflow.model.state import SkipReason


def held_branch(repo: Repo, task_id: str, live: dict[str, str] | None,
                addendum: int | None = None) -> Skipped | None:
    """Why ``roadmap-<id>`` (or its addendum's branch) is held, or None."""
    branch = task_branch(task_id, addendum)
    if live and branch in live:
        return Skipped(task_id, SkipReason.LIVE_RUN.value,
                       f"{branch} is in use: {live[branch]}; it is not a survivor", addendum)
    if repo.ref_oid(f"refs/heads/{branch}") is not None:
        then = "integrate" if addendum is not None else "resume"
        what = "addendum" if addendum is not None else "task"
        return Skipped(task_id, SkipReason.SURVIVING_BRANCH.value,
                       f"{branch} exists (left by an earlier run); "
                       f"assess, {then} or remove it before this {what} is selected again", addendum)
    return None
