"""Several machines, one roadmap: task claims through the remote (issue 17).

Two or three clones of one bare remote; the scripted stage agents log every
invocation with the workflow that ran them, so "worked twice" is visible.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from tests.kit.harn import all_refs, assert_valid, descendants, git, harn, is_python_of_git_harn, ref
from tests.kit.workflow_repo import WF, config_text, setup

CLAIMS = "refs/harnery/claims/"

# Logs who ran which stage of which task, then behaves as the shared scripted agent.
WRAPPER = r'''
import json, os, runpy, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "invocations.log"), "a") as f:
    f.write(json.dumps({"task": os.environ["HARN_TASK_ID"], "stage": os.environ["HARN_STAGE"],
                        "workflow": os.environ["HARN_WORKFLOW_ID"], "worktree": os.environ["HARN_WORKTREE"],
                        "reviewer": os.environ.get("HARN_REVIEWER", "")}) + "\n")
sys.argv = [os.path.join(here, "agent.py"), *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def claims_setup(tmp: Path, roadmap: str, workflow: str = "stageTimeout = 60\nclaims = true\n",
                 hook: str | None = None) -> WF:
    agents = tmp / "agents"
    text = config_text(agents, workflow=workflow).replace("agent.py", "claims_agent.py")
    wf = setup(tmp, roadmap=roadmap, config=text)
    (wf.agents / "claims_agent.py").write_text(WRAPPER)
    if hook is not None:
        path = wf.remote / "hooks" / "pre-receive"
        path.write_text(hook)
        path.chmod(0o755)
    return wf


def clone(wf: WF, name: str) -> Path:
    path = wf.tmp / name
    git(wf.tmp, "clone", "-q", str(wf.remote), str(path))
    git(path, "config", "harn.worktreeRoot", str(wf.tmp / f"worktrees-{name}"))
    git(path, "config", "harn.host", f"host-{name}")
    return path


def invocations(wf: WF) -> list[dict[str, Any]]:
    path = wf.agents / "invocations.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def start_run(work: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(["git", "harn", "workflow", "run", "--json", *args], cwd=work, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def finish(proc: subprocess.Popen[str], timeout: float = 240) -> tuple[int, dict[str, Any], str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, json.loads(out) if out.strip() else {}, err


def remote_claims(wf: WF) -> dict[str, str]:
    out = git(wf.remote, "for-each-ref", "--format=%(refname) %(objectname)", CLAIMS)
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


def claim_body(repo: Path, rev: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(git(repo, "show", f"{rev}:claim.json"))
    return loaded


def test_two_runners_at_once_never_work_one_task_and_land_each_once(tmp_path: Path) -> None:
    roadmap = "# R\n\n" + "".join(f"- [ ] 7.{n} Task {n}\n" for n in range(1, 7))
    wf = claims_setup(tmp_path, roadmap)
    wf.script({"plan": "sleep:0.3"})
    other = clone(wf, "b")
    git(wf.work, "config", "harn.host", "host-a")
    runs = [start_run(wf.work), start_run(other)]
    results = [finish(p) for p in runs]
    for code, doc, err in results:
        assert code == 0, err
        assert_valid(doc, "workflow-result")
        assert doc["claims"]["made"] and doc["claims"]["kept"] == []
    docs = [doc for _, doc, _ in results]
    done = [{t["taskId"] for t in doc["tasks"] if t["status"] == "done"} for doc in docs]
    assert not done[0] & done[1]  # no task done by both
    assert done[0] | done[1] == {f"7.{n}" for n in range(1, 7)}
    # the invocation logs: every task's stages ran under exactly one workflow
    by_task: dict[str, set[str]] = {}
    for entry in invocations(wf):
        by_task.setdefault(entry["task"], set()).add(entry["workflow"])
    assert sorted(by_task) == [f"7.{n}" for n in range(1, 7)]
    assert all(len(workflows) == 1 for workflows in by_task.values()), by_task
    # each task landed exactly once: one squash per task on the remote, every box ticked
    assert len(wf.remote_log()) == 7
    assert wf.remote_file("docs/roadmap.md").count("- [x] 7.") == 6
    # every claim was released; whatever one runner skipped, it names the other as claimant
    assert remote_claims(wf) == {}
    for mine, theirs in ((docs[0], docs[1]), (docs[1], docs[0])):
        for skipped in mine["skipped"]:
            assert skipped["reason"] in ("claimed-elsewhere", "done-elsewhere"), skipped
            if skipped["reason"] == "claimed-elsewhere":
                assert theirs["workflowId"] in skipped["detail"]
        assert sorted(mine["claims"]["released"]) == sorted(mine["claims"]["made"])


RACE_HOOK = r'''#!/bin/sh
# Widen the window: a claim creation waits here before the remote decides.
while read old new ref; do
  echo "$ref $old" >> "$(dirname "$0")/../claim-pushes.log"
  case "$ref" in
    refs/harnery/claims/probe/*) ;;
    refs/harnery/claims/*) [ "$old" = 0000000000000000000000000000000000000000 ] && sleep 4 ;;
  esac
done
exit 0
'''


def test_a_claim_race_is_decided_by_the_remote(tmp_path: Path) -> None:
    wf = claims_setup(tmp_path, "# R\n\n- [ ] 8.1 Only one\n", hook=RACE_HOOK)
    other = clone(wf, "b")
    runs = [start_run(wf.work), start_run(other)]
    (code_a, doc_a, err_a), (code_b, doc_b, err_b) = (finish(p) for p in runs)
    assert code_a == 0 and code_b == 0, err_a + err_b
    # both clients saw the ref absent and sent a creation: the remote decided
    pushes = [line.split() for line in (wf.remote / "claim-pushes.log").read_text().splitlines()]
    creations = [p for p in pushes if p[0] == f"{CLAIMS}8.1" and set(p[1]) == {"0"}]
    assert len(creations) == 2, pushes
    winner, loser = (doc_a, doc_b) if doc_a["tasks"] else (doc_b, doc_a)
    assert [t["status"] for t in winner["tasks"]] == ["done"] and loser["tasks"] == []
    assert winner["claims"]["made"] == ["8.1"] and loser["claims"]["made"] == []
    lost = loser["skipped"]
    assert [s["reason"] for s in lost] == ["claimed-elsewhere"] and winner["workflowId"] in lost[0]["detail"]
    assert loser["claims"]["lost"][0]["workflowId"] == winner["workflowId"]
    assert {e["workflow"] for e in invocations(wf)} == {winner["workflowId"]}
    assert len(wf.remote_log()) == 2


@pytest.mark.usefixtures("unsandboxed")  # it signals the agent's pid, its own PID namespace's under the sandbox
def test_a_killed_runner_leaves_a_stale_claim_reported_and_taken_over_on_purpose(tmp_path: Path) -> None:
    wf = claims_setup(tmp_path, "# R\n\n- [ ] 9.1 Dies mid-task\n- [ ] 9.2 Waits for it\n  Requires: 9.1\n",
                      workflow="stageTimeout = 120\nclaims = true\nclaimHeartbeat = 0.5\nclaimStaleAfter = 4\n")
    wf.script({"9.1:implement": "commit-hang"})
    git(wf.work, "config", "harn.host", "host-a")
    proc = start_run(wf.work)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not [e for e in wf.log() if e["event"] == "hanging"]:
            time.sleep(0.1)
        hanging = [e for e in wf.log() if e["event"] == "hanging"]
        assert hanging, wf.log()
        first = remote_claims(wf)[f"{CLAIMS}9.1"]
        while time.time() < deadline and remote_claims(wf)[f"{CLAIMS}9.1"] == first:
            time.sleep(0.1)
        beat = remote_claims(wf)[f"{CLAIMS}9.1"]
        assert beat != first  # the heartbeat moved the claim
        git(wf.work, "fetch", "-q", "origin", f"{CLAIMS}9.1")
        assert first in git(wf.work, "rev-list", "FETCH_HEAD")  # on top of the first: a chain
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner's own group, which this test started
        proc.wait()
        for entry in wf.log():  # the agent's group, started by that runner
            if entry["event"] == "hanging":
                with suppress(ProcessLookupError):
                    os.killpg(entry["pid"], signal.SIGKILL)
    tip = ref(wf.work, "refs/heads/roadmap-9.1")
    assert tip and "work-9.1.txt" in git(wf.work, "show", "--name-only", "--format=", tip)
    # a second clone sees the claim, fresh, held by the dead host; it may not take it over yet
    other = clone(wf, "b")
    listed = harn(other, "workflow", "claims", "--json")
    assert listed.code == 0, listed.err
    assert_valid(listed.json(), "workflow-claims")
    claim = listed.json()["claims"][0]
    assert (claim["taskId"], claim["host"], claim["thisClone"]) == ("9.1", "host-a", False)
    # judged with an hour's grace, so a loaded machine cannot make it stale first
    dead = remote_claims(wf)[f"{CLAIMS}9.1"]
    refused = harn(other, "workflow", "claims", "--take-over", "9.1", "--yes", "--stale-after", "3600")
    assert refused.code == 3 and "is live" in refused.err
    assert remote_claims(wf)[f"{CLAIMS}9.1"] == dead  # the refusal changed nothing
    claim = wait_stale(wf.work, "9.1")
    assert claim["stale"] is True and claim["thisClone"] is True and claim["ageSeconds"] >= 4  # shown to a tenth
    human = harn(wf.work, "workflow", "claims")
    assert "stale" in human.out and "host-a" in human.out
    stale = remote_claims(wf)[f"{CLAIMS}9.1"]
    # not on a terminal and without --yes: nothing changes
    unconfirmed = harn(wf.work, "workflow", "claims", "--take-over", "9.1")
    assert unconfirmed.code == 2 and "not confirmed" in unconfirmed.err
    assert remote_claims(wf)[f"{CLAIMS}9.1"] == stale
    took = harn(wf.work, "workflow", "claims", "--take-over", "9.1", "--yes", "--json")
    assert took.code == 0, took.err
    doc = took.json()
    assert_valid(doc, "workflow-claims")
    assert doc["takenOver"]["survivor"] == tip and doc["takenOver"]["from"]["oid"] == stale
    new = remote_claims(wf)[f"{CLAIMS}9.1"]
    assert new == doc["takenOver"]["oid"]
    git(wf.work, "fetch", "-q", "origin", f"{CLAIMS}9.1")
    assert git(wf.work, "rev-parse", "FETCH_HEAD^") == stale  # replaced on top of the stale value
    assert claim_body(wf.work, "FETCH_HEAD")["event"] == "take-over"
    # the next run holds the surviving branch out, as every survivor: never silently restarted
    before = len(invocations(wf))
    again = wf.run("--json")
    assert again.code == 0, again.err
    rerun = again.json()
    assert rerun["tasks"] == [] and rerun["selected"] == []
    assert {"taskId": "9.1", "reason": "surviving-branch"}.items() <= rerun["skipped"][0].items()
    assert len(invocations(wf)) == before
    assert ref(wf.work, "refs/heads/roadmap-9.1") == tip
    assert remote_claims(wf)[f"{CLAIMS}9.1"] == new  # still the take-over's claim, held here
    # only the clone that holds it may release it; the branch stays for the operator
    assert harn(other, "workflow", "claims", "--release", "9.1", "--yes").code == 3
    assert remote_claims(wf)[f"{CLAIMS}9.1"] == new
    released = harn(wf.work, "workflow", "claims", "--release", "9.1", "--yes", "--json")
    assert released.code == 0, released.err
    assert released.json()["released"] == {"taskId": "9.1", "oid": new}
    assert remote_claims(wf) == {} and ref(wf.work, "refs/heads/roadmap-9.1") == tip


def test_a_clone_that_does_not_hold_a_claim_never_deletes_it(tmp_path: Path) -> None:
    wf = claims_setup(tmp_path, "# R\n\n- [ ] 10.1 Long one\n",
                      workflow="stageTimeout = 60\nclaims = true\nclaimHeartbeat = 100\nclaimStaleAfter = 1\n")
    wf.script({"10.1:implement": "sleep:15"})
    proc = start_run(wf.work)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not [e for e in wf.log() if e["stage"] == "implement"]:
            time.sleep(0.1)
        held = remote_claims(wf)[f"{CLAIMS}10.1"]
        other = clone(wf, "b")
        # another runner skips it and leaves the claim where it is
        skipped = wf_run(other)
        assert skipped["tasks"] == [] and skipped["skipped"][0]["reason"] == "claimed-elsewhere"
        assert remote_claims(wf)[f"{CLAIMS}10.1"] == held
        # a third clone takes it over (the heartbeat is slower than staleAfter here, on purpose)
        third = clone(wf, "c")
        wait_stale(third, "10.1")
        took = harn(third, "workflow", "claims", "--take-over", "10.1", "--yes", "--json")
        assert took.code == 0, took.err
        taken = took.json()["takenOver"]["oid"]
        assert taken != held and took.json()["takenOver"]["survivor"] is None
    finally:
        code, doc, err = finish(proc)
    # the first runner finished the task, but its release had a lease on its own value: refused
    assert code == 0, err
    assert doc["claims"]["released"] == []
    assert doc["claims"]["kept"][0]["taskId"] == "10.1"
    assert remote_claims(wf)[f"{CLAIMS}10.1"] == taken


def wait_stale(work: Path, task_id: str, seconds: float = 60) -> dict[str, Any]:
    """Wait until ``workflow claims`` in ``work`` shows the task's claim stale: the event, not a guess of its time."""
    deadline = time.time() + seconds
    while True:
        listed = harn(work, "workflow", "claims", "--json")
        assert listed.code == 0, listed.err
        claim: dict[str, Any] = next(c for c in listed.json()["claims"] if c["taskId"] == task_id)
        if claim["stale"] or time.time() > deadline:
            assert claim["stale"], claim
            return claim
        time.sleep(0.2)


