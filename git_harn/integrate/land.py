"""Integrate a task branch as one squash commit on ``<remote>/<base>`` [I1]-[I4].

Under the merge lock, in git-harn's own integration worktree (never the
user's checkout), each attempt fetches the base, rebases the task branch
onto it, resets ``integrate-<slug>`` onto the fresh base with ``git switch
--discard-changes -C`` (which throws away whatever an earlier attempt left
staged), squash-merges, ticks the roadmap checkbox in the same commit and
pushes with a lease on the base it read [P3]. A push that loses a race
re-fetches and starts the attempt over, up to a bound. A crash is not
retried automatically [I4]: a marker left behind makes the next run stop
and ask the operator to look first.
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from pathlib import Path

from git_harn.errors import BadInput
from git_harn.forge.content import carries_task
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.branches import keep_ref
from git_harn.git.remote import fetch_branch
from git_harn.integrate.attempt import Retry, attempt
from git_harn.integrate.crash import crash_marker, interrupted_report
from git_harn.integrate.propose import propose_target
from git_harn.integrate.report import (
    ALREADY_INTEGRATED,
    NEEDS_OPERATOR,
    PUSH_FAILED,
    RETRIES_EXHAUSTED,
    IntegrationReport,
    new_report,
)
from git_harn.integrate.target import Request, Target, resolve_target
from git_harn.integrate.worktree import ensure_worktree
from git_harn.notices import info
from git_harn.store.bookkeeping import INTEGRATED_ROOT
from git_harn.store.locks import hold_merge
from git_harn.tasks.config import LandMode
from git_harn.tasks.roadmap import Task, find_task, parse_roadmap, work_key

MERGE_LOCK_TIMEOUT = 600  # seconds; git config harn.mergeLockTimeout
INTEGRATED_PREFIX = INTEGRATED_ROOT  # + <id> or <id>-addendum-<n>: the tip that landed


def integrate(repo: Repo, request: Request, run: dict[str, str] | None = None) -> IntegrationReport:
    """Land ``request.branch`` on ``<remote>/<base>``; see the module docstring."""
    return integrate_target(repo, resolve_target(repo, request), request.resume_after_crash, run)


def integrate_target(repo: Repo, target: Target, resume_after_crash: bool = False,
                     run: dict[str, str] | None = None) -> IntegrationReport:
    """Land an already validated ``target``, under the merge lock (in
    pull-request mode: propose it [F1]; ``run`` names the workflow run)."""
    if target.land is LandMode.PULL_REQUEST:
        with merge_lock(repo, f"propose {target.branch} to {target.upstream}"):
            return _propose(repo, target, run or {})
    with merge_lock(repo, f"integrate {target.branch} into {target.upstream}"):
        interrupted = interrupted_report(repo, target, resume_after_crash)
        if interrupted is not None:
            return interrupted
        with crash_marker(repo, target):
            report = _attempts(repo, target)
        if report.ok:
            keep_integrated(repo, target, report, f"git-harn: integrate: task {integrated_key(target)} landed")
        return report


def _propose(repo: Repo, target: Target, run: dict[str, str]) -> IntegrationReport:
    """The squash of ``target`` proposed from its landing branch, unless the base has it already."""
    base = fetch_branch(repo, target.remote, target.base, target.tracking_ref)
    task = _roadmap_task(repo, target, base)
    landed = _landed_before(repo, target, base, task, 1)
    if landed is not None:
        return landed
    return propose_target(repo, target, integrated_key(target), task, base, run)


def merge_lock(repo: Repo, purpose: str) -> AbstractContextManager[None]:
    """The merge lock, waited for up to git config harn.mergeLockTimeout."""
    return hold_merge(repo, purpose, repo.config_int("harn.mergeLockTimeout", MERGE_LOCK_TIMEOUT))


def integrated_key(target: Target) -> str:
    return work_key(target.task_id, target.addendum)


def keep_integrated(repo: Repo, target: Target, report: IntegrationReport, message: str) -> str:
    """Keep the judged commit under ``refs/harnery/integrated/<key>``, as
    the workflow does for what it lands: the same whoever integrated it."""
    rebased = to_oid(report.rebasedTip) if report.rebasedTip else None
    return keep_landed(repo, integrated_key(target), target.judged, rebased, message)


def keep_landed(repo: Repo, key: str, judged: Oid, beside: Oid | None, message: str) -> str:
    """``refs/harnery/integrated/<key>`` keeps the judged commit, which the
    gates and review notes sit on, so no ``git gc`` takes the evidence of
    what was approved; the rebased copy the branch holds when the base had
    moved (``beside``) is kept next to it (``<key>-<n>``), so the branch
    holds nothing unkept and may go [P1] [T4]."""
    kept = keep_ref(repo, INTEGRATED_PREFIX + key, judged, message)
    if beside is not None and beside != judged:
        keep_ref(repo, INTEGRATED_PREFIX + key, beside, f"{message} (rebased onto the base)")
    return kept


def _attempts(repo: Repo, target: Target) -> IntegrationReport:
    worktree: Path | None = None
    rejected: tuple[Oid, Retry] | None = None  # (base we pushed onto, what was refused)
    for number in range(1, target.max_attempts + 1):
        base = fetch_branch(repo, target.remote, target.base, target.tracking_ref)
        if rejected is not None and rejected[0] == base:
            return new_report(target, number - 1, rebased=True, squashMerged=True, roadmapMarkedDone=True,
                              commit=rejected[1].commit, outcome=PUSH_FAILED, summary=(
                f"push to {target.upstream} was rejected although it did not move: {rejected[1].why}"))
        task = _roadmap_task(repo, target, base)
        landed = _landed_before(repo, target, base, task, number)
        if landed is not None:
            return landed
        worktree = worktree or ensure_worktree(repo, base)
        outcome = attempt(repo, target, worktree, base, task, number)
        if not isinstance(outcome, Retry):
            return outcome
        rejected = (base, outcome)
        info(f"push to {target.upstream} was rejected ({outcome.why}); fetching and trying again")
    return new_report(target, target.max_attempts, outcome=RETRIES_EXHAUSTED, summary=(
        f"{target.upstream} kept moving: the push was rejected {target.max_attempts} "
        f"time(s); rerun, or raise --max-attempts"))


def _roadmap_task(repo: Repo, target: Target, base: Oid) -> Task:
    """The task's roadmap entry as ``<remote>/<base>`` has it; BadInput if absent."""
    found = repo.entry(base, target.roadmap)
    if found is None:
        raise BadInput(f"{target.upstream} has no roadmap at {target.roadmap} (git config harn.roadmap)")
    raw = repo.read_file(base, target.roadmap)
    if raw is None:
        raise BadInput(f"{target.roadmap} on {target.upstream} is not a file")
    task = find_task(parse_roadmap(raw.decode("utf-8", "replace")), target.task_id)
    if task is None:
        raise BadInput(f"{target.roadmap} on {target.upstream} has no task {target.task_id}")
    if target.addendum is not None and task.addendum(target.addendum) is None:
        raise BadInput(f"{target.roadmap} on {target.upstream} has no addendum {target.addendum} under task "
                       f"{target.task_id} (an indented '- [ ] addendum {target.addendum}: <title>' item)")
    return task


