"""JSON from anyone goes through one reader: nested without end it is
invalid data, a fault of whoever wrote it, never an internal error
(issue 28, item 5) [P5]."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from git_harn.errors import CorruptRecord
from git_harn.store.record import RunRecord
from git_harn.tasks.config import AgentSettings
from tests.kit.adapter_fakes import PLAN_OK, agent, claude_init, claude_result, install
from tests.kit.harn import assert_valid
from tests.kit.workflow_repo import config_text, setup

DEEP = "[" * 200000

DEEP_REPORTER = r'''
import os
with open(os.environ["HARN_REPORT"], "w") as f:
    f.write("[" * 200000)
'''


def test_a_deep_report_is_an_invalid_report_retried_as_an_infra_fault(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    script = tmp_path / "deep.py"
    script.write_text(DEEP_REPORTER)
    outcome = kit.run(AgentSettings("plan", [sys.executable, str(script)]))
    assert (outcome.ok, outcome.fault, outcome.faultKind) == (False, "infra", "invalid-report"), outcome
    assert "nests too deeply" in outcome.detail


def test_a_workflow_whose_plan_agent_writes_deep_json_ends_in_a_fault(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First thing\n",
               config=config_text(agents, workflow="stageTimeout = 30\nstageAttempts = 2\nschemaRetries = 0\n")
               .replace('agent.py", "plan"', 'deep.py", "plan"'))
    (agents / "deep.py").write_text(DEEP_REPORTER)
    done = wf.run("--json")
    doc = done.json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"]) == ("infra-fault", "plan", "infra"), task
    assert "internal error" not in task["detail"] and "nests too deeply" in task["detail"]
    assert doc["faultMetrics"]["infraRetries"] == 1


def test_the_stream_reader_survives_a_deep_event_line_and_reads_on(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    valid = [{"event": {"type": "assistant", "session_id": "$SESSION", "message": {
        "role": "assistant", "content": [{"type": "text", "text": f"step {n}"}]}}} for n in range(40)]
    kit.scenario([[claude_init(), {"raw": DEEP}, *valid, claude_result(PLAN_OK)]])
    outcome = kit.run(agent("claude"))
    assert outcome.ok and outcome.fault is None, outcome
    assert outcome.agentRun is not None and outcome.agentRun["events"] == 42  # init, 40 steps, the result
    log = Path(outcome.agentRun["log"]).read_text().splitlines()
    assert len(log) == 43 and log[1] == DEEP  # the deep line is kept in the log, not believed


def test_a_claude_result_text_nested_too_deep_is_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    kit.scenario([[claude_init(), claude_result(text=DEEP)]])
    outcome = kit.run(agent("claude"))
    assert not outcome.ok and outcome.fault is not None and "internal error" not in outcome.detail, outcome


def test_a_run_record_nested_too_deep_is_corrupt_not_a_crash() -> None:
    with pytest.raises(CorruptRecord, match="not JSON"):
        RunRecord.from_json(DEEP.encode(), "refs/harnery/runs/r1")
    with pytest.raises(CorruptRecord, match="not JSON"):
        RunRecord.from_json(json.dumps({"runId": "r1"}).encode()[:-1] + b', "runId": "r2"}', "refs/harnery/runs/r1")


def test_a_number_too_large_for_a_float_is_not_json_every_reader_reads_alike() -> None:
    """``1e400`` is valid JSON text, but Python reads it as infinity, which no
    record can hold (json.dumps writes ``Infinity``, which no reader reads back) [P5]."""
    from git_harn.files import NotJson, loads_json

    for raw in ('{"cost": 1e400}', '[-1e400]', '{"a": {"b": 12e999}}'):
        with pytest.raises(NotJson, match="too large"):
            loads_json(raw)
    assert loads_json('{"cost": 1.5e300, "n": 12}') == {"cost": 1.5e300, "n": 12}


def test_a_claude_that_reports_an_infinite_cost_writes_no_infinity_anywhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile agent CLI reports ``total_cost_usd: 1e400``: the line is not
    believed, so no infinite cost reaches the run's usage, its spending
    limit or its record (which JSON could not hold) [P5]."""
    kit = install(tmp_path, monkeypatch)
    line = json.dumps(claude_result(PLAN_OK)["event"]).replace('"total_cost_usd": 0.0123', '"total_cost_usd": 1e400')
    assert "1e400" in line
    kit.scenario([[claude_init(), {"raw": line}]])
    outcome = kit.run(agent("claude"))
    assert outcome.agentRun is not None
    json.dumps(outcome.agentRun, allow_nan=False)  # every number in it is one JSON can hold
    assert outcome.agentRun["usage"]["costUsd"] is None
