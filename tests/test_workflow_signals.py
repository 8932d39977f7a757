"""SIGTERM mid-run: agents' process groups stopped, every task's place
recorded, every workspace left to cleanup, nothing lost [P1] [P6]."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from helpers import alive, descendants, git, harn, is_python_of_git_harn, ref
from wfrepo import setup


def test_sigterm_mid_run_stops_agents_and_loses_nothing(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 12.1 Has work when stopped\n- [ ] 12.2 Stopped while planning\n")
    wf.script({"12.1:implement": "commit-hang", "12.2:plan": "hang"})
    proc = subprocess.Popen(["git", "harn", "workflow", "run", "--parallel", "2", "--json"], cwd=wf.work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len([e for e in wf.log() if e["event"] == "hanging"]) < 2:
            time.sleep(0.1)
        hanging = [e for e in wf.log() if e["event"] == "hanging"]
        assert len(hanging) == 2, wf.log()
        harn_pids = [p for p in descendants(proc.pid) if is_python_of_git_harn(p)]
        assert harn_pids
        os.kill(harn_pids[0], signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, err
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