def _landed_before(repo: Repo, target: Target, base: Oid, task: Task, number: int) -> IntegrationReport | None:
    """A report when the task is already on the base, or when the base says
    it is done without showing how.

    Only this task's own squash commit (its ``Harnery-Task:`` trailer, and
    ``Harnery-Addendum:`` for an addendum) proves it landed: a checkbox can be
    ticked by any commit, another task's included [P5]."""
    item = task.addendum(target.addendum) if target.addendum is not None else None
    if not (item.done if item is not None else task.done):
        return None
    commit = squash_on(repo, target, base)
    what = f"addendum {target.addendum} of task" if target.addendum is not None else "task"
    if commit is None:
        trailer = f" and Harnery-Addendum: {target.addendum}" if target.addendum is not None else ""
        return new_report(target, number, outcome=NEEDS_OPERATOR, summary=(
            f"{what} {target.task_id} is ticked in {target.roadmap} on {target.upstream}, "
            f"but no commit there carries Harnery-Task: {target.task_id}{trailer}; it was not "
            f"integrated by git-harn. Inspect {target.upstream} and the roadmap; untick "
            f"it there to integrate {target.branch}"))
    return new_report(target, number, ok=True, rebased=True, squashMerged=True, pushed=True,
                      roadmapMarkedDone=True, commit=commit, outcome=ALREADY_INTEGRATED,
                      summary=(f"{what} {target.task_id} is already integrated into {target.upstream} "
                               f"by {commit[:12]}; nothing changed"))


def squash_on(repo: Repo, target: Target, base: Oid) -> str | None:
    return squash_of(repo, base, target.task_id, target.addendum)


def squash_of(repo: Repo, base: Oid, task_id: str, addendum: int | None) -> str | None:
    """The newest commit on the base that is this task's squash: its
    ``Harnery-Task:`` trailer, and this addendum's (or, for the task itself,
    no) ``Harnery-Addendum:`` trailer."""
    for commit, message in repo.grep_log(base, f"^Harnery-Task: {re.escape(task_id)}$"):
        if carries_task(message, task_id, addendum):
            return commit
    return None
