"""The task lifecycle as a machine [L1] (issue 21): random sequences of stage
outcomes driven through the one stage runner (``pipeline.walk``) over the one
list of steps, checked against the one table of transitions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_harn.workflow.model.result import TaskResult, WorkflowResult
from git_harn.workflow.model.state import (
    ENDS,
    STATUSES,
    TRANSITIONS,
    Ending,
    Facts,
    IllegalTransition,
    Lifecycle,
    Outcome,
    State,
    Where,
    end,
    ending_for,
)
from git_harn.workflow.task.pipeline import AGAIN, ENTRY, StageEnd, Step, walk

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "schemas" / "workflow-result.schema.json").read_text())
TASK = SCHEMA["$defs"]["task"]["properties"]
SCHEMA_STATUSES = set(TASK["status"]["enum"])
SCHEMA_STATES = set(TASK["state"]["enum"])
ROLES = ("plan", "write", "gates", "review", "integrate")
# what a step may come to: ok, a product failure, each fault class, an interruption, a lost claim …
SAID = st.sampled_from(["ok", "again", *[o.value for o in Outcome if o is not Outcome.OK]])


# outcomes only some stages can come to
ONLY_AT = {Outcome.CHANGES_REQUESTED.value: {"review"}, Outcome.MANUAL_MERGE_READY.value: {"addendum"},
           Outcome.BLOCKED.value: {"plan", "implement", "addendum"}, Outcome.HALT.value: {"integrate"},
           Outcome.PROPOSED.value: {"integrate"}}


def _steps(script: list[str], addendum: bool) -> tuple[list[Step], list[str]]:
    """Five steps whose runs say, in turn, what ``script`` says (then ok; an
    outcome this stage cannot come to counts as ok)."""
    said = iter(script)
    stages: list[str] = []

    def step(role: str, stage: str) -> Step:
        def run(round_no: int) -> str | None:
            stages.append(stage)
            what = next(said, "ok")
            if stage not in ONLY_AT.get(what, {stage}):
                what = "ok"
            if what == "again":
                return AGAIN if role == "review" else None
            if what == "ok":
                return None
            raise StageEnd(Outcome(what), stage, f"{stage} came to {what}")
        return Step(role, stage, run)

    write = "addendum" if addendum else "implement"
    return [step("plan", "plan"), step("write", write), step("gates", "gates"), step("review", "review"),
            step("integrate", "integrate")], stages


@settings(max_examples=400, deadline=None)
@given(script=st.lists(SAID, max_size=24), entry=st.sampled_from(sorted(ENTRY, key=str)),
       addendum=st.booleans(), stop_after=st.integers(min_value=0, max_value=30))
def test_random_outcomes_move_only_along_the_table_to_an_end_the_schema_names(
        script: list[str], entry: str | None, addendum: bool, stop_after: int) -> None:
    steps, ran = _steps(script, addendum)
    life = Lifecycle(State.SELECTED)
    life.enter(State.STARTING)
    checks = iter(range(10_000))
    start = "write" if addendum else ENTRY[entry]
    ending = walk(life, steps, start, lambda: next(checks) >= stop_after, lambda step, n: None,
                  lambda: "landed")
    walked = life.walked
    for before, after in zip(walked, walked[1:], strict=False):
        assert after in TRANSITIONS[before], (before, after)
    assert ending.state is walked[-1] and ending.state in ENDS
    assert ending.state.value in SCHEMA_STATES and ending.state.reported in SCHEMA_STATUSES
    assert ending.stage in TASK["stage"]["oneOf"][1]["enum"]
    if ending.state is State.DONE:
        assert ran[-1] == "integrate"
    tr = TaskResult(taskId="1.1", title="t", branch="roadmap-1.1", runId="r")
    end(tr, ending, Facts("1.1", "1.1", "roadmap-1.1", False, False, ending.state.landed), Where("origin", "main"))
    assert tr.status == ending.state.reported and State.of(tr) is ending.state
    # nothing to run: landed, or proposed (the forge decides, the next run reconciles) [F2]
    assert (tr.next is not None) and (tr.next["command"] is None) == (
        ending.state.landed or ending.state is State.PROPOSED)


def test_every_end_the_table_reaches_is_a_state_the_schema_names() -> None:
    reached = {after for afters in TRANSITIONS.values() for after in afters}
    assert reached | {State.PENDING} == set(State)
    for state in State:
        assert state.value in SCHEMA_STATES and state.reported in SCHEMA_STATUSES
        assert state.terminal == (not TRANSITIONS[state]) or state is State.PLANNED


def test_the_statuses_are_what_the_states_report_ends_first_and_pending_last() -> None:
    """The one list of statuses is derived from State: the schema's, each once,
    in the order a run's summary counts them."""
    assert set(STATUSES) == SCHEMA_STATUSES and len(STATUSES) == len(SCHEMA_STATUSES)
    ends = {s.reported for s in ENDS}
    assert set(STATUSES[:len(ends)]) == ends and STATUSES[-1] == State.PENDING.value
    assert STATUSES[0] == State.DONE.reported


