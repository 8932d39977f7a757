"""Auth preflight: [agents.preflight] runs before anything is created; a
failure blocks the run with nothing created (issue 13) [R3]."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.kit.fault_repo import fault_setup, runs
from tests.kit.harn import all_refs, assert_valid

ONE = "# R\n\n- [ ] 22.1 Needs credentials\n"


def _check(tmp: Path, name: str, code: int) -> str:
    marker = tmp / f"preflight-{name}"
    script = (f"import os, sys; open({str(marker)!r}, 'w').write(os.environ['HARN_STAGE']); "
              f"sys.stderr.write('token for {name} refused\\n'); sys.exit({code})")
    return json.dumps([sys.executable, "-c", script])


def test_a_failing_auth_preflight_creates_nothing(tmp_path: Path) -> None:
    extra = f"\n[agents.preflight]\ncommands = [{_check(tmp_path, 'ok', 0)}, {_check(tmp_path, 'bad', 1)}]\n"
    wf = fault_setup(tmp_path, ONE, extra=extra)
    before = all_refs(wf.work)
    done = wf.run("--json")
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert doc["blocked"] == "auth-preflight-failed" and doc["outcome"] == "workflow-blocked"
    assert doc["tasks"] == [] and doc["selected"] == []
    assert doc["remediationSuppressed"] is True
    assert [c["ok"] for c in doc["preflight"]["commands"]] == [True, False]
    assert "exited with 1: token for bad refused" in doc["halted"]
    assert (tmp_path / "preflight-bad").read_text() == "preflight"
    # nothing created: no record, no branch, no worktree, no agent ran
    assert all_refs(wf.work) == before
    assert not (tmp_path / "worktrees").exists()
    assert not (wf.work / ".git" / "harnery" / "workflow").exists()
    assert runs(wf) == [] and not (wf.agents / "agent.log").exists()
    human = wf.run()
    assert human.code == 3 and "blocked: auth-preflight-failed" in human.out


def test_a_passing_preflight_lets_the_run_start(tmp_path: Path) -> None:
    extra = f"\n[agents.preflight]\ncommand = {_check(tmp_path, 'ok', 0)}\n"
    wf = fault_setup(tmp_path, ONE, extra=extra)
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert doc["blocked"] is None and doc["preflight"]["ok"] is True
    assert doc["tasks"][0]["status"] == "done"
    dry = wf.run("--json", "--dry-run")
    assert dry.code == 0 and dry.json()["preflight"] is None  # a dry run runs nothing
