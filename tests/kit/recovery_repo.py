"""Survivors for the recovery tests: task branches an earlier run left
behind, made by a real failed run or by hand, and an external assessor."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.kit.harn import git, ref
from tests.kit.workflow_repo import WF, config_text, setup

ONE = "# R\n\n- [ ] 5.1 The task that failed\n"
RESUME = ("--resume-partial-branches",)

ASSESSOR = r'''
import json, os, sys
evidence = json.load(sys.stdin)
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "assessed-" + evidence["branch"] + ".json"), "w") as f:
    json.dump(evidence, f)
print(json.dumps({"classification": "adopt-complete", "reasons": ["the assessor says it is done"],
                  "missingEvidence": [], "residualRisk": ["external: the assessor saw a flaky test"]}))
'''


def wf_with(tmp: Path, roadmap: str = ONE, external: bool = False, rounds: int = 1) -> WF:
    agents = tmp / "agents"
    extra = ""
    if external:
        extra = (f"\n[agents.assess]\ncommand = [{json.dumps(sys.executable)}, "
                 f"{json.dumps(str(agents / 'assessor.py'))}]\n")
    wf = setup(tmp, roadmap=roadmap, config=config_text(
        agents, extra=extra, workflow=f"stageTimeout = 30\nreviewRounds = {rounds}\n"))
    (agents / "assessor.py").write_text(ASSESSOR)
    return wf


def survivor(wf: WF, task: str = "5.1") -> dict[str, Any]:
    """A first run whose integration halts (an earlier integrate of the task
    died midway, and is not retried [I4]): the branch survives in a preserved
    workspace, committed, plan COMPLETE, gates passed and both reviewers'
    approval noted on its tip. The operator then looks and clears the
    marker. (A branch its reviewers refused is no adopt-complete survivor:
    issue 21.)"""
    marker = wf.work / ".git" / "harnery" / "integrate" / f"{task.replace('.', '-')}.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"taskId": task, "pid": 1, "startedAt": "earlier"}))
    first = wf.run("--json")
    assert first.code == 3, first.err
    task_result: dict[str, Any] = next(t for t in first.json()["tasks"] if t["taskId"] == task)
    assert task_result["status"] == "halted" and task_result["stage"] == "integrate"
    assert task_result["review"]["approved"] is True
    assert task_result["workspace"]["state"] == "preserved_unmerged"
    (wf.agents / "agent.log").unlink()
    marker.unlink()
    return task_result


def refused_survivor(wf: WF, task: str = "5.1") -> dict[str, Any]:
    """A first run whose reviewers never approve: the branch survives in a
    preserved workspace, committed, plan COMPLETE, gates passed on its tip,
    and the reviewers' refusal noted there."""
    wf.script({f"{task}:review": "never-approve"})
    first = wf.run("--json")
    assert first.code == 3, first.err
    task_result: dict[str, Any] = next(t for t in first.json()["tasks"] if t["taskId"] == task)
    assert task_result["status"] == "failed" and task_result["stage"] == "review"
    assert task_result["workspace"]["state"] == "preserved_unmerged"
    (wf.agents / "agent.log").unlink()
    wf.script({})
    return task_result


def hand_branch(wf: WF, branch: str, files: dict[str, str], message: str = "by hand") -> str:
    """A branch left by some earlier run with no workspace: commits on origin/main."""
    git(wf.work, "switch", "-q", "-c", branch, "origin/main")
    for name, text in files.items():
        (wf.work / name).parent.mkdir(parents=True, exist_ok=True)
        (wf.work / name).write_text(text)
    git(wf.work, "add", "-A")
    git(wf.work, "commit", "-q", "-m", message)
    git(wf.work, "switch", "-q", "main")
    tip = ref(wf.work, f"refs/heads/{branch}")
    assert tip is not None
    return tip


