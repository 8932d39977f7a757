"""A claim whose task has landed guards nothing: a runner killed between
its push and its claim release leaves one, and the next runner and
``git harn workflow claims`` drop it, with a lease on its value [L3] [P3]."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.kit.harn import assert_valid, git, harn
from tests.kit.workflow_repo import WF
from tests.workflow.ledger.test_workflow_claims import CLAIMS, claims_setup, clone, remote_claims

ROADMAP = "# R\n\n- [ ] 1.1 Lands, then the runner dies\n- [ ] 1.2 Later\n  Requires: 1.1\n"


def _killed_after_landing(tmp_path: Path) -> WF:
    wf = claims_setup(tmp_path, ROADMAP)
    # In a session of its own, as an operator's shell runs it: its process group dies with it.
    killed = subprocess.run(["git", "harn", "workflow", "run", "--json", "--max-tasks", "1"], cwd=wf.work,
                            env=dict(os.environ, HARN_FAILPOINT="workflow-before-release"), capture_output=True,
                            text=True, timeout=240, check=False, start_new_session=True)
    assert killed.returncode in (-9, 137), (killed.returncode, killed.stderr)  # SIGKILLed at the failpoint
    git(wf.work, "fetch", "-q", "origin")
    assert "- [x] 1.1" in git(wf.work, "show", "origin/main:docs/roadmap.md")  # landed: its box ticked
    assert f"{CLAIMS}1.1" in remote_claims(wf)  # and its claim left behind
    return wf


def test_the_next_runner_drops_the_claim_of_a_task_that_landed(tmp_path: Path) -> None:
    wf = _killed_after_landing(tmp_path)
    left = remote_claims(wf)[f"{CLAIMS}1.1"]
    # Another machine's runner: it cannot settle the dead run (not its clone's), yet the claim guards nothing.
    done = harn(clone(wf, "b"), "workflow", "run", "--json", timeout=240)
    assert done.code == 0, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert [d["taskId"] for d in doc["claims"]["dropped"]] == ["1.1"], (doc["claims"], doc["skipped"])
    assert doc["claims"]["dropped"][0]["oid"] == left
    assert [t["taskId"] for t in doc["tasks"]] == ["1.2"]
    assert remote_claims(wf) == {}


def test_workflow_claims_drops_the_claim_of_a_landed_task_from_any_clone(tmp_path: Path) -> None:
    wf = _killed_after_landing(tmp_path)
    left = remote_claims(wf)[f"{CLAIMS}1.1"]
    other = clone(wf, "b")
    listed = harn(other, "workflow", "claims", "--json")
    assert listed.code == 0, listed.err
    doc = listed.json()
    assert_valid(doc, "workflow-claims")
    assert doc["claims"] == []
    assert [(d["taskId"], d["oid"]) for d in doc["dropped"]] == [("1.1", left)]
    assert remote_claims(wf) == {}
    again = harn(other, "workflow", "claims")
    assert again.code == 0 and "no claims on origin" in again.out


def test_a_claim_of_a_task_not_landed_stays(tmp_path: Path) -> None:
    wf = _killed_after_landing(tmp_path)
    git(wf.remote, "update-ref", f"{CLAIMS}1.2", remote_claims(wf)[f"{CLAIMS}1.1"])  # a claim on 1.2, unticked
    listed = harn(clone(wf, "b"), "workflow", "claims", "--json")
    assert listed.code == 0, listed.err
    assert [d["taskId"] for d in listed.json()["dropped"]] == ["1.1"]
    assert list(remote_claims(wf)) == [f"{CLAIMS}1.2"]
