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
