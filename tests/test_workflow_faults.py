"""Fault classes of stage agents, in-place retries, faultMetrics (issue 13, seed 002)."""

from __future__ import annotations

from pathlib import Path

import pytest
from faultrepo import fault_setup, faults, runs
from helpers import assert_valid, ref

ONE = "# R\n\n- [ ] 21.1 Faulty\n"
TWO = "# R\n\n- [ ] 21.1 Faulty\n- [ ] 21.2 Fine\n"


@pytest.mark.parametrize(("stage", "what", "status", "klass", "kind", "words"), [
    ("plan", "exit75", "provider-fault", "provider", "exit-75", "exited with 75 (provider fault)"),
    ("implement", "exit77", "auth-fault", "auth", "exit-77", "exited with 77 (auth fault)"),
    ("implement", "fault-provider", "provider-fault", "provider", "fault-report", "HTTP 529: overloaded"),
    ("review", "fault-auth", "auth-fault", "auth", "fault-report", "HTTP 401: token expired"),
])
def test_provider_and_auth_faults_end_the_task_unretried(tmp_path: Path, stage: str, what: str, status: str,
                                                          klass: str, kind: str, words: str) -> None:
    wf = fault_setup(tmp_path, TWO)
    faults(wf, {f"21.1:{stage}": what})
    done = wf.run("--json")
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    bad, good = doc["tasks"]
    assert (bad["status"], bad["stage"], bad["fault"], bad["faultKind"]) == (status, stage, klass, kind)
    assert words in bad["detail"] and "not assessed" in bad["detail"]
    assert good["status"] == "done"
    tried = [r for r in runs(wf) if r["task"] == "21.1" and r["stage"] == stage]
    assert len(tried) == (2 if stage == "review" else 1)  # never retried (two reviewers ran once each)
    metrics = {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0}
    metrics["providerFaults" if klass == "provider" else "authFaults"] = 1
    assert doc["faultMetrics"] == metrics
    assert doc["summary"] == f"2 tasks: 1 done, 1 {status}"
    assert "- [ ] 21.1" in wf.remote_file("docs/roadmap.md")


def test_a_valid_report_of_failure_is_a_product_failure_not_a_fault(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE)
    faults(wf, {"21.1:implement": "partial"})
    doc = wf.run("--json").json()
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"], task["faultKind"]) == ("failed", "implement", None, None)
    assert doc["faultMetrics"] == {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0}
    assert ref(wf.work, "refs/heads/roadmap-21.1")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_a_stage_that_times_out_once_is_retried_in_place_and_lands(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE, workflow="stageTimeout = 2\n")
    faults(wf, {"21.1:plan": {"1": "hang", "*": "pass"}})
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert task["status"] == "done" and task["fault"] is None
    assert task["attempts"]["plan"] == 2 and task["infraRetries"] == 1
    assert task["stages"]["plan"]["tries"] == 2
    assert doc["faultMetrics"] == {"infraRetries": 1, "infraFaults": 0, "providerFaults": 0, "authFaults": 0}
    plans = [r for r in runs(wf) if r["stage"] == "plan"]
    assert [(r["run"], r["attempt"]) for r in plans] == [(1, 1), (2, 2)]  # HARN_ATTEMPT counts the retry
    assert "- [x] 21.1" in wf.remote_file("docs/roadmap.md")
    for pid in (tmp_path / "agents" / "children.log").read_text().split():
        assert not _alive(int(pid))  # the hung agent's child went with its group


def test_an_invalid_report_is_rerun_with_the_error_until_valid(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE)
    faults(wf, {"21.1:plan": {"1": "garbage", "2": "garbage", "*": "pass"}})
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    task = doc["tasks"][0]
    assert task["status"] == "done"
    plans = [r for r in runs(wf) if r["stage"] == "plan"]
    assert len(plans) == 3 and {r["attempt"] for r in plans} == {1}  # schema retries, the same attempt
    assert plans[0]["envSchemaError"] is None and plans[0]["stdinSchemaError"] is None
    for retry in plans[1:]:
        assert "the report is not JSON" in retry["envSchemaError"]
        assert retry["stdinSchemaError"] == retry["envSchemaError"]
    assert task["stages"]["plan"]["schemaRetries"] == 2
    assert doc["faultMetrics"]["infraRetries"] == 0  # schema retries are not infra retries
    inputs = sorted((wf.work / ".git" / "harnery" / "workflow" / doc["workflowId"]).glob("21.1-plan-*.report.json"))
    assert len(inputs) == 3  # each run's report kept for inspection


def test_a_report_that_stays_invalid_is_an_infra_fault_after_its_retries(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE)
    faults(wf, {"21.1:plan": "garbage"})
    done = wf.run("--json", "--schema-retries", "1", "--stage-attempts", "2")
    assert done.code == 3
    doc = done.json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"], task["faultKind"]) == (
        "infra-fault", "plan", "infra", "invalid-report")
    assert len([r for r in runs(wf) if r["stage"] == "plan"]) == 4  # 2 attempts x (1 + 1 schema retry)
    assert task["detail"].startswith("infra fault at plan after 2 attempt(s): the plan agent wrote no valid report")
    assert task["detail"].endswith('relaunch with resumePartialBranches=true and resumeMode="continue"')
    assert doc["faultMetrics"] == {"infraRetries": 1, "infraFaults": 1, "providerFaults": 0, "authFaults": 0}
    assert doc["settings"]["stageAttempts"] == 2 and doc["settings"]["schemaRetries"] == 1


def test_an_integration_agent_that_crashes_is_not_retried(tmp_path: Path) -> None:
    import json
    import sys

    agents = tmp_path / "agents"
    wf = fault_setup(tmp_path, ONE, integrate=f'command = [{json.dumps(sys.executable)}, '
                                              f'{json.dumps(str(agents / "agent.py"))}, "integrate"]')
    faults(wf, {"integrate": "crash"})
    done = wf.run("--json")
    assert done.code == 3
    doc = done.json()
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"], task["faultKind"]) == (
        "halted", "integrate", "infra", "crash")
    assert len([r for r in runs(wf) if r["stage"] == "integrate"]) == 1
    assert task["detail"].startswith("the integrate agent exited with 9 and no valid report")
    assert task["detail"].endswith("; inspect origin/main and the roadmap there before relaunching")
    assert doc["faultMetrics"] == {"infraRetries": 0, "infraFaults": 1, "providerFaults": 0, "authFaults": 0}
    assert len(wf.remote_log()) == 1
