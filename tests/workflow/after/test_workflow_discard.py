"""git harn workflow discard: a surviving task branch retired on purpose, its
work salvaged first, never a bare delete (issue 14) [R8] [P1] [P2]."""

from __future__ import annotations

from pathlib import Path

from tests.kit.harn import all_refs, assert_valid, git, harn, ref
from tests.kit.recovery_repo import RESUME, hand_branch, survivor, wf_with

# --- discard ------------------------------------------------------------------------


def test_discard_salvages_the_work_then_removes_the_branch(tmp_path: Path) -> None:
    wf = wf_with(tmp_path)
    first = survivor(wf)
    worktree = Path(first["workspace"]["path"])
    (worktree / "stray.txt").write_text("uncommitted work\n")
    tip = ref(wf.work, "refs/heads/roadmap-5.1")
    before = all_refs(wf.work)
    refused = harn(wf.work, "workflow", "discard", "5.1")
    assert refused.code == 2 and "--yes" in refused.err and all_refs(wf.work) == before
    assert harn(wf.work, "workflow", "discard", "x;y", "--yes").code == 2
    done = harn(wf.work, "workflow", "discard", "5.1", "--yes", "--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert_valid(doc, "workflow-discard")
    assert doc["deleted"] is True and doc["workspaces"][0]["state"] == "released"
    # the reclaim deleted the branch it had just salvaged: said so, not "already gone" (issue 23 item 11)
    assert doc["reason"] == f"branch roadmap-5.1 deleted by the reclaim of run {first['runId']}"
    salvage = doc["workspaces"][0]["salvage"]["ref"]
    assert salvage == f"refs/heads/harnery/salvage/{first['runId']}"
    assert git(wf.work, "show", f"{salvage}:stray.txt") == "uncommitted work"
    assert git(wf.work, "merge-base", "--is-ancestor", str(tip), salvage) == ""  # the commits too [P1]
    assert ref(wf.work, "refs/heads/roadmap-5.1") is None and not worktree.exists()
    again = wf.run("--json", "--dry-run", *RESUME)
    assert again.json()["selected"] == ["5.1"]  # normal selection can rebuild the task
    assert harn(wf.work, "workflow", "discard", "5.1", "--yes").code == 2  # nothing left to discard


def test_discard_keeps_a_branch_without_workspace_on_a_salvage_branch(tmp_path: Path) -> None:
    wf = wf_with(tmp_path)
    tip = hand_branch(wf, "roadmap-5.1", {"w.txt": "work\n"})
    done = harn(wf.work, "workflow", "discard", "5.1", "--yes", "--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert doc["keptAt"] == "refs/heads/harnery/salvage/roadmap-5.1"
    assert ref(wf.work, doc["keptAt"]) == tip and ref(wf.work, "refs/heads/roadmap-5.1") is None
