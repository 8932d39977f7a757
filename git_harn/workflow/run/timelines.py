"""A run's times of its tasks before their end shows them [L3]: when
each began to wait for its requirements and for its claim, the run's own
waits, and each stage as it starts (where the task stands, its timeline so
far on its placeholder and in the run folder, for a runner killed before
its next record event).

Threads: ``stage_started`` is called from the tasks' threads; it changes
only the placeholder of its own task and appends to the stage-times file
(``record.StageTimes`` writes each line whole under its lock). Everything
else is the loop's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from git_harn.clock import Wait, precise_iso
from git_harn.failpoints import failpoint
from git_harn.git import Repo
from git_harn.notices import warn
from git_harn.tasks.roadmap import Task
from git_harn.workflow.ledger import record
from git_harn.workflow.model import state
from git_harn.workflow.model.result import TaskResult, WorkflowResult
from git_harn.workflow.model.state import State
from git_harn.workflow.run import select
from git_harn.workflow.run.progress import Progress
from git_harn.workflow.task.pipeline import wait_span
from git_harn.workflow.task.workspaces import note_stage


class Timelines:
    def __init__(self, repo: Repo, result: WorkflowResult, folder: Path, progress: Progress,
                 running: Mapping[Any, TaskResult], claims_on: str | None) -> None:
        self.repo, self.result, self.progress = repo, result, progress
        self.running = running  # the scheduler's: each running task's worker copy
        self.claims_on = claims_on  # the remote tasks are claimed on, if claims are on
        self.stage_times = record.StageTimes(folder)
        self.waiting_since: dict[str, tuple[str, str]] = {}  # task id -> (since, what it requires)

    def alive(self) -> None:
        self.stage_times.alive()

    def note_waiting(self, tasks: list[Task], taken: set[str]) -> None:
        """Tasks that wait for their requirements, from when this run first saw them wait;
        the record's ``waiting`` says which wait now (the next event writes it)."""
        waiting = select.waiting(tasks)
        for task_id, detail in waiting.items():
            self.waiting_since.setdefault(task_id, (precise_iso(), detail))
        self.result.waiting = [{"taskId": task_id, "requires": detail} for task_id, detail in waiting.items()
                               if task_id not in taken]

    def waits_before(self, task: Task, claiming_since: str) -> list[dict[str, Any]]:
        """What a task waited for before it started: its requirements, its claim."""
        spans = []
        if task.key in self.waiting_since:
            since, detail = self.waiting_since.pop(task.key)
            spans.append(wait_span(Wait("requirements", detail, since, precise_iso())))
        if self.claims_on is not None:
            spans.append(wait_span(Wait("claim", f"claimed on {self.claims_on}", claiming_since, precise_iso())))
        return spans

    def run_waited(self, wait: Wait) -> None:
        self.result.waits.append(wait_span(wait))

    def stage_started(self, task_key: str, stage: str, attempt: str) -> None:
        """Each stage of a task, as it starts: where the task stands and its
        timeline so far (the next record event shows them; the run folder
        keeps the timeline now, for a runner killed before that event), then
        the progress line."""
        placeholder = next((t for t in self.result.tasks if t.key == task_key and State.of(t).in_flight), None)
        if placeholder is not None and placeholder.runId is not None:
            state.track(placeholder, state.STAGE_STATE.get(stage, State.STARTING), stage)
            note_stage(self.repo, placeholder.runId, stage)
            self._keep_stage_times(placeholder)
        failpoint(f"workflow-stage-{stage}")
        self.progress.stage(task_key, stage, attempt)

    def _keep_stage_times(self, placeholder: TaskResult) -> None:
        """The task's timeline as its worker holds it (the previous stage
        ended, this one begun), on its placeholder and in the run folder."""
        work = next((w for w in list(self.running.values()) if w.runId == placeholder.runId), None)
        if work is None:
            return  # its first stage, before the task is listed as running: nothing has ended yet
        spans = [dict(span) for span in list(work.timeline)]
        placeholder.timeline = spans
        try:
            self.stage_times.note(str(placeholder.runId), spans)
        except OSError as exc:  # the page of a killed run loses its stages; the run goes on
            warn(f"cannot keep the stage times in {self.stage_times.path}: {exc.strerror or exc}")
