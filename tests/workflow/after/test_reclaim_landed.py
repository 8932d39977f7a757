"""reclaim of a task's workspace whose work already landed (issue 45, item 3)
[W5] [L3] [P1].

The runner is killed (its whole process group) after task 1.1's squash was
pushed; the operator deletes ``roadmap-1.1`` and reclaims 1.1's run. The
work is on the base already: reclaim keeps the tip where settle would
(``refs/harnery/integrated/1.1``) and releases the workspace, making no
``harnery/salvage/<run>`` of it.
"""

from __future__ import annotations

from pathlib import Path

from tests.kit.harn import all_refs, git, harn, record, ref
from tests.kit.runners import at_failpoint
from tests.kit.workflow_repo import setup

ROADMAP = "# R\n\n- [ ] 1.1 First\n- [ ] 1.3 Second\n"


def _killed_after_push(tmp_path: Path) -> tuple[object, str, str, Path]:
    wf = setup(tmp_path, roadmap=ROADMAP)
    runner = at_failpoint(wf.work, "integrate-after-push", "workflow", "run")
    runner.kill_group()
    dead = [n.rsplit("/", 1)[1] for n in all_refs(wf.work) if n.startswith("refs/harnery/workflows/")][0]
    run_id = f"{dead}-1.1"
    assert git(wf.remote, "log", "--format=%H", "-1", "--grep", "Harnery-Task: 1.1", "main")
    return wf, run_id, git(wf.work, "rev-parse", "roadmap-1.1"), Path(record(wf.work, run_id)["path"])


def _salvages(repo: Path) -> list[str]:
    return [n for n in all_refs(repo) if n.startswith("refs/heads/harnery/salvage/")]


def test_reclaim_of_a_landed_tasks_workspace_releases_it_without_salvage(tmp_path: Path) -> None:
    wf, run_id, tip, workspace = _killed_after_push(tmp_path)
    git(wf.work, "branch", "-D", "roadmap-1.1")  # the operator tidies up

    done = harn(wf.work, "reclaim", run_id, "--yes", "--json")
    assert done.code == 0, done.err
    assert _salvages(wf.work) == [], done.out  # today: harnery/salvage/<run> of landed commits
    assert done.json()["salvage"] is None and done.json()["state"] == "released"
    assert "landed" in done.json()["reason"], done.json()["reason"]
    assert git(wf.work, "merge-base", "--is-ancestor", tip, "refs/harnery/integrated/1.1", check=False) == ""
    assert not workspace.exists() and ref(wf.work, "refs/heads/roadmap-1.1") is None
    text = harn(wf.work, "reclaim", run_id)
    assert text.code == 0 and "already_gone" in text.out


def test_reclaim_of_a_landed_tasks_workspace_with_its_branch_kept(tmp_path: Path) -> None:
    wf, run_id, tip, workspace = _killed_after_push(tmp_path)
    done = harn(wf.work, "reclaim", run_id, "--json")
    assert done.code == 0, done.err
    assert _salvages(wf.work) == [] and done.json()["state"] == "released", done.out
    assert git(wf.work, "merge-base", "--is-ancestor", tip, "refs/harnery/integrated/1.1", check=False) == ""
    assert not workspace.exists()


def test_uncommitted_work_beside_a_landed_tip_is_still_salvaged(tmp_path: Path) -> None:
    """Landed commits are not salvaged; what the squash never held is [P1]."""
    wf, run_id, tip, workspace = _killed_after_push(tmp_path)
    (workspace / "after.txt").write_text("written after the push\n")
    done = harn(wf.work, "reclaim", run_id, "--json")
    assert done.code == 0, done.err
    salvage = done.json()["salvage"]
    assert salvage is not None and salvage["paths"] == ["after.txt"]
    assert git(wf.work, "merge-base", "--is-ancestor", tip, "refs/harnery/integrated/1.1", check=False) == ""
