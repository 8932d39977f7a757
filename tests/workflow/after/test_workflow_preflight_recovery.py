"""End to end: a failing auth preflight blocks the recovery of surviving
branches too. A real earlier run leaves `roadmap-<id>` in a preserved
workspace; the relaunch with `--resume-partial-branches` has a preflight that
fails, so nothing is assessed or resumed and nothing in the clone changes."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.kit.harn import all_refs, assert_valid, git, ref
from tests.kit.recovery_repo import ASSESSOR, ONE, RESUME, survivor
from tests.kit.workflow_repo import WF, config_text, setup


def _wf(tmp: Path) -> WF:
    """The recovery_repo setup with an external assessor (it leaves a file when it
    runs) and a preflight that fails once ``refuse`` exists."""
    agents = tmp / "agents"
    flag = tmp / "refuse"
    check = (f"import os, sys; open({str(tmp / 'preflight-ran')!r}, 'a').write(os.environ['HARN_STAGE'] + '\\n'); "
             f"refused = os.path.exists({str(flag)!r}); "
             "sys.stderr.write('credentials refused\\n' if refused else ''); sys.exit(1 if refused else 0)")
    extra = (f"\n[agents.assess]\ncommand = [{json.dumps(sys.executable)}, "
             f"{json.dumps(str(agents / 'assessor.py'))}]\n"
             f"\n[agents.preflight]\ncommand = [{json.dumps(sys.executable)}, \"-c\", {json.dumps(check)}]\n")
    wf = setup(tmp, roadmap=ONE, config=config_text(agents, extra=extra,
                                                    workflow="stageTimeout = 30\nreviewRounds = 1\n"))
    (agents / "assessor.py").write_text(ASSESSOR)
    return wf


def _survivor(wf: WF) -> dict[str, Any]:
    """``recovery_repo.survivor``, with the in-run assessment's trace of the assessor wiped."""
    first = survivor(wf)
    assert first["assessment"] is not None  # the failed task was assessed by the external assessor
    for found in wf.agents.glob("assessed-*.json"):
        found.unlink()
    return first


def _files(path: Path) -> dict[str, str]:
    """Every file under ``path`` by content hash (a worktree's .git link included)."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def _state(wf: WF, worktree: Path) -> dict[str, Any]:
    common = wf.work / ".git"
    return {
        "refs": all_refs(wf.work),  # every ref, refs/harnery included
        "worktrees": git(wf.work, "worktree", "list", "--porcelain"),
        "survivor": _files(worktree),
        "survivor-status": git(worktree, "status", "--porcelain", "--ignored"),
        "work-status": git(wf.work, "status", "--porcelain", "--ignored"),
        "harnery": sorted(str(p.relative_to(common)) for p in (common / "harnery").rglob("*")),
        "indexes": {str(p.relative_to(common)): hashlib.sha256(p.read_bytes()).hexdigest()
                    for p in [common / "index", *sorted((common / "worktrees").glob("*/index"))] if p.exists()},
        "agents": sorted(p.name for p in wf.agents.iterdir()),
    }


@pytest.mark.parametrize("mode", ["assess", "review", "continue"])
def test_a_failing_preflight_blocks_recovery_and_changes_nothing(tmp_path: Path, mode: str) -> None:
    wf = _wf(tmp_path)
    first = _survivor(wf)  # a real run: reviewers never approve, the branch survives
    worktree = Path(first["workspace"]["path"])
    tip = ref(wf.work, "refs/heads/roadmap-5.1")
    assert tip is not None and worktree.is_dir()
    assert (tmp_path / "preflight-ran").read_text() == "preflight\n"  # the earlier run passed it
    (tmp_path / "refuse").touch()
    before = _state(wf, worktree)
    assert "refs/heads/roadmap-5.1" in before["refs"] and str(worktree) in before["worktrees"]
    assert not any(name.startswith("assessed-") for name in before["agents"])

    done = wf.run("--json", *RESUME, "--resume-mode", mode)
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert doc["blocked"] == "auth-preflight-failed" and doc["outcome"] == "workflow-blocked"
    assert doc["preflight"]["ok"] is False and [c["ok"] for c in doc["preflight"]["commands"]] == [False]
    assert "exited with 1: credentials refused" in doc["halted"]
    assert doc["tasks"] == [] and doc["selected"] == []
    assert doc["faultMetrics"] == {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}
    assert doc["assessments"] == [] and doc["salvages"] == []
    assert (tmp_path / "preflight-ran").read_text() == "preflight\n" * 2

    rec = doc["recovery"]
    assert rec["mode"] == mode and rec["blocked"] == "auth-preflight-failed"
    assert rec["candidates"] == ["roadmap-5.1"]  # discovered (read only) ...
    assert rec["assessed"] == [] and rec["resumed"] == []  # ... but neither assessed nor resumed
    assert rec["results"] == [{"taskId": "5.1", "branch": "roadmap-5.1", "classification": None,
                               "action": "not-run", "reason": "auth-preflight-failed"}]
    assert all(r["action"] == "not-run" for r in rec["results"])
    assert rec["skipped"] == []
    # the survivor is still there and did not land: unresolved, and said so
    assert [{k: v for k, v in u.items() if k != "next"} for u in rec["unresolved"]] == [
        {"id": "5.1", "branch": "roadmap-5.1", "classification": None, "action": "not-run",
         "reason": "auth-preflight-failed"}]
    # once the credential works, a resumed run goes on with it (the next step of each survivor)
    assert rec["unresolved"][0]["next"]["command"] == (
        "git harn workflow run --resume-partial-branches --resume-mode continue")
    assert doc["halted"].startswith("auth preflight ")  # the preflight's detail, not the recovery halt
    assert doc["summary"] == "0 tasks: blocked: auth-preflight-failed | needs-operator-recovery: 1 unresolved"

    # nothing changed: no workflow record (the blocked run writes none), no
    # branch, note, workspace record, worktree, index or file; no agent, no assessor
    after = _state(wf, worktree)
    assert after == before
    assert not any(r.startswith("refs/harnery/workflows/") and r not in before["refs"] for r in after["refs"])
    assert ref(wf.work, "refs/heads/roadmap-5.1") == tip
    assert not (wf.agents / "agent.log").exists()
    assert not any(name.startswith("assessed-") for name in after["agents"])
    # the one record of workflows there is the earlier run's
    listed = git(wf.work, "for-each-ref", "--format=%(refname)", "refs/harnery/workflows/").splitlines()
    assert listed == [f"refs/harnery/workflows/{first['runId'].removesuffix('-5.1')}"]


def test_once_the_preflight_passes_the_same_survivor_is_assessed(tmp_path: Path) -> None:
    """The control: the blocked relaunch above is blocked by the preflight, not by anything else."""
    wf = _wf(tmp_path)
    _survivor(wf)
    done = wf.run("--json", *RESUME)
    assert done.code == 3, done.err  # an assess-only survivor stays unresolved
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert doc["blocked"] is None and doc["preflight"]["ok"] is True
    rec = doc["recovery"]
    assert rec["blocked"] is None and rec["assessed"] == ["roadmap-5.1"]
    assert [r["action"] for r in rec["results"]] == ["report-only"]
    assert (wf.agents / "assessed-roadmap-5.1.json").exists()
