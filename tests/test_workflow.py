"""git harn workflow run: the ordinary path end to end (SPEC §7, seed 002)."""

from __future__ import annotations

from pathlib import Path

from helpers import all_refs, assert_valid, git, ref
from wfrepo import setup


def test_four_tasks_land_each_as_one_squash_with_box_ticked(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    done = wf.run("--json")
    assert done.code == 0, done.err + done.out
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert [t["status"] for t in doc["tasks"]] == ["done"] * 4
    # the dependency 1.2 waited for 1.1 and landed in the same run
    assert doc["selected"].index("1.2") > doc["selected"].index("1.1")
    roadmap = wf.remote_file("docs/roadmap.md")
    for task in ("1.1", "1.2", "1.3", "1.4"):
        assert f"- [x] {task}" in roadmap
    subjects = wf.remote_log()
    assert len(subjects) == 5  # initial + one squash per task
    refs = all_refs(wf.work)
    for task in doc["tasks"]:
        kept = f"refs/harnery/integrated/{task['taskId']}"
        assert kept in refs and refs[kept] == task["tip"]
        assert task["workspace"]["state"] == "released"
        assert not Path(task["workspace"]["path"]).exists()
    assert not [r for r in refs if r.startswith("refs/heads/roadmap-")]
    assert doc["faultMetrics"] == {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0}
    assert doc["summary"] == "4 tasks: 4 done"
    assert ref(wf.work, f"refs/harnery/workflows/{doc['workflowId']}")
    shown = git(wf.work, "show", f"refs/harnery/workflows/{doc['workflowId']}:workflow.json")
    assert '"summary": "4 tasks: 4 done"' in shown