def wf_run(work: Path) -> dict[str, Any]:
    done = harn(work, "workflow", "run", "--json")
    assert done.code == 0, done.err
    doc: dict[str, Any] = done.json()
    assert_valid(doc, "workflow-result")
    return doc


REFUSE_HOOK = r'''#!/bin/sh
while read old new ref; do
  case "$ref" in
    refs/harnery/claims/*) echo "claims are not allowed here"; exit 1 ;;
  esac
done
exit 0
'''


def test_a_remote_that_refuses_claims_stops_the_run_before_any_workspace(tmp_path: Path) -> None:
    wf = claims_setup(tmp_path, "# R\n\n- [ ] 11.1 Never started\n", hook=REFUSE_HOOK)
    before = all_refs(wf.work)
    done = wf.run()
    assert done.code == 3, done.err
    assert done.err.startswith("git harn: error: ") and done.err.count("\n") == 1
    assert "refuses the claim refs" in done.err and "claims are not allowed here" in done.err
    assert all_refs(wf.work) == {**before, **{k: v for k, v in all_refs(wf.work).items()
                                               if k.startswith("refs/remotes/")}}
    assert not (tmp_path / "worktrees").exists()
    assert "worktree" not in git(wf.work, "worktree", "list").split("\n", 1)[-1]
    assert invocations(wf) == []
    # the same roadmap without claims runs: claims are off by default
    off = wf.run("--no-claims", "--json")
    assert off.code == 0, off.err
    assert off.json()["claims"] is None and remote_claims(wf) == {}


