"""External assessors [A3] and git harn report check assessment."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.kit.harn import assert_valid, git, harn
from tests.kit.task_repo import task_branch, task_repo

VALID = {"classification": "adopt-partial", "reasons": ["a coherent slice"],
         "missingEvidence": ["gates not run"], "residualRisk": []}


def assessor_script(tmp_path: Path, garbage_runs: int, answer: dict[str, object] | None = None) -> str:
    """An assessor that prints garbage ``garbage_runs`` times, then ``answer``.
    It also saves the evidence it was given."""
    script = tmp_path / "assessor.py"
    script.write_text(
        "import json, pathlib, sys\n"
        f"here = pathlib.Path({str(tmp_path)!r})\n"
        "(here / 'evidence.json').write_text(sys.stdin.read())\n"
        "count = here / 'count'\n"
        "runs = int(count.read_text()) + 1 if count.exists() else 1\n"
        "count.write_text(str(runs))\n"
        f"if runs <= {garbage_runs}:\n"
        "    print('{not json' if runs % 2 else json.dumps({'classification': 'keep it'}))\n"
        "else:\n"
        f"    print(json.dumps({answer or VALID!r}))\n"
    )
    return f"{sys.executable} {script}"


def run_assess(repo: Path, assessor: str) -> dict[str, object]:
    result = harn(repo, "assess", "roadmap-1.2", "--assessor", assessor, "--json")
    assert result.code == 0, result.err
    doc: dict[str, object] = result.json()
    assert_valid(doc, "assessment")
    return doc


def test_garbage_twice_then_valid_json_is_accepted_on_the_third_try(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    doc = run_assess(repo, assessor_script(tmp_path, garbage_runs=2))
    assert doc["classification"] == "adopt-partial"
    assert doc["reasons"] == ["a coherent slice"]
    assessor = doc["assessor"]
    assert isinstance(assessor, dict)
    assert assessor["kind"] == "external" and assessor["attempts"] == 3
    assert len(assessor["errors"]) == 2
    given = json.loads((tmp_path / "evidence.json").read_text())
    assert_valid(given, "evidence")
    assert given["branch"] == "roadmap-1.2"


def test_always_garbage_becomes_continue_manual_after_the_retries(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    doc = run_assess(repo, assessor_script(tmp_path, garbage_runs=99))
    assert doc["classification"] == "continue-manual"
    assert doc["reasons"] == ["assessor-invalid-output"]
    assert (tmp_path / "count").read_text() == "3"  # one try + harn.assessorRetries (2)


def test_configured_retries_bound_the_attempts(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    git(repo, "config", "harn.assessorRetries", "0")
    git(repo, "config", "harn.assessor", assessor_script(tmp_path, garbage_runs=99))
    result = harn(repo, "assess", "roadmap-1.2", "--json")
    assert result.json()["reasons"] == ["assessor-invalid-output"]
    assert (tmp_path / "count").read_text() == "1"


def test_a_time_out_is_a_fault_and_not_retried(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    git(repo, "config", "harn.assessorTimeout", "1")
    doc = run_assess(repo, "sh -c 'echo x >> attempts; sleep 30'")
    assert doc["classification"] == "continue-manual"
    assert doc["reasons"] == ["assessor-fault"]
    assessor = doc["assessor"]
    assert isinstance(assessor, dict) and "timed out" in assessor["fault"]
    assert (repo / "attempts").read_text() == "x\n"


def test_an_assessor_that_cannot_start_is_a_fault(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    doc = run_assess(repo, "/no/such/assessor --flag")
    assert doc["reasons"] == ["assessor-fault"]


def test_external_adopt_complete_contradicted_by_the_evidence_is_downgraded(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="IN PROGRESS")
    claim = {"classification": "adopt-complete", "reasons": ["trust me"], "missingEvidence": [],
             "residualRisk": [], "evidence": {"forged": True}}
    doc = run_assess(repo, assessor_script(tmp_path, garbage_runs=0, answer=claim))
    assert doc["classification"] == "continue-manual"
    reasons = doc["reasons"]
    assert isinstance(reasons, list) and reasons[0] == "downgraded-adopt-complete"
    assert "missing-validation-evidence" in reasons
    evidence = doc["evidence"]
    assert isinstance(evidence, dict) and "forged" not in evidence  # the host's evidence, not the assessor's


# --- report check assessment ---------------------------------------------------


def test_report_check_accepts_a_real_assessment_and_rejects_broken_ones(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    text = harn(repo, "assess", "roadmap-1.2", "--json").out
    good = harn(repo, "report", "check", "assessment", "-", "--json", stdin=text)
    assert good.code == 0 and good.json()["ok"] is True
    doc = json.loads(text)
    bad_class = dict(doc, classification="keep-it")
    contradiction = dict(doc, classification="adopt-complete", missingEvidence=["gates"])
    failed = dict(doc, classification="adopt-partial",
                  evidence=dict(doc["evidence"], collectionError="OSError: boom"))
    for broken in (bad_class, contradiction, failed, {"schemaVersion": 1}):
        result = harn(repo, "report", "check", "assessment", "-", "--json", stdin=json.dumps(broken))
        assert result.code == 3, broken
        assert result.json()["ok"] is False and result.json()["stage"] == "assess"
    path = tmp_path / "not.json"
    path.write_text("{nope")
    assert harn(repo, "report", "check", "assessment", str(path)).code == 2


def test_assessor_retries_are_capped(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    git(repo, "config", "harn.assessorRetries", "1000000")
    result = harn(repo, "assess", "roadmap-1.2", "--assessor", assessor_script(tmp_path, garbage_runs=99))
    assert result.code == 2 and "harn.assessorRetries" in result.err
    assert not (tmp_path / "count").exists()  # refused before the assessor ran
    git(repo, "config", "harn.assessorRetries", "10")
    doc = run_assess(repo, assessor_script(tmp_path, garbage_runs=99))
    assert doc["reasons"] == ["assessor-invalid-output"]
    assert doc["assessor"]["attempts"] == 11  # type: ignore[index]
