"""A stored record read back at the store's edge (ledger/record.RecordedRun):
each member checked once there, so settling works with typed values and a
record another version or a hostile hand wrote reads as "not known", never as
a crash or a wrong type past the edge [L3]."""

from __future__ import annotations

from typing import Any

from git_harn.git import Oid
from git_harn.workflow.ledger.record import RecordedRun, RecordedTask, Runner, Stored
from git_harn.workflow.model.result import IN_PROGRESS


def _stored(body: dict[str, Any]) -> Stored:
    return Stored("wf-1", body, Oid("0" * 40), 0)


def test_a_whole_record_reads_back_typed() -> None:
    run = RecordedRun.of(_stored({
        "outcome": IN_PROGRESS, "remote": "up", "base": "trunk", "settings": {"claims": True},
        "runner": {"pid": 41, "start": "123", "host": "h", "clone": "c-1", "commonDir": "/r/.git"},
        "tasks": [{"taskId": "1.1", "runId": "wf-1-1.1", "branch": "roadmap-1.1"},
                  {"taskId": "1.1", "runId": "wf-1-1.1-addendum-2", "branch": "roadmap-1.1-addendum-2",
                   "addendum": 2}]}))
    assert run.in_progress and run.with_claims and (run.remote, run.base) == ("up", "trunk")
    assert run.runner == Runner(41, "123", "h", "c-1", "/r/.git")
    assert [t.key for t in run.tasks] == ["1.1", "1.1-addendum-2"]
    assert run.tasks[1] == RecordedTask("1.1", "wf-1-1.1-addendum-2", "roadmap-1.1-addendum-2", 2)


def test_members_of_the_wrong_type_read_as_not_known() -> None:
    run = RecordedRun.of(_stored({
        "outcome": 7, "remote": ["up"], "base": None, "settings": "claims", "runner": "pid 41",
        "tasks": [{"taskId": "1.1", "runId": "wf-1-1.1", "branch": 3, "addendum": True},
                  {"taskId": 1.2, "runId": "wf-1-1.2"}, {"taskId": "1.3"}, "1.4",
                  {"taskId": "1.1", "runId": "wf-1-1.1"}]}))  # the same workspace twice: once
    assert not run.in_progress and not run.with_claims and run.remote is None and run.base is None
    assert run.runner is None  # written before records named their runner
    assert run.tasks == (RecordedTask("1.1", "wf-1-1.1", None, None),)
    assert Runner.of({"pid": "41", "host": 5}) == Runner(None, None, None, None, None)
    assert run.claims_held == ()


def test_the_claims_held_are_those_made_and_neither_released_nor_kept() -> None:
    run = RecordedRun.of(_stored({"claims": {"made": ["1.1", "1.2", "1.3"], "released": ["1.1"],
                                             "kept": [{"taskId": "1.3"}, "1.2"]}}))
    assert run.claims_held == ("1.2",)


def test_an_empty_record_has_no_tasks_and_no_runner() -> None:
    run = RecordedRun.of(_stored({}))
    assert (run.workflow_id, run.tasks, run.runner, run.outcome) == ("wf-1", (), None, None)
