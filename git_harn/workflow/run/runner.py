"""The loop of ``git harn workflow run``: start tasks, collect them, record.

``<remote>/<base>`` is the source of truth: the configuration and roadmap
are read there (``run/launch.py``); after each integration the base is
fetched again (``run/fetcher.py``) and what became unblocked is selected,
until nothing is left or ``maxTasks`` is reached. Up to ``parallel`` tasks
run at once; their integrations serialise on the merge lock. The result is
recorded under ``refs/harnery/workflows/<id>`` as it changes
(``ledger/journal.py``). An interruption (SIGTERM, Ctrl-C) stops the agents'
process groups, lets every task leave its workspace to cleanup, and records
where each stood [P1] [P6].

While it runs, a watchdog ends its agents' groups should it die, and
circuit breakers stop new starts after an auth fault, while a provider is
limited, or once the run's spending limit is crossed.
"""

from __future__ import annotations

import copy
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import suppress
from typing import Any

from git_harn.assess.gates import GateCheckouts
from git_harn.clock import keeping_waits, now_iso, precise_iso
from git_harn.errors import BadInput
from git_harn.failpoints import failpoint
from git_harn.files import private_dir
from git_harn.git import Oid, Repo
from git_harn.git.branches import tracking_ref
from git_harn.store import lease as leases
from git_harn.store.seal import Seal
from git_harn.tasks.roadmap import Task, roadmap_at
from git_harn.text import one_line
from git_harn.workflow.after import recovery, remediation
from git_harn.workflow.agents import usage
from git_harn.workflow.agents.watchdog import Watchdog, WatchedAgents
from git_harn.workflow.ledger import claims as claiming
from git_harn.workflow.ledger import record
from git_harn.workflow.ledger.journal import Journal
from git_harn.workflow.model import config, faults, state
from git_harn.workflow.model.result import TaskResult, WorkflowResult
from git_harn.workflow.model.state import Ending, State
from git_harn.workflow.run import breakers, select
from git_harn.workflow.run.fetcher import BaseFetcher
from git_harn.workflow.run.progress import Progress
from git_harn.workflow.run.timelines import Timelines
from git_harn.workflow.task import addenda, assessment
from git_harn.workflow.task.pipeline import Job, run_id_for, run_task

STOP_GRACE = 3.0  # seconds between SIGTERM and SIGKILL of an agent's group on interruption
DRAIN_SECONDS = 120.0


def task_result(workflow_id: str, task: Task) -> TaskResult:
    return TaskResult(taskId=task.id, title=task.title, branch=addenda.branch_of(task),
                      runId=run_id_for(workflow_id, task.key), addendum=addenda.number_of(task))


