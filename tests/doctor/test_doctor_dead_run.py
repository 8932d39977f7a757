"""What a dead runner left, as doctor names it: its workspaces, the gates
checkout it kept in the temp folder, its claims, the agents still running
and the integration worktree a killed integration left, each with its disk
use, counted in the workspace disk use; settling clears them [L3] [P6]."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.kit.harn import git, harn, ref
from tests.kit.runners import alive, start, wait_for_log
from tests.kit.workflow_repo import setup

ROADMAP = "# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n  Requires: 1.1\n"


def _doctor(repo: Path) -> dict[str, Any]:
    done = harn(repo, "doctor", "--json")
    assert done.code in (0, 1), done.err
    document: dict[str, Any] = json.loads(done.out)
    return document


def _gone(document: dict[str, Any]) -> dict[str, Any]:
    found = [f for f in document["findings"] if f["code"] == "workflow-runner-gone"]
    assert len(found) == 1, document["findings"]
    return found[0]


@pytest.mark.usefixtures("unsandboxed")  # it reads the agents' pids; under the sandbox they die with the runner
def test_the_dead_runner_finding_names_all_it_left_with_disk_use_and_settle_clears_it(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    assert harn(wf.work, "hooks", "install").code == 0
    wf.script({"1.2:review": "family-hang"})
    runner = start(wf.work, "workflow", "run", "--claims", env={"HARN_WATCHDOG": "off"})
    try:
        wait_for_log(wf.log, lambda log: any(e["event"] == "hanging" for e in log), seconds=180)
        family = json.loads((wf.agents / "family-1.2-review").read_text())
    finally:
        runner.kill_group()
    assert alive(family["agent"]) and alive(family["child"])
    assert ref(wf.remote, "refs/harnery/claims/1.2") is not None
    document = _doctor(wf.work)
    found = _gone(document)
    left = {item["kind"]: item for item in found["subject"]["left"]}
    assert set(left) >= {"workspace", "gates-checkout", "claim", "agents"}, left
    workspace, gates = left["workspace"], left["gates-checkout"]
    assert Path(workspace["path"]).is_dir() and workspace["diskBytes"] > 0
    assert Path(gates["path"]).name.startswith("git-harn-gates-") and gates["diskBytes"] > 0
    assert (Path(gates["path"]) / "tree").is_dir()
    assert left["claim"]["taskId"] == "1.2" and left["claim"]["remote"] == "origin"
    pids = {pid for item in found["subject"]["left"] if item["kind"] == "agents" for pid in item["pids"]}
    assert {family["agent"], family["child"]} <= pids, found["subject"]["left"]
    assert found["diskBytes"] >= workspace["diskBytes"] + gates["diskBytes"]
    for words in (workspace["path"], gates["path"], "claim on task 1.2 on origin", str(family["child"])):
        assert words in found["why"], found["why"]
    assert document["summary"]["workspaceDiskBytes"] >= found["diskBytes"]
    human = harn(wf.work, "doctor")
    assert "workspace disk use: none" not in human.out and gates["path"] in human.out
    # what settling clears is gone after it
    assert harn(wf.work, "workflow", "settle", found["subject"]["workflowId"]).code == 0
    deadline = time.monotonic() + 10
    while alive(family["child"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(family["agent"]) and not alive(family["child"])
    assert not os.path.exists(gates["path"])
    assert gates["path"] not in git(wf.work, "worktree", "list", "--porcelain")
    assert ref(wf.remote, "refs/harnery/claims/1.2") is None
    assert "workflow-runner-gone" not in [f["code"] for f in _doctor(wf.work)["findings"]]
