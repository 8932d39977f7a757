"""What a run starts, and in what order [L2] [L3]: the survivors recovery
resumes first, then the queue of selectable tasks, while the circuit
breakers allow it, ``parallel`` runs at once and ``maxTasks`` is not reached.
Each task is claimed on the remote (claims on), shown in the result by a
placeholder (its worker fills a copy of its own), recorded before its job
starts (a runner killed in between leaves no workspace its record does not
name), and only then submitted. As a task ends its claim is kept (its
request still open) or released; as the run ends the claims are let go.

Threads: the loop's alone. The jobs it submits run in the pool's threads and
reach the run through the callbacks their ``Job`` carries, never through
these fields.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from git_harn.clock import precise_iso
from git_harn.failpoints import failpoint
from git_harn.git import Oid, Repo
from git_harn.tasks.roadmap import Task
from git_harn.workflow.after import recovery
from git_harn.workflow.ledger import claims as claiming
from git_harn.workflow.ledger.journal import Journal
from git_harn.workflow.model import config, state
from git_harn.workflow.model.result import Skipped, TaskResult, WorkflowResult
from git_harn.workflow.model.state import State
from git_harn.workflow.run import select
from git_harn.workflow.run.breakers import Breakers, Limit
from git_harn.workflow.run.fetcher import BaseFetcher
from git_harn.workflow.run.progress import Progress
from git_harn.workflow.run.timelines import Timelines
from git_harn.workflow.task import addenda
from git_harn.workflow.task.pipeline import Job, run_id_for, run_task

# a task, its placeholder (the worker's copy is made from it), the base it starts from,
# and what resuming adds (resume_at, advisory, asked): the job that runs it
MakeJob = Callable[[Task, TaskResult, Oid, dict[str, Any]], Job]


def task_result(workflow_id: str, task: Task) -> TaskResult:
    return TaskResult(taskId=task.id, title=task.title, branch=addenda.branch_of(task),
                      runId=run_id_for(workflow_id, task.key), addendum=addenda.number_of(task))


class Starts:
    def __init__(self, repo: Repo, eff: config.Effective, result: WorkflowResult, held: set[str], *,
                 breakers: Breakers, claims: claiming.Claims | None, progress: Progress, journal: Journal,
                 timelines: Timelines, fetcher: BaseFetcher, make_job: MakeJob,
                 found: recovery.Recovery | None) -> None:
        self.repo, self.eff, self.result, self.held, self.make_job = repo, eff, result, held, make_job
        self.breakers, self.claims, self.progress, self.journal = breakers, claims, progress, journal
        self.timelines, self.fetcher = timelines, fetcher
        self.recovery = found
        self.resumed: list[str] = []  # the survivors recovery resumes that were taken up, in order
        self.taken: set[str] = set()  # the task keys this run started
        self.queue: deque[Task] = deque()
        self.limited = False  # maxTasks kept a task from starting
        self.holding: Limit | None = None  # the provider limit the run waits out, if any

    def refill(self, tasks: list[Task]) -> None:
        """Queue what is selectable and not queued yet."""
        queued = {t.key for t in self.queue}
        self.queue.extend(t for t in select.selectable(tasks, self.taken, self.held) if t.key not in queued)

    def stop(self) -> None:
        self.queue.clear()

    def left_out(self, tasks: list[Task]) -> list[Skipped]:
        return select.left_out(tasks, self.taken, self.held, self.limited, self.breakers.halted())

    def submit(self, pool: ThreadPoolExecutor, running: dict[Future[TaskResult], TaskResult],
               stopping: Callable[[], bool]) -> None:
        """Start what may start now, each into ``running``."""
        if not self._may_start():
            return
        self._resume(pool, running, stopping)
        while self.queue and len(running) < self.eff.parallel:
            task = self.queue.popleft()
            if task.key in self.taken:
                continue
            if self.eff.maxTasks is not None and len(self.taken) >= self.eff.maxTasks:
                self.limited = True
                self.queue.clear()
                return
            claiming_since = precise_iso()
            if self.claims is not None and self._claimed_elsewhere(task):
                continue
            self.taken.add(task.key)
            # The worker fills its own copy; the result shows this placeholder until
            # the task ends, so the record is never written from half-changed data.
            placeholder = task_result(self.result.workflowId, task)
            placeholder.timeline = self.timelines.waits_before(task, claiming_since)
            self.result.selected.append(task.id)
            job = self._placed(task, placeholder, self.fetcher.base, {})
            # recorded before it starts: whoever settles a killed run finds its workspace [L3]
            self.journal.task_started(self.result, task.key, placeholder.branch)
            running[pool.submit(run_task, self.repo, job)] = job.result

    def ended(self, tr: TaskResult) -> None:
        """A task's end: its claim kept while its request is open, else released."""
        if self.claims is None:
            return
        if State.of(tr) is State.PROPOSED:
            self.claims.keep(tr.key)  # its request is not merged: no other machine may take it [F1]
        else:  # every end leaves the branch to the survivor rules
            self.claims.release(tr.key)
        self.result.claims = self.claims.snapshot()

    def close(self, where: state.Where) -> None:
        """The run's end: its claims let go, the survivors recovery left unresolved said."""
        if self.claims is not None:
            self.claims.close()
            self.result.claims = self.claims.snapshot()
        if self.recovery is not None:
            recovery.settle(self.repo, self.recovery, self.result, where)

    def _resume(self, pool: ThreadPoolExecutor, running: dict[Future[TaskResult], TaskResult],
                stopping: Callable[[], bool]) -> None:
        """Surviving branches the recovery pass resumes go first, each in its own workspace."""
        while self.recovery is not None and self.recovery.resumes[len(self.resumed):] and \
                len(running) < self.eff.parallel and not stopping():
            res = self.recovery.resumes[len(self.resumed)]
            self.resumed.append(res.task.id)
            if self.claims is not None and self._claimed_elsewhere(res.task):
                continue  # another machine works it; the survivor stays unresolved here
            placeholder = task_result(self.result.workflowId, res.task)
            placeholder.runId, placeholder.branch = res.run_id, res.branch
            self.result.skipped = [s for s in self.result.skipped if s.taskId != res.task.id]
            job = self._placed(res.task, placeholder, res.base_oid,
                               {"resume_at": res.stage, "advisory": list(res.advisory), "asked": dict(res.asked)})
            self.journal.task_resumed(self.result, res.task.id, res.branch, res.stage)
            running[pool.submit(run_task, self.repo, job)] = job.result

    def _placed(self, task: Task, placeholder: TaskResult, base: Oid, resume: dict[str, Any]) -> Job:
        """The placeholder in the result, taken, at its base; the job that runs the task."""
        state.track(placeholder, State.CLAIMED if self.claims is not None else State.SELECTED, None)
        placeholder.baseOid = str(base)
        self.result.tasks.append(placeholder)
        return self.make_job(task, copy.deepcopy(placeholder), base, resume)

    def _may_start(self) -> bool:
        """The circuit breakers: no start after an auth fault, none while a
        provider is limited (waiting for it when allowed)."""
        self.holding = None
        if self.breakers.halted() is not None:
            self.queue.clear()
            return False
        limit = self.breakers.blocking()
        if limit is None:
            return True
        if self.breakers.may_wait(limit):
            self.holding = limit
            self.breakers.waiting(limit, self.progress.say)
        else:
            self.queue.clear()
        self.result.breakers = self.breakers.shown()
        return False

    def _claimed_elsewhere(self, task: Task) -> bool:
        """Claim the task on the remote; a task that is not ours is held out for the run."""
        assert self.claims is not None
        skipped = self.claims.take(task.key)  # an addendum is claimed by its own id
        failpoint("workflow-after-claim")
        if skipped is not None:
            skipped.taskId, skipped.addendum = task.id, addenda.number_of(task)
            self.held.add(task.key)
            self.result.skipped.append(skipped)
            self.progress.say(f"task {task.key}: skipped, {skipped.reason}: {skipped.detail}")
        self.result.claims = self.claims.snapshot()
        return skipped is not None