def test_a_run_summary_counts_its_tasks_in_that_order() -> None:
    result = WorkflowResult("wf", "main", "origin", "0" * 40, False, "2026-01-01T00:00:00Z")
    for n, state in enumerate((State.PENDING, State.DONE, State.REFUSED, State.FAILED, State.INTERRUPTED)):
        tr = TaskResult(f"1.{n}", "t", f"roadmap-1.{n}", None)
        tr.state, tr.status = state.value, state.reported
        result.tasks.append(tr)
    assert result.make_summary() == "5 tasks: 1 done, 2 failed, 1 halted, 1 pending"


def test_a_move_the_table_does_not_have_is_refused() -> None:
    life = Lifecycle(State.SELECTED)
    with pytest.raises(IllegalTransition):
        life.enter(State.INTEGRATING)
    life.enter(State.STARTING)
    life.enter(State.PLANNING)
    life.stop(Outcome.PROVIDER, "plan", "gone")
    with pytest.raises(IllegalTransition):
        life.enter(State.IMPLEMENTING)  # an end is final


@pytest.mark.parametrize(("outcome", "stage", "state"), [
    (Outcome.INFRA, "implement", State.INFRA_FAULT),
    (Outcome.INFRA, "integrate", State.HALTED),  # never retried [I4]
    (Outcome.INTERRUPTED, "integrate", State.HALTED),
    (Outcome.PROVIDER, "review", State.PROVIDER_FAULT),
    (Outcome.PROVIDER, "integrate", State.PROVIDER_FAULT),
    (Outcome.AUTH, "plan", State.AUTH_FAULT),
    (Outcome.CHANGES_REQUESTED, "review", State.REFUSED),
    (Outcome.LOST_CLAIM, "gates", State.FAILED),
    (Outcome.INTERRUPTED, "gates", State.INTERRUPTED),
    (Outcome.TAMPER, "implement", State.TAMPER_FAULT),
    (Outcome.TAMPER, "integrate", State.TAMPER_FAULT),  # not a halt: what moved is named and undone [T2]
    (Outcome.PROPOSED, "integrate", State.PROPOSED),  # a pull request opened: not landed [F1]
])
def test_each_outcome_has_one_end(outcome: Outcome, stage: str, state: State) -> None:
    assert ending_for(outcome, stage) is state


def test_the_derived_rules_are_asked_of_the_state() -> None:
    assert [s for s in State if s.suppresses_remediation] == [State.PROVIDER_FAULT, State.AUTH_FAULT]
    assert [s for s in State if s.counts_as_auth_fault] == [State.AUTH_FAULT]
    assert {s for s in State if s.assessable} == {State.FAILED, State.REFUSED, State.BLOCKED, State.HALTED}
    assert State.REFUSED.reported == "failed" and State.INTERRUPTED.reported == "halted"
    assert not Ending(State.HALTED, "integrate", "x", "interrupted").assessable
    # records written before states were recorded read back by status, fault and stage
    assert State.of({"status": "halted", "fault": "interrupted"}) is State.INTERRUPTED
    assert State.of({"status": "failed", "stage": "review"}) is State.REFUSED
    assert State.of({"status": "done", "state": "pending"}) is State.DONE


def test_a_tamper_fault_is_never_resumed_nor_triaged_and_counts_as_its_class() -> None:
    """[T2]: a stage that changed what the host obeys is hostile work: its
    branch does not re-enter a run, its reviews make no roadmap work, and
    faultMetrics counts it as tamperFaults."""
    assert not State.TAMPER_FAULT.resumable and not State.TAMPER_FAULT.triaged
    assert not State.TAMPER_FAULT.assessable and State.TAMPER_FAULT.fault == "tamper"
    life = Lifecycle(State.STARTING)  # found before a stage began, too
    assert life.stop(Outcome.TAMPER, "workspace", "config changed").state is State.TAMPER_FAULT