def test_claim_settings_flags_and_dry_run(tmp_path: Path) -> None:
    wf = claims_setup(tmp_path, "# R\n\n- [ ] 12.1 Claimed by someone\n- [ ] 12.2 Free\n",
                      workflow="claims = true\nclaimHeartbeat = 5\n")
    bad = wf.run("--claim-heartbeat", "0")
    assert bad.code == 2 and "--claim-heartbeat" in bad.err
    # another machine holds 12.1: a dry run says so and creates nothing
    other = clone(wf, "b")
    body = json.dumps({"schemaVersion": 1, "claimId": "12.1", "workflowId": "wf-elsewhere", "host": "far",
                       "clone": "clone-far", "claimedAt": "2026-01-01T00:00:00Z",
                       "heartbeatAt": "2099-01-01T00:00:00Z", "event": "claim"})
    oid = _claim_commit(other, body)
    git(other, "push", "-q", "origin", f"{oid}:{CLAIMS}12.1")
    dry = wf.run("--dry-run", "--json")
    assert dry.code == 0, dry.err
    doc = dry.json()
    assert doc["settings"]["claims"] is True and doc["settings"]["claimHeartbeat"] == 5
    assert doc["settings"]["claimStaleAfter"] == 900
    assert [t["taskId"] for t in doc["tasks"]] == ["12.2"]
    assert {"taskId": "12.1", "reason": "claimed-elsewhere"}.items() <= doc["skipped"][0].items()
    assert "far" in doc["skipped"][0]["detail"]
    assert remote_claims(wf) == {f"{CLAIMS}12.1": oid}
    # a live claim of another clone is neither taken over nor touched
    listed = harn(wf.work, "workflow", "claims", "--json").json()
    assert listed["claims"][0]["stale"] is False and listed["claims"][0]["host"] == "far"
    assert harn(wf.work, "workflow", "claims", "--take-over", "12.1", "--yes").code == 3
    assert harn(wf.work, "workflow", "claims", "--take-over", "12.9", "--yes").code == 2
    assert remote_claims(wf) == {f"{CLAIMS}12.1": oid}
    # a real run skips it, works the other, and releases only its own claim
    run = wf.run("--json")
    assert run.code == 0, run.err
    ran = run.json()
    assert [t["taskId"] for t in ran["tasks"]] == ["12.2"]
    assert ran["claims"]["made"] == ["12.2"] and ran["claims"]["released"] == ["12.2"]
    assert remote_claims(wf) == {f"{CLAIMS}12.1": oid}
    # that machine died long ago: its claim is stale; this clone takes it over and its next run adopts it
    stale = _claim_commit(other, body.replace("2099-01-01", "2020-01-01"))
    git(other, "push", "-q", "--force", "origin", f"{stale}:{CLAIMS}12.1")
    assert harn(wf.work, "workflow", "claims", "--release", "12.1", "--yes").code == 3
    took = harn(wf.work, "workflow", "claims", "--take-over", "12.1", "--yes")
    assert took.code == 0, took.err
    assert "no roadmap-12.1 in this clone" in took.out and "far" in took.out
    adopted = wf.run("--json")
    assert adopted.code == 0, adopted.err
    doc = adopted.json()
    assert [(t["taskId"], t["status"]) for t in doc["tasks"]] == [("12.1", "done")]
    assert doc["claims"]["made"] == ["12.1"] and doc["claims"]["released"] == ["12.1"]
    assert remote_claims(wf) == {}
    assert "- [x] 12.1" in wf.remote_file("docs/roadmap.md")


