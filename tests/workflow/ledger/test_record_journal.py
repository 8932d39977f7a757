"""The journal of a workflow run on its own (workflow/ledger/journal.py): the
invariants its docstring numbers, each driven against a real repository and
read back with plain git [L3] [P3]."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from git_harn.clock import now_iso
from git_harn.errors import RaceLost
from git_harn.git import open_repo
from git_harn.workflow.ledger import journal as journals
from git_harn.workflow.ledger.journal import Journal
from git_harn.workflow.ledger.record import workflow_ref
from git_harn.workflow.model.result import TaskResult, WorkflowResult
from tests.kit.harn import git, make_repo, stored_workflow


def _result(repo: Path, workflow_id: str) -> WorkflowResult:
    return WorkflowResult(workflowId=workflow_id, base="main", remote="origin",
                          baseOid=git(repo, "rev-parse", "HEAD"), dryRun=False, startedAt=now_iso())


def _task(task_id: str, status: str, stage: str | None = None) -> TaskResult:
    task = TaskResult(taskId=task_id, title=f"Task {task_id}", branch=f"b{task_id}", runId=f"r{task_id}")
    task.status, task.state, task.stage = status, {"done": "landed"}.get(status, status), stage
    return task


def _subjects(repo: Path, workflow_id: str) -> list[str]:
    return git(repo, "log", "--reverse", "--format=%s", workflow_ref(workflow_id)).splitlines()


def test_a_held_end_is_joined_by_the_start_that_follows_and_written_first_by_any_other_write(
        tmp_path: Path) -> None:
    """Invariants 3 and 4: a start joins the held end (one commit, the end's
    event); a heartbeat, a second end or a flush writes it first, alone."""
    repo = make_repo(tmp_path / "repo")
    result = _result(repo, "wf-held")
    journal = Journal(open_repo(repo), "wf-held")
    journal.started(result, "workflow")
    journal.task_ended(result, _task("1.1", "done"))
    journal.task_started(result, "1.2", "b2")
    journal.task_ended(result, _task("1.2", "failed", "implement"))
    journal.written -= journals.HEARTBEAT_SECONDS
    journal.beat(result, 0)
    journal.task_ended(result, _task("1.3", "done"))
    journal.task_ended(result, _task("1.4", "done"))
    journal.task_resumed(result, "1.5", "b5", "review")  # joins 1.4's end only
    journal.flush(result)  # nothing held: writes nothing
    journal.task_ended(result, _task("1.5", "halted", "review"))
    result.summary = "5 tasks"
    journal.finished(result)
    assert _subjects(repo, "wf-held") == [
        "start: workflow", "task-done: task 1.1 done; task 1.2 on b2",
        "task-failed: task 1.2 failed at implement", "heartbeat: 0 task(s) running",
        "task-done: task 1.3 done", "task-done: task 1.4 done; task 1.5 resumes on b5 at review",
        "task-halted: task 1.5 halted at review", "finish: 5 tasks"]


def test_a_heartbeat_is_written_only_when_nothing_was_for_its_period_and_every_event_renews_it(
        tmp_path: Path) -> None:
    """Invariant 8."""
    repo = make_repo(tmp_path / "repo")
    result = _result(repo, "wf-beat")
    result.runner = {"pid": 1, "heartbeatAt": "2000-01-01T00:00:00Z"}
    journal = Journal(open_repo(repo), "wf-beat")
    journal.started(result, "workflow")
    renewed = stored_workflow(repo, workflow_ref("wf-beat"))["runner"]["heartbeatAt"]
    assert renewed != "2000-01-01T00:00:00Z"
    journal.beat(result, 2)  # just written: no heartbeat
    assert _subjects(repo, "wf-beat") == ["start: workflow"]
    journal.written -= journals.HEARTBEAT_SECONDS
    journal.beat(result, 2)
    journal.beat(result, 2)  # the heartbeat itself was a write
    assert _subjects(repo, "wf-beat") == ["start: workflow", "heartbeat: 2 task(s) running"]
    result.closed = {"by": "settle"}
    result.runner["heartbeatAt"] = "2000-01-01T00:00:00Z"
    journal.closed(result, "runner gone")  # a closed record keeps its runner's last heartbeat
    assert stored_workflow(repo, workflow_ref("wf-beat"))["runner"]["heartbeatAt"] == "2000-01-01T00:00:00Z"


def test_a_record_someone_else_moved_is_never_overwritten_and_a_failed_write_never_writes_an_end_twice(
        tmp_path: Path) -> None:
    """Invariants 1 and 6."""
    repo = make_repo(tmp_path / "repo")
    result = _result(repo, "wf-race")
    journal = Journal(open_repo(repo), "wf-race")
    journal.started(result, "workflow")
    journal.task_ended(result, _task("1.1", "done"))
    other = Journal(open_repo(repo), "wf-race", journal.tip)
    other.started(result, "someone else")
    moved = git(repo, "rev-parse", workflow_ref("wf-race"))
    with pytest.raises(RaceLost, match="changed by someone else"):
        journal.task_started(result, "1.2", "b2")
    assert git(repo, "rev-parse", workflow_ref("wf-race")) == moved
    journal.tip = other.tip
    journal.flush(result)  # the end left the journal with the write that failed
    assert _subjects(repo, "wf-race") == ["start: workflow", "start: someone else"]


def test_threads_writing_at_once_make_one_line_of_commits_that_loses_no_event(tmp_path: Path) -> None:
    """Invariant 2: with no lock, two compare-and-swaps against one tip would race."""
    repo = make_repo(tmp_path / "repo")
    result = _result(repo, "wf-threads")
    journal = Journal(open_repo(repo), "wf-threads")
    journal.started(result, "workflow")
    errors: list[BaseException] = []

    def tasks(name: str) -> None:
        try:
            for n in range(5):
                journal.task_started(result, f"{name}.{n}", f"{name}{n}")
                journal.task_ended(result, _task(f"{name}.{n}", "done"))
        except BaseException as exc:  # seen by the test, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=tasks, args=(name,)) for name in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    journal.flush(result)
    assert errors == []
    subjects = _subjects(repo, "wf-threads")
    assert git(repo, "rev-list", "--merges", "--count", workflow_ref("wf-threads")) == "0"
    parts = [part for subject in subjects[1:] for part in subject.split(": ", 1)[1].split("; ")]
    every = [(x, n) for x in "abc" for n in range(5)]
    assert sorted(p for p in parts if " on " in p) == sorted(f"task {x}.{n} on {x}{n}" for x, n in every)
    assert sorted(p for p in parts if p.endswith(" done")) == sorted(f"task {x}.{n} done" for x, n in every)
    assert len(parts) == 30


def test_a_commit_stores_again_only_the_tasks_that_changed(tmp_path: Path) -> None:
    """Invariant 9."""
    repo = make_repo(tmp_path / "repo")
    result = _result(repo, "wf-blobs")
    result.tasks = [_task("1.1", "running"), _task("1.2", "running")]
    journal = Journal(open_repo(repo), "wf-blobs")
    journal.started(result, "workflow")
    before = git(repo, "ls-tree", "-r", workflow_ref("wf-blobs"), "tasks/").splitlines()
    result.tasks[1] = _task("1.2", "done")
    journal.task_ended(result, result.tasks[1])
    journal.flush(result)
    after = git(repo, "ls-tree", "-r", workflow_ref("wf-blobs"), "tasks/").splitlines()
    assert before[0] == after[0] and before[1] != after[1]
    assert [t["status"] for t in stored_workflow(repo, workflow_ref("wf-blobs"))["tasks"]] == ["running", "done"]
