"""The loop of ``git harn workflow run``: start tasks (``run/starts.py``),
collect them, record them (``ledger/journal.py``), until nothing is left or
``maxTasks`` is reached; after each integration the base is fetched again
(``run/fetcher.py``) and what became unblocked is queued. Up to ``parallel``
tasks run at once; their integrations serialise on the merge lock. An
interruption (SIGTERM, Ctrl-C) stops the agents' process groups, lets every
task leave its workspace to cleanup, and records where each stood [P1] [P6].
While it runs, a watchdog ends its agents' groups should it die, and circuit
breakers stop new starts (an auth fault, a provider's limit, the spending limit).
"""

from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import suppress
from typing import Any

from git_harn.assess.gates import GateCheckouts
from git_harn.clock import keeping_waits, now_iso
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
from git_harn.workflow.run import breakers
from git_harn.workflow.run.fetcher import BaseFetcher
from git_harn.workflow.run.notify import Notifier
from git_harn.workflow.run.progress import Progress
from git_harn.workflow.run.starts import Starts
from git_harn.workflow.run.timelines import Timelines
from git_harn.workflow.task import assessment
from git_harn.workflow.task.pipeline import Job

STOP_GRACE = 3.0  # seconds between SIGTERM and SIGKILL of an agent's group on interruption
DRAIN_SECONDS = 120.0


class Scheduler:
    """One run's loop. Its fields are the loop's thread's; a task's thread
    reaches the run only through what its ``Job`` carries: the agents, the
    gate checkouts and the seal (each with its own lock),
    ``timelines.stage_started`` and ``fetcher.on_landed`` (their docstrings
    say what they touch)."""

    def __init__(self, repo: Repo, eff: config.Effective, result: WorkflowResult, tasks: list[Task],
                 held: set[str], progress: Progress, claims: claiming.Claims | None = None,
                 lease: leases.Lease | None = None, wait_for_provider: float | None = None,
                 seal: Seal | None = None, found: recovery.Recovery | None = None,
                 where: state.Where | None = None) -> None:
        self.repo, self.eff, self.result, self.tasks = repo, eff, result, tasks
        self.seal, self.progress = seal, progress
        self.watchdog = Watchdog()
        self.agents = WatchedAgents(lease=lease, watchdog=self.watchdog)
        self.breakers = breakers.Breakers(dict(eff.agents), wait_for_provider,
                                          meter=breakers.meter_for(eff, self.agents, STOP_GRACE))
        self.journal = Journal(repo, result.workflowId)
        self.scratch = record.run_folder(repo, result.workflowId)
        self.gate_checkouts = GateCheckouts(repo, self.scratch / "gates")  # private to the run [T4]
        self.running: dict[Future[TaskResult], TaskResult] = {}
        self.previous: dict[int, Any] = {}
        self.where: state.Where = where or state.Where(eff.remote, eff.base)
        self.timelines = Timelines(repo, result, self.scratch, progress, self.running,
                                   eff.remote if claims is not None else None)
        self.fetcher = BaseFetcher(repo, eff.remote, eff.base, eff.base_oid)  # the base new tasks start from [T4]
        self.starts = Starts(repo, eff, result, held, breakers=self.breakers, claims=claims, progress=progress,
                             journal=self.journal, timelines=self.timelines, fetcher=self.fetcher,
                             make_job=self._job, found=found)
        self.notifier: Notifier | None = None  # the operator's, told when a task ends needing a person

    # --- the loop ---------------------------------------------------------------

    def run(self) -> WorkflowResult:
        private_dir(self.scratch.parent)  # prompts, reports and agent logs: for the operator's eyes only
        private_dir(self.scratch)
        self.starts.refill(self.tasks)
        self.result.summary = "running"
        self.journal.started(self.result, f"workflow on {self.eff.upstream} at {str(self.eff.base_oid)[:12]}")
        failpoint("workflow-after-select")
        self.progress.say(f"workflow {self.result.workflowId} on {self.eff.upstream}: "
                          f"{len(self.starts.queue)} task(s) selectable")
        self.timelines.note_waiting(self.tasks, self.starts.taken)
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
            self.starts.submit(pool, self.running, self.agents.stop.is_set)
            self.journal.flush(self.result)  # no start followed the end it holds
            if not self.running:
                if self.starts.holding is None:
                    return
                time.sleep(1.0)  # waiting for a provider's reset; a signal interrupts it
                continue
            finished, _ = wait(list(self.running), timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                self._collect(future)

    def _job(self, task: Task, worker: TaskResult, base: Oid, resume: dict[str, Any]) -> Job:
        """What runs a task in the pool; it reaches the run only through its callbacks."""
        if self.seal is not None:  # a task branch of this run is its stages' own: no seal compares it (seal rule 4)
            self.seal.exclude.add(f"refs/heads/{worker.branch}")
        return Job(self.eff, self.result.workflowId, task, worker, base, self.scratch, self.agents,
                   self.timelines.stage_started, where=self.where, gate_checkouts=self.gate_checkouts, seal=self.seal,
                   on_landed=self.fetcher.on_landed(str(worker.runId), self.agents.stop.is_set), **resume)

    def _tamper_halts(self, running: set[str]) -> None:
        """A change blamed on no task still running (one that ended, or none) halts the run all the same."""
        if self.seal is None:
            return
        for key, tamper in self.seal.unclaimed(running):
            self.breakers.tamper_found(key, tamper.blamed, tamper.detail)
        self.result.breakers = self.breakers.shown()

    # --- a task's end -------------------------------------------------------------

    def _collect(self, future: Future[TaskResult]) -> None:
        tr = self._ended(future)
        failpoint("workflow-before-release")  # a kill here leaves the claim of a task that may have landed
        self.starts.ended(tr)  # its claim kept or released
        self._tally(tr)
        self._record_and_refill(tr)

    def _ended(self, future: Future[TaskResult]) -> TaskResult:
        """The worker's result, out of ``running``; a task that raised ended failed."""
        tr = self.running.pop(future)
        try:
            future.result()
        except Exception as exc:  # a bug must not take the siblings down
            state.end(tr, Ending(State.FAILED, tr.stage, one_line(f"internal error: {type(exc).__name__}: {exc}", 500)),
                      None, None)
        return tr

    def _tally(self, tr: TaskResult) -> None:
        """The end in place of its placeholder, seen by the breakers, counted."""
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
        if self.notifier is not None:
            self.notifier.task_ended(self.result, tr)

    def _record_and_refill(self, tr: TaskResult) -> None:
        """The end held for the next start (the journal's rule 3); after a
        landing, the queue refilled from the base fetched again."""
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
        self.timelines.note_waiting(self.tasks, self.starts.taken)
        self.starts.refill(self.tasks)

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
        self.starts.stop()
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
        left = self.starts.left_out(self.tasks)
        result.skipped.extend(left)
        result.waiting = []  # what still waits is in skipped now
        halt = self.breakers.halt_line(self.eff.remote, self.eff.base,
                                       sum(s.reason == self.breakers.halted() for s in left))
        if halt is not None and not result.interrupted:
            result.halted = halt
            result.next = self.breakers.advice(self.where).document()
        result.breakers = self.breakers.shown()
        self.starts.close(self.where)  # the claims let go, the survivors recovery left said
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
