"""``git harn sync`` in the clone where a workflow run runs, while a stage
is in flight [T2]: the operator's own tool must not be taken for the stage's
tampering. A sync there writes only what the seal does not watch (the
remote-tracking copies under ``refs/harnery-remotes/``, its own staging
refs); what it would merge into this clone's records waits for a sync
after the run. A hostile stage that forges a tracking copy gets nothing:
no record of it is taken, pushed or obeyed.

The stage agents wait for a file the test writes (``WF.go``), so the sync
runs while a stage is in flight."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.kit.harn import git, harn
from tests.kit.runners import record_id, start, waiting_at
from tests.kit.workflow_repo import WF, setup

ROADMAP = "# Roadmap\n\n- [ ] 1.1 First thing\n"



def _refs(repo: Path, prefix: str = "") -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", *([prefix] if prefix else []))
    return dict(line.split(" ", 1) for line in out.splitlines())


def _other_clone_with_a_record(wf: WF) -> tuple[Path, str]:
    """Another machine's clone that ran a command and shared its record: (clone, record ref)."""
    other = wf.tmp / "beta"
    git(wf.tmp, "clone", "-q", str(wf.remote), str(other))
    git(other, "config", "harn.host", "beta")
    git(other, "config", "harn.worktreeRoot", str(wf.tmp / "beta-worktrees"))
    ran = harn(other, "run", "--", "true")
    assert ran.code == 0, ran.err
    shared = harn(other, "sync")
    assert shared.code == 0, shared.err
    runs = _refs(other, "refs/harnery/runs/")
    assert len(runs) == 1
    return other, next(iter(runs))


def _tampers(wf: WF, workflow_id: str) -> list[dict[str, Any]]:
    evidence = wf.work / ".git" / "harnery" / "workflow" / workflow_id / "tamper"
    if not evidence.exists():
        return []
    return [json.loads((folder / "changes.json").read_text()) for folder in sorted(evidence.iterdir())
            if (folder / "changes.json").exists()]


def test_a_sync_in_the_runner_clone_during_a_stage_is_no_tamper_and_the_task_lands(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    _, theirs = _other_clone_with_a_record(wf)
    wf.script({"1.1:plan": "wait"})
    with start(wf.work, "workflow", "run", "--json", "--sandbox", "off") as run:
        waiting_at(wf, "1.1", "plan")
        workflow_id = record_id(wf.work)
        synced = harn(wf.work, "sync")  # the operator's own tool, while the plan stage is in flight
        assert synced.code == 0, synced.err
        # the other machine's record is here as the remote holds it, under the tracking copies
        tracked = _refs(wf.work, "refs/harnery-remotes/")
        assert tracked[theirs.replace("refs/harnery/", "refs/harnery-remotes/origin/")] == \
            _refs(wf.remote)[theirs]
        # this clone's records are not moved while the run's seal is armed: merged by a sync after it
        assert theirs not in _refs(wf.work, "refs/harnery/runs/")
        assert "after the run" in synced.out + synced.err, synced.out + synced.err
        # the run's own record went to the remote: another machine can watch it
        assert f"refs/harnery/workflows/{workflow_id}" in _refs(wf.remote)
        wf.go("1.1", "plan")
        out, err = run.proc.communicate(timeout=180)
    doc = json.loads(out)
    assert run.proc.returncode == 0, err
    found = doc["tasks"][0]
    assert found["status"] == "done", found.get("detail")
    assert doc["faultMetrics"]["tamperFaults"] == 0
    assert _tampers(wf, workflow_id) == []
    assert "- [x] 1.1" in wf.remote_file("docs/roadmap.md")
    # once no run runs, a sync merges what waited
    after = harn(wf.work, "sync")
    assert after.code == 0, after.err
    assert _refs(wf.work, "refs/harnery/runs/")[theirs] == _refs(wf.remote)[theirs]


# A plan agent that forges the tracking copies sync keeps of what the remote
# holds, then hands over to the honest scripted agent.
FORGER = r'''
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
def git(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout.strip()
if os.environ["HARN_STAGE"] == "plan":
    planted = git("commit-tree", "-p", "HEAD", "-m", "forged record", git("rev-parse", "HEAD^{tree}"))
    open(os.path.join(here, "planted"), "w").write(planted)
    names = git("for-each-ref", "--format=%(refname)", "refs/harnery/workflows/", "refs/harnery/runs/").split()
    names += ["refs/harnery/runs/run-forged", "refs/harnery/sync-summary-chain"]
    for name in names:
        git("update-ref", name.replace("refs/harnery/", "refs/harnery-remotes/origin/", 1), planted)
os.execv(sys.executable, [sys.executable, os.path.join(here, "agent.py"), *sys.argv[1:]])
'''


def test_a_stage_that_forges_the_tracking_copies_gets_nothing_from_them(tmp_path: Path) -> None:
    """Not compared by the seal, so no tamper; and no reader takes them for
    more than a hint: the next sync fetches over each forged copy of a ref the
    remote holds, and takes nothing from one it does not hold."""
    wf = setup(tmp_path, roadmap=ROADMAP)
    _, theirs = _other_clone_with_a_record(wf)
    synced = harn(wf.work, "sync")  # the other machine's record, here and tracked, before the run
    assert synced.code == 0, synced.err
    config = (wf.work / ".harn" / "workflow.toml").read_text().replace("agent.py", "forger.py")
    (wf.agents / "forger.py").write_text(FORGER)
    (wf.work / ".harn" / "workflow.toml").write_text(config)
    git(wf.work, "commit", "-q", "-am", "agents that forge")
    git(wf.work, "push", "-q", "origin", "main")

    done = wf.run("--json", "--sandbox", "off")

    doc = done.json()
    assert done.code == 0, done.err
    assert doc["tasks"][0]["status"] == "done", doc["tasks"][0].get("detail")
    assert doc["faultMetrics"]["tamperFaults"] == 0
    planted = (wf.agents / "planted").read_text()
    workflow_id = doc["workflowId"]
    forged = {name for name, oid in _refs(wf.work, "refs/harnery-remotes/").items() if oid == planted}
    assert f"refs/harnery-remotes/origin/workflows/{workflow_id}" in forged  # it did write them
    assert "refs/harnery-remotes/origin/runs/run-forged" in forged
    # the records the run kept are its own
    assert planted not in _refs(wf.work, "refs/harnery/").values()

    after = harn(wf.work, "sync", "--json")
    assert after.code == 0, after.err
    remote, here = _refs(wf.remote), _refs(wf.work)
    assert planted not in remote.values()  # nothing forged was pushed
    assert planted not in {oid for name, oid in here.items() if name.startswith("refs/harnery/")}
    assert "refs/harnery/runs/run-forged" not in here and "refs/harnery/runs/run-forged" not in remote
    # every tracking copy of a ref the remote holds is the remote's again
    for name, oid in remote.items():
        if name.startswith("refs/harnery/"):
            assert here[name.replace("refs/harnery/", "refs/harnery-remotes/origin/", 1)] == oid, name
    assert here[theirs] == remote[theirs]
    assert remote[f"refs/harnery/workflows/{workflow_id}"] == here[f"refs/harnery/workflows/{workflow_id}"]
    # a copy of a ref the remote never held stays a stray copy: not a record, not pushed
    assert here["refs/harnery-remotes/origin/runs/run-forged"] == planted