def _claim_commit(repo: Path, body: str) -> str:
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=body, text=True,
                          capture_output=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=repo, input=f"100644 blob {blob}\tclaim.json\n", text=True,
                          capture_output=True, check=True).stdout.strip()
    return git(repo, "commit-tree", tree, "-m", f"claim: {json.loads(body)['claimId']}")


def test_bad_claim_settings_are_named(tmp_path: Path) -> None:
    for text, named in (('claims = "yes"\n', "workflow.claims"), ("claimHeartbeat = 0\n", "workflow.claimHeartbeat"),
                        ("claimStaleAfter = -1\n", "workflow.claimStaleAfter")):
        wf = claims_setup(tmp_path / named, "# R\n\n- [ ] 13.1 X\n", workflow=text)
        done = wf.run()
        assert done.code == 2 and named in done.err, done.err
        assert remote_claims(wf) == {}


def test_sigterm_releases_the_claims_of_the_tasks_it_stopped(tmp_path: Path) -> None:
    wf = claims_setup(tmp_path, "# R\n\n- [ ] 14.1 Stopped with work\n")
    wf.script({"14.1:implement": "commit-hang"})
    proc = start_run(wf.work)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not [e for e in wf.log() if e["event"] == "hanging"]:
            time.sleep(0.1)
        assert f"{CLAIMS}14.1" in remote_claims(wf)
        harn_pids = [p for p in descendants(proc.pid) if is_python_of_git_harn(p)]
        assert harn_pids
        os.kill(harn_pids[0], signal.SIGTERM)
    finally:
        code, doc, err = finish(proc, timeout=90)
    assert code == 3, err
    assert_valid(doc, "workflow-result")
    assert doc["tasks"][0]["status"] == "halted" and doc["claims"]["released"] == ["14.1"]
    assert remote_claims(wf) == {}  # the branch is left to the survivor rules, the claim freed
    tip = ref(wf.work, "refs/heads/roadmap-14.1")
    assert tip and "work-14.1.txt" in git(wf.work, "show", "--name-only", "--format=", tip)
