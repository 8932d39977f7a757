"""Smaller items of issue 28 (item 7): task ids are ASCII digits, and the
workflow record that ``git harn sync`` carries off the machine names no
home folder and keeps only a bounded tail of agent stderr [P5]."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_harn.tasks.roadmap import parse_roadmap, parse_task_branch
from tests.kit.harn import stored_workflow, stored_workflow_files
from tests.kit.workflow_repo import config_text, setup


@pytest.mark.parametrize("line", ["- [ ] １.２ Full-width digits", "- [ ] ١.١ Arabic-Indic digits",
                                  "- [ ] 1.٣ One of each"])
def test_a_task_id_of_other_digits_is_no_task(line: str) -> None:
    assert [t.id for t in parse_roadmap(f"# R\n\n{line}\n- [ ] 1.1 Plain\n")] == ["1.1"]
    assert [t.id for t in parse_roadmap(f"# R\n\n{line}\n")] == []


def test_a_task_branch_of_other_digits_is_no_task_branch() -> None:
    assert parse_task_branch("roadmap-1.2") == ("1.2", None)
    assert parse_task_branch("roadmap-１.２") is None
    assert parse_task_branch("roadmap-1.2-addendum-٣") is None


CRASHER = r'''
import os, sys
if os.environ["HARN_TASK_ID"] == "1.2":
    sys.stderr.write("E" * 20000 + "\n")
    sys.exit(9)
here = os.path.dirname(os.path.abspath(__file__))
os.execv(sys.executable, [sys.executable, os.path.join(here, "agent.py"), *sys.argv[1:]])
'''


def test_the_stored_record_names_the_home_folder_as_a_tilde_and_bounds_stderr(tmp_path: Path) -> None:
    home = tmp_path  # the clone, its worktrees and the agents all live in the operator's home
    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First thing\n- [ ] 1.2 Crashes\n",
               config=config_text(agents).replace('agent.py", "plan"', 'crash.py", "plan"'))
    (agents / "crash.py").write_text(CRASHER)
    done = wf.run("--json", env={"HOME": str(home)})
    doc = done.json()
    assert [t["status"] for t in doc["tasks"]] == ["done", "infra-fault"], doc["tasks"]
    assert doc["tasks"][0]["workspace"]["path"].startswith(str(home))  # the local answer: real paths
    ref = f"refs/harnery/workflows/{doc['workflowId']}"
    for path, text in stored_workflow_files(wf.work, ref).items():
        assert str(home) not in text, path
    body = stored_workflow(wf.work, ref)
    assert body["tasks"][0]["workspace"]["path"].startswith("~/worktrees/")
    assert body["agents"]["plan"]["command"][1] == "~/agents/crash.py"
    crashed = body["tasks"][1]
    assert 100 < crashed["detail"].count("E") <= 320  # a bounded tail of the stderr, not 20000 characters
    assert all(len(json.dumps(stage)) < 4000 for stage in crashed["stages"].values())