class Scheduler:
    def __init__(self, repo: Repo, eff: config.Effective, result: WorkflowResult, tasks: list[Task],
                 held: set[str], progress: Progress, claims: claiming.Claims | None = None,
                 lease: leases.Lease | None = None, wait_for_provider: float | None = None,
                 seal: Seal | None = None) -> None:
        self.repo, self.eff, self.result, self.tasks, self.held = repo, eff, result, tasks, held
        self.seal = seal
        self.progress = progress
        self.claims = claims
        self.watchdog = Watchdog()
        self.agents = WatchedAgents(lease=lease, watchdog=self.watchdog)
        self.breakers = breakers.Breakers(dict(eff.agents), wait_for_provider,
                                          meter=breakers.meter_for(eff, self.agents, STOP_GRACE))
        self.holding: breakers.Limit | None = None
        self.journal = Journal(repo, result.workflowId)
        self.scratch = record.run_folder(repo, result.workflowId)
        self.gate_checkouts = GateCheckouts(repo, self.scratch / "gates")  # private to the run [T4]
        self.taken: set[str] = set()
        self.queue: deque[Task] = deque()
        self.running: dict[Future[TaskResult], TaskResult] = {}
        self.limited = False
        self.previous: dict[int, Any] = {}
        self.recovery: recovery.Recovery | None = None
        self.recovery_started: list[str] = []
        self.where: state.Where = state.Where(eff.remote, eff.base)
        self.timelines = Timelines(repo, result, self.scratch, progress, self.running,
                                   eff.remote if claims is not None else None)
        self.fetcher = BaseFetcher(repo, eff.remote, eff.base, eff.base_oid)  # the base new tasks start from [T4]

    # --- the loop ---------------------------------------------------------------

    def run(self) -> WorkflowResult:
        private_dir(self.scratch.parent)  # prompts, reports and agent logs: for the operator's eyes only
        private_dir(self.scratch)
        self.queue.extend(select.selectable(self.tasks, self.taken, self.held))
        self.result.summary = "running"
        self.journal.started(self.result, f"workflow on {self.eff.upstream} at {str(self.eff.base_oid)[:12]}")
        failpoint("workflow-after-select")
        self.progress.say(f"workflow {self.result.workflowId} on {self.eff.upstream}: "
                          f"{len(self.queue)} task(s) selectable")
        self.timelines.note_waiting(self.tasks, self.taken)
        pool = ThreadPoolExecutor(max_workers=self.eff.parallel, thread_name_prefix="harn-task")
        try:
            with keeping_waits(self.timelines.run_waited):  # the run's own waits, e.g. for a provider's reset
                self._loop(pool)
        except (KeyboardInterrupt, SystemExit) as exc:
            self._interrupted(exc)
        except BaseException:
            with suppress(Exception):  # the error that left the loop is the one to report
                self.journal.flush(self.result)  # a task that ended before it keeps its event
            raise
        finally:
            self._shutdown(pool)
            self.gate_checkouts.close()
            self.watchdog.close()
            self.progress.close()
        try:
            return self._finish()
        finally:
            for sig, handler in self.previous.items():
                with suppress(ValueError, TypeError):
                    signal.signal(sig, handler)

    def _loop(self, pool: ThreadPoolExecutor) -> None:
        while True:
            self.timelines.alive()
            self.journal.beat(self.result, len(self.running))
            self._submit(pool)
            self.journal.flush(self.result)  # no start followed the end it holds
            if not self.running:
                if self.holding is None:
                    return
                time.sleep(1.0)  # waiting for a provider's reset; a signal interrupts it
                continue
            finished, _ = wait(list(self.running), timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                self._collect(future)

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

    def _room(self) -> bool:
        return self.eff.maxTasks is None or len(self.taken) < self.eff.maxTasks

    def _submit(self, pool: ThreadPoolExecutor) -> None:
        if not self._may_start():
            return
        self._submit_resumed(pool)
        while self.queue and len(self.running) < self.eff.parallel:
            task = self.queue.popleft()
            if task.key in self.taken:
                continue
            if not self._room():
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
            state.track(placeholder, self._taken_as, None)
            self.result.tasks.append(placeholder)
            self.result.selected.append(task.id)
            base = self.fetcher.base
            placeholder.baseOid = str(base)
            self._seal_out(placeholder.branch)
            job = Job(self.eff, self.result.workflowId, task, copy.deepcopy(placeholder), base, self.scratch,
                      self.agents, self.timelines.stage_started, where=self.where,
                      gate_checkouts=self.gate_checkouts, on_landed=self._on_landed(placeholder.runId),
                      seal=self.seal)
            # recorded before it starts: whoever settles a killed run finds its workspace [L3]
            self.journal.task_started(self.result, task.key, placeholder.branch)
            self.running[pool.submit(run_task, self.repo, job)] = job.result

    def _seal_out(self, branch: str) -> None:
        """A task branch of this run is its stages' own: no seal compares it (store/seal rule 4)."""
        if self.seal is not None:
            self.seal.exclude.add(f"refs/heads/{branch}")

    def _tamper_halts(self, running: set[str]) -> None:
        """A change blamed on no task still running (one that ended, or none) halts the run all the same."""
        if self.seal is None:
            return
        for key, tamper in self.seal.unclaimed(running):
            self.breakers.tamper_found(key, tamper.blamed, tamper.detail)
        self.result.breakers = self.breakers.shown()

    @property
    def _taken_as(self) -> State:
        """A task this run starts is claimed first when claims are on, else just selected."""
        return State.CLAIMED if self.claims is not None else State.SELECTED

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

    def _submit_resumed(self, pool: ThreadPoolExecutor) -> None:
        """Surviving branches the recovery pass resumes go first, each in its own workspace."""
        while self.recovery is not None and self.recovery.resumes[len(self.recovery_started):] and \
                len(self.running) < self.eff.parallel and not self.agents.stop.is_set():
            res = self.recovery.resumes[len(self.recovery_started)]
            self.recovery_started.append(res.task.id)
            if self.claims is not None and self._claimed_elsewhere(res.task):
                continue  # another machine works it; the survivor stays unresolved here
            placeholder = task_result(self.result.workflowId, res.task)
            placeholder.runId, placeholder.branch = res.run_id, res.branch
            state.track(placeholder, self._taken_as, None)
            placeholder.baseOid = str(res.base_oid)
            self.result.tasks.append(placeholder)
            self.result.skipped = [s for s in self.result.skipped if s.taskId != res.task.id]
            self._seal_out(res.branch)
            job = Job(self.eff, self.result.workflowId, res.task, copy.deepcopy(placeholder), res.base_oid,
                      self.scratch, self.agents, self.timelines.stage_started, resume_at=res.stage,
                      advisory=list(res.advisory), asked=dict(res.asked), where=self.where,
                      gate_checkouts=self.gate_checkouts, on_landed=self._on_landed(res.run_id), seal=self.seal)
            self.journal.task_resumed(self.result, res.task.id, res.branch, res.stage)
            self.running[pool.submit(run_task, self.repo, job)] = job.result

    def _collect(self, future: Future[TaskResult]) -> None:
        tr = self.running.pop(future)
        try:
            future.result()
        except Exception as exc:  # a bug must not take the siblings down
            state.end(tr, Ending(State.FAILED, tr.stage, one_line(f"internal error: {type(exc).__name__}: {exc}", 500)),
                      None, None)
        failpoint("workflow-before-release")  # a kill here leaves the claim of a task that may have landed
        if self.claims is not None and State.of(tr) is State.PROPOSED:
            self.claims.keep(tr.key)  # its request is not merged: no other machine may take it [F1]
            self.result.claims = self.claims.snapshot()
        elif self.claims is not None:  # every end leaves the branch to the survivor rules
            self.claims.release(tr.key)
            self.result.claims = self.claims.snapshot()
        at = next(i for i, t in enumerate(self.result.tasks) if t.runId == tr.runId)
        self.result.tasks[at] = tr
        self.breakers.task_ended(tr, self.scratch)
        self._tamper_halts({t.key for t in self.running.values()})
        self.result.breakers = self.breakers.shown()
        failpoint("workflow-task-ended")
        self.result.usage = usage.total(self.result.tasks)
        self.result.faultMetrics = faults.metrics(self.result.tasks)
        assessment.summarise(self.result)
        self.progress.finished(tr)
        reselect = State.of(tr).landed and not self.agents.stop.is_set() and self.result.halted is None \
            and self.breakers.halted() is None
        # The base was fetched while the task cleaned up (else it is fetched now); the
        # end is written with the next start, or alone when none follows (_loop).
        fetched = self.fetcher.after(str(tr.runId)) if reselect else None
        self.journal.task_ended(self.result, tr)
        if fetched is None or self.agents.stop.is_set():  # a stop meanwhile: nothing more starts
            return
        try:
            if self.fetcher.newer(fetched.result()):
                self._reselect(self.fetcher.base)
        except BaseException:
            self.journal.flush(self.result)  # recorded whatever stopped the run here
            raise

    def _on_landed(self, run_id: str | None) -> Callable[[], None]:
        """What a task calls, from its own thread, once it has landed."""
        def landed() -> None:
            if not self.agents.stop.is_set():  # nothing more starts: no fetch to leave behind
                self.fetcher.landed(str(run_id))
        return landed

    def _reselect(self, oid: Oid) -> None:
        """Queue what became unblocked on the base, fetched again (``oid``)."""
        try:
            roadmap = roadmap_at(self.repo, oid)
        except BadInput as exc:  # a duplicate id pushed while the run went on, or a roadmap too
            # large to read whole (TooLarge): select nothing more from it
            self.result.halted = one_line(f"no further task selected: {exc.message}", 500)
            self.result.next = state.halt_advice(None, self.where).document()
            self.progress.say(self.result.halted)
            return
        if roadmap is None:
            return
        self.tasks, self.result.unparsed = roadmap.tasks, roadmap.unparsed
        self.timelines.note_waiting(self.tasks, self.taken)
        queued = {t.key for t in self.queue}
        for task in select.selectable(self.tasks, self.taken, self.held):
            if task.key not in queued:
                self.queue.append(task)

    def _shutdown(self, pool: ThreadPoolExecutor) -> None:
        """Wait for the task threads to end. Tasks still run here only after
        an error left the loop; a signal meanwhile is an interruption like
        any other (their agents are stopped, so no stage starts again), not
        an exit that leaves them running behind a process that cannot end."""
        try:
            failpoint("workflow-shutdown")
            pool.shutdown(wait=True)
        except (KeyboardInterrupt, SystemExit) as exc:
            self._interrupted(exc)  # ignores further signals until the run is recorded
            pool.shutdown(wait=True)

    # --- interruption -------------------------------------------------------------

    def _interrupted(self, exc: BaseException) -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self.previous[sig] = signal.signal(sig, signal.SIG_IGN)  # finish recording first
        why = "Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "a signal (SIGTERM)"
        self.result.interrupted = True
        self.result.halted = f"interrupted by {why}: agents stopped, workspaces left to cleanup"
        self.queue.clear()
        self.agents.stop_all(signal.SIGTERM)
        killer = threading.Timer(STOP_GRACE, self.agents.stop_all, args=(signal.SIGKILL,))
        killer.daemon = True
        killer.start()
        try:
            pending = list(self.running)
            wait(pending, timeout=DRAIN_SECONDS)
            for future in pending:
                if future.done():
                    self._collect(future)
        finally:
            killer.cancel()
        for work in list(self.running.values()):  # still running after the drain
            at = next(i for i, t in enumerate(self.result.tasks) if t.runId == work.runId)
            self.result.tasks[at].timeline = [dict(span) for span in list(work.timeline)]
            state.interrupt(self.result.tasks[at], work.stage,
                            f"still running {work.stage or 'its start'} when the workflow stopped")
        for tr in self.result.tasks:
            if not State.of(tr).terminal:
                state.interrupt(tr, tr.stage, f"interrupted during {tr.stage or 'start'}")

    # --- the end ----------------------------------------------------------------

    def _finish(self) -> WorkflowResult:
        self.journal.flush(self.result)  # before the finish's own steps, any of which may fail
        result = self.result
        for tr in result.tasks:
            if not State.of(tr).terminal:
                state.interrupt(tr, tr.stage, "never finished")
        self._tamper_halts(set())
        left = select.left_out(self.tasks, self.taken, self.held, self.limited, self.breakers.halted())
        result.skipped.extend(left)
        result.waiting = []  # what still waits is in skipped now
        halt = self.breakers.halt_line(self.eff.remote, self.eff.base,
                                       sum(s.reason == self.breakers.halted() for s in left))
        if halt is not None and not result.interrupted:
            result.halted = halt
            result.next = self.breakers.advice(self.where).document()
        result.breakers = self.breakers.shown()
        if self.claims is not None:
            self.claims.close()
            result.claims = self.claims.snapshot()
        if self.recovery is not None:
            recovery.settle(self.repo, self.recovery, result, self.where)
        result.faultMetrics = faults.metrics(result.tasks)
        remediation.finish(self.repo, self.eff, result)  # the one final flush, after every task ended
        after = self.repo.ref_oid(tracking_ref(self.eff.remote, self.eff.base))
        result.baseOidAfter = str(after) if after is not None else None
        result.finished = True
        result.finishedAt = now_iso()
        result.faultMetrics = faults.metrics(result.tasks)
        assessment.summarise(result)
        result.summary = result.make_summary() + recovery.summary_suffix(result)
        self.journal.finished(result)
        return result
