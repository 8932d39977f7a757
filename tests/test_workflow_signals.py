"""SIGTERM mid-run: agents' process groups stopped, every task's place
recorded, every workspace left to cleanup, nothing lost [P1] [P6]."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import alive, git, harn, ref
from wfrepo import setup, sigterm_when_hanging


def test_sigterm_mid_run_stops_agents_and_loses_nothing(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 12.1 Has work when stopped\n- [ ] 12.2 Stopped while planning\n")
    wf.script({"12.1:implement": "commit-hang", "12.2:plan": "hang"})
    code, out, err, hanging = sigterm_when_hanging(wf, ["--parallel", "2", "--json"], 2)
    assert code == 3, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["outcome"] == "workflow-interrupted"
    assert doc["halted"].startswith("interrupted by")
    tasks = {t["taskId"]: t for t in doc["tasks"]}
    assert (tasks["12.1"]["status"], tasks["12.1"]["stage"]) == ("halted", "implement")
    assert (tasks["12.2"]["status"], tasks["12.2"]["stage"]) == ("halted", "plan")
    for entry in hanging:  # the agents' process groups are gone
        assert not alive(entry["pid"])
    # 12.1's commit is kept: its workspace was preserved by cleanup, the branch holds the work
    assert tasks["12.1"]["workspace"]["state"] == "preserved_unmerged"
    tip = ref(wf.work, "refs/heads/roadmap-12.1")
    assert tip and "work-12.1.txt" in git(wf.work, "show", "--name-only", "--format=", tip)
    assert Path(tasks["12.1"]["workspace"]["path"]).is_dir()
    # the record says where each task stood
    shown = harn(wf.work, "workflow", "show", doc["workflowId"], "--json").json()
    assert {t["taskId"]: t["stage"] for t in shown["tasks"]} == {"12.1": "implement", "12.2": "plan"}
    assert shown["interrupted"] is True
    assert "- [ ] 12.1" in wf.remote_file("docs/roadmap.md")
    status = harn(wf.work, "status", "--json").json()
    assert status is not None
