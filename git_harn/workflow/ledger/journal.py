"""The journal of one workflow run: its record (``ledger/record.py``) as it
is written, one commit per event, while the run goes on [L3] [P3].

Its events: ``start``; ``task-start`` and ``task-resume`` (a task recorded
before its job starts); ``task-<status>`` (a task's end); ``heartbeat``;
``finish``; and ``interrupted``, written by whoever closes the run of a
runner that died (``after/settle.py``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from typing import Any

from git_harn.clock import now_iso
from git_harn.errors import RaceLost
from git_harn.git import Oid, Repo
from git_harn.git.identity import host_name
from git_harn.store import workflows as store
from git_harn.text import home_as_tilde
from git_harn.workflow.ledger.record import workflow_ref
from git_harn.workflow.model.result import TaskResult, WorkflowResult
from git_harn.workflow.model.state import State

HEARTBEAT_SECONDS = 300.0  # a record event at least this often while the runner lives


class Journal:
    """Appends the events of one run to its record.

    Its invariants:

    1. One writer per record: every commit is a compare-and-swap against the
       tip this journal wrote last (or was given); a tip anyone else moved
       is ``RaceLost``, never overwritten.
    2. One lock around every write, hold and flush: the threads that call
       it never interleave two commits, and the tip, the held event and the
       task blobs change only under it.
    3. At most one event is held: a task's end (``task_ended``). The start
       that follows joins it: one commit, the end's event, a subject naming
       both (``<end>; <start>``), written before that task starts.
    4. A held end is written before anything else is: any other event, a
       second end and ``flush`` write it first, in a commit of its own, so
       the record keeps the order things happened in and no caller has to
       remember a pending end (the heartbeat and the finish write it).
    5. The runner flushes once per turn of its loop, after that turn's
       starts (an end no start followed waits one turn at most), on an
       error that leaves the loop and first thing in its finish; a run that
       ends however it ends loses no task's end.
    6. A held end leaves the journal before its commit is made: a write that
       fails never writes it twice. Its status is not lost with it: every
       event carries the whole result, so the next one shows the task ended.
    7. A task is recorded before its job starts (``task_started``,
       ``task_resumed``): a runner killed in between leaves no workspace its
       record does not name [L3].
    8. Every event renews ``runner.heartbeatAt`` (a closed record's is left
       as it was), and ``beat`` writes a ``heartbeat`` event when nothing was
       written for ``HEARTBEAT_SECONDS``: a live runner's record is never
       older than that.
    9. A commit stores only the tasks that changed: each task's blob is kept
       with its compact JSON and reused while the task is the same.
    """

    def __init__(self, repo: Repo, workflow_id: str, tip: Oid | None = None) -> None:
        self.repo = repo
        self.ref = workflow_ref(workflow_id)
        self.tip: Oid | None = tip
        self.written = time.monotonic()  # when the last commit was made
        self._lock = threading.Lock()
        self._tasks: list[tuple[str, Oid]] = []  # per task index: its compact JSON and blob, as last written
        self._held: tuple[str, str] | None = None  # (event, summary) not written yet

    # --- the events ---------------------------------------------------------------

    def started(self, result: WorkflowResult, summary: str) -> None:
        self._write(result, "start", summary)

    def task_started(self, result: WorkflowResult, key: str, branch: str) -> None:
        self._write(result, "task-start", f"task {key} on {branch}", joins_held=True)

    def task_resumed(self, result: WorkflowResult, task_id: str, branch: str, stage: str) -> None:
        self._write(result, "task-resume", f"task {task_id} resumes on {branch} at {stage}", joins_held=True)

    def task_ended(self, result: WorkflowResult, task: TaskResult) -> None:
        """Held for the start that follows (3), written first by anything else (4)."""
        where = "" if State.of(task).landed else f" at {task.stage}"
        with self._lock:
            self._write_held(result)
            self._held = (f"task-{task.status}", f"task {task.taskId} {task.status}{where}")

    def beat(self, result: WorkflowResult, running: int) -> None:
        """A ``heartbeat`` event, when nothing was written for ``HEARTBEAT_SECONDS`` (8)."""
        if time.monotonic() - self.written >= HEARTBEAT_SECONDS:
            self._write(result, "heartbeat", f"{running} task(s) running")

    def flush(self, result: WorkflowResult) -> None:
        """The held end, if any, in a commit of its own (5)."""
        with self._lock:
            self._write_held(result)

    def finished(self, result: WorkflowResult) -> None:
        self._write(result, "finish", result.summary)

    def closed(self, result: WorkflowResult, summary: str) -> None:
        """The run of a runner that died, closed by another process."""
        self._write(result, "interrupted", summary)

    # --- the commits -------------------------------------------------------------

    def _write(self, result: WorkflowResult, event: str, summary: str, joins_held: bool = False) -> None:
        with self._lock:
            if joins_held and self._held is not None:
                (event, said), self._held = self._held, None
                summary = f"{said}; {summary}"
            self._write_held(result)
            self._commit(result, event, summary)

    def _write_held(self, result: WorkflowResult) -> None:
        if self._held is not None:
            (event, summary), self._held = self._held, None  # out before the commit (6)
            self._commit(result, event, summary)

    def _commit(self, result: WorkflowResult, event: str, summary: str) -> None:
        if result.runner is not None and result.closed is None:
            result.runner["heartbeatAt"] = now_iso()
        home = os.path.expanduser("~")
        head = home_as_tilde(result.head(), home)
        tasks = [self._task_blob(index, task, home) for index, task in enumerate(result.tasks)]
        del self._tasks[len(tasks):]
        try:
            self.tip = store.write_parts(self.repo, str(head["workflowId"]), head, tasks, event, summary,
                                         self.tip, host_name(self.repo))
        except RaceLost as exc:  # nobody else writes this run's ref: report, never overwrite (1)
            raise RaceLost(f"{self.ref} was changed by someone else during the run") from exc
        self.written = time.monotonic()

    def _task_blob(self, index: int, task: TaskResult, home: str) -> Oid:
        """The blob of task ``index``: the one written before when the task
        is as it was then (its compact JSON, made by the C encoder, is the
        key), so a write serialises and stores only the tasks it changed (9)."""
        key = json.dumps(task, default=_fields, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
        if index < len(self._tasks) and self._tasks[index][0] == key:
            return self._tasks[index][1]
        blob = store.task_blob(self.repo, home_as_tilde(json.loads(key), home))
        if index < len(self._tasks):
            self._tasks[index] = (key, blob)
        else:
            self._tasks.append((key, blob))
        return blob


def _fields(value: object) -> dict[str, Any]:
    """A dataclass inside a task as the JSON encoder takes it (``text.jsonable``'s shape).
    The encoder writes a tuple itself, never asking here, so a named tuple
    (``DirtyPath``, ``Entry`` …) would become an array: a task holds none."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"{type(value).__name__} is not JSON")
