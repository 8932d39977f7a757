"""Issue 43, item 2 and finding 2, in real ``git harn workflow run``s with
hostile stage agents [T2]: every change to what a later git obeys is found
around the stage that made it, put back byte for byte, kept as evidence,
named in the halt; nothing the agent planted runs as the host or the
operator; no process it started outlives the run; an innocent task beside
a hostile one is not blamed unless both were in flight. The seal alone:
these runs have no sandbox, which would refuse most of these writes
(tests/trust/test_sandbox.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.kit.canary import host_runs, plant_canary
from tests.kit.git_crashes import group_members
from tests.kit.harn import alive, assert_valid, git, harn
from tests.kit.runners import state_of
from tests.kit.victims import fingerprint
from tests.kit.workflow_repo import WF, config_text, setup

ROADMAP = "# Roadmap\n\n- [ ] 1.1 First thing\n- [ ] 1.3 Third thing\n"

# Runs the attacks its task and stage are given, then hands over to the honest scripted agent.
HOSTILE = r'''
import json, os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
task, stage = os.environ["HARN_TASK_ID"], os.environ["HARN_STAGE"]
plan = json.load(open(os.path.join(here, "attacks.json"))).get(f"{task}:{stage}", {})
canary = plan.get("canary", "")
def git(*args, check=True):
    return subprocess.run(["git", *args], check=check, capture_output=True, text=True).stdout.strip()
common = os.path.abspath(git("rev-parse", "--git-common-dir"))
admin = os.path.abspath(git("rev-parse", "--git-dir"))
if plan.get("wait_landed"):  # until the other task has landed on the remote
    deadline = time.time() + 90
    while time.time() < deadline and "- [x] " + plan["wait_landed"] not in subprocess.run(
            ["git", "--git-dir", plan["remote"], "show", "main:docs/roadmap.md"], capture_output=True,
            text=True).stdout:
        time.sleep(0.1)
    time.sleep(1.0)  # its cleanup, and the base fetch after it
head = git("commit-tree", "-p", "HEAD", "-m", "planted", git("rev-parse", "HEAD^{tree}"))
for attack in plan.get("attacks", []):
    if attack == "fsmonitor":
        git("config", "core.fsmonitor", canary)
    elif attack == "hook":
        path = os.path.join(common, "hooks", "post-checkout")
        open(path, "w").write("#!/bin/sh\nexec " + canary + " hook\n"); os.chmod(path, 0o755)
    elif attack == "attributes":
        open(os.path.join(common, "info", "attributes"), "w").write("* filter=evil\n")
        git("config", "filter.evil.clean", canary + " clean")
    elif attack == "dotgit":
        fake = os.path.join(here, "lookalike.git")
        subprocess.run(["git", "init", "-q", "--bare", fake], check=True)
        subprocess.run(["git", "--git-dir", fake, "config", "core.fsmonitor", canary], check=True)
        open(".git", "w").write("gitdir: " + fake + "\n")
    elif attack == "commondir":
        fake = os.path.join(here, "lookalike-common.git")
        subprocess.run(["git", "init", "-q", "--bare", fake], check=True)
        subprocess.run(["git", "--git-dir", fake, "config", "core.fsmonitor", canary], check=True)
        open(os.path.join(admin, "commondir"), "w").write(fake + "\n")
    elif attack == "worktree-config":
        git("config", "extensions.worktreeConfig", "true")
        open(os.path.join(admin, "config.worktree"), "w").write("[core]\n\tfsmonitor = " + canary + "\n")
    elif attack == "refs":
        base = git("rev-parse", "origin/main^{commit}")
        git("update-ref", "refs/heads/other", head)
        git("update-ref", "refs/remotes/origin/main", head)
        git("update-ref", "refs/replace/" + base, head)
        git("update-ref", "refs/harnery/evil", head)
        git("notes", "--ref=refs/notes/commits", "add", "-f", "-m", "planted", head)
    elif attack == "daemon":
        code = ("import os, time, sys\nopen(sys.argv[1], 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
                "open(sys.argv[2], 'a').write('[core]\\n\\tfsmonitor = ' + sys.argv[3] + '\\n')\n")
        subprocess.Popen([sys.executable, "-c", code, os.path.join(here, "daemon.pid"),
                          os.path.join(common, "config"), canary], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while not os.path.exists(os.path.join(here, "daemon.pid")) and time.time() < deadline:
            time.sleep(0.02)
os.execv(sys.executable, [sys.executable, os.path.join(here, "agent.py"), *sys.argv[1:]])
'''


def hostile_setup(tmp: Path, attacks: dict[str, Any], workflow: str = "stageTimeout = 60\n") -> tuple[WF, Path]:
    """A clone whose plan, implement and review agents attack as ``attacks`` says, and a canary."""
    agents = tmp / "agents"
    config = config_text(agents, workflow=workflow).replace("agent.py", "hostile.py")
    wf = setup(tmp, roadmap=ROADMAP, config=config)
    (agents / "hostile.py").write_text(HOSTILE)
    canary = plant_canary(tmp / "canary")
    for plan in attacks.values():
        plan.setdefault("canary", str(canary))
        plan.setdefault("remote", str(wf.remote))
    (agents / "attacks.json").write_text(json.dumps(attacks))
    # what git-harn writes in the config itself, set beforehand: the config is then compared byte for byte
    git(wf.work, "config", "harn.cloneId", "test-clone")
    git(wf.work, "config", "notes.displayRef", "refs/harnery/notes")
    git(wf.work, "branch", "other")
    git(wf.work, "tag", "v1")
    git(wf.work, "notes", "add", "-m", "the operator's note", "HEAD")
    return wf, canary.parent


def surface(wf: WF) -> dict[str, Any]:
    dot = wf.work / ".git"
    return {"config": (dot / "config").read_bytes(), "hooks": fingerprint(dot / "hooks"),
            "info": fingerprint(dot / "info"), "HEAD": (dot / "HEAD").read_bytes()}


def refs(wf: WF) -> dict[str, str]:
    out = git(wf.work, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in out.splitlines())


def not_task_refs(found: dict[str, str]) -> dict[str, str]:
    """Every ref but the task branches, the host's own records and the tracking ref landings move."""
    return {name: oid for name, oid in found.items()
            if not name.startswith(("refs/heads/roadmap-", "refs/harnery/")) and name != "refs/remotes/origin/main"}


def task(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in doc["tasks"] if t["taskId"] == task_id)


def test_a_whole_hostile_run_leaves_config_hooks_info_and_refs_as_they_were(tmp_path: Path) -> None:
    """The Done-when: several attacks across two tasks in flight at once."""
    attacks = {"1.1:plan": {"attacks": ["fsmonitor", "hook", "attributes", "refs"]},
               "1.3:plan": {"attacks": ["dotgit", "worktree-config", "daemon"]}}
    wf, canaries = hostile_setup(tmp_path, attacks)
    before, refs_before = surface(wf), refs(wf)
    harnery_before = {n: o for n, o in refs_before.items() if n.startswith("refs/harnery/")}

    done = wf.run("--json", "--parallel", "2", "--sandbox", "off", timeout=300)

    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert done.code == 3, done.err
    for task_id in ("1.1", "1.3"):
        found = task(doc, task_id)
        assert (found["status"], found["fault"]) == ("tamper-fault", "tamper"), found["detail"]
        assert found["faultKind"] in ("tamper", "tamper-ambiguous")
    assert doc["faultMetrics"]["tamperFaults"] == 2
    halt = doc["halted"]
    assert "tamper fault" in halt and "evidence in" in halt
    assert surface(wf) == before  # config, hooks, info and HEAD byte for byte
    after = refs(wf)
    assert not_task_refs(after) == not_task_refs(refs_before)
    assert git(wf.work, "rev-parse", "refs/remotes/origin/main").strip() == git(wf.remote, "rev-parse", "main").strip()
    assert {n: o for n, o in after.items() if n in harnery_before} == harnery_before
    assert "refs/harnery/evil" not in after and not any(n.startswith("refs/replace/") for n in after)
    kept = [n for n in after if n.startswith(f"refs/harnery/tamper/{doc['workflowId']}/")]
    assert kept  # what the agent's refs held stays reachable [P1]
    # the pointers of 1.3's worktree were put back: its workspace is cleaned up, not left as foreign
    status = harn(wf.work, "status", "--all")
    assert "foreign" not in status.out + status.err, status.out
    # the evidence: 0600 files in 0700 folders, a list of the changes
    evidence = wf.work / ".git" / "harnery" / "workflow" / doc["workflowId"] / "tamper"
    lists = [json.loads((folder / "changes.json").read_text()) for folder in evidence.iterdir()]
    changed = {c["what"] for found in lists for c in found["changes"]}
    assert str(wf.work / ".git" / "config") in changed and "refs/heads/other" in changed
    assert all(oct(os.stat(p).st_mode & 0o777) == "0o600" for f in evidence.iterdir() for p in f.iterdir())
    # the operator's own git, and git harn, run nothing the agent planted; nor did the host
    git(wf.work, "status")
    git(wf.work, "fetch", "-q", "origin")
    harn(wf.work, "status")
    assert host_runs(canaries, str(wf.agents)) == []
    # no process an agent started is alive
    pid = int((wf.agents / "daemon.pid").read_text())
    assert not alive(pid)


def test_an_innocent_task_beside_a_hostile_one_is_not_blamed(tmp_path: Path) -> None:
    """--parallel 2: the hostile plan stage waits until the innocent task landed
    (its stages, gates, integration, cleanup and the base fetch after it all
    ran while the hostile stage was in flight), then tampers."""
    attacks = {"1.3:plan": {"attacks": ["fsmonitor", "refs"], "wait_landed": "1.1"}}
    wf, canaries = hostile_setup(tmp_path, attacks, workflow="stageTimeout = 120\n")
    before = surface(wf)

    done = wf.run("--json", "--parallel", "2", "--sandbox", "off", timeout=300)

    doc = done.json()
    assert task(doc, "1.1")["status"] == "done", task(doc, "1.1")["detail"]
    hostile = task(doc, "1.3")
    assert (hostile["status"], hostile["faultKind"]) == ("tamper-fault", "tamper"), hostile["detail"]
    named = hostile["detail"]
    for what in (str(wf.work / ".git" / "config"), "refs/heads/other", "refs/remotes/origin/main",
                 "refs/harnery/evil", "refs/notes/commits"):
        assert what in named
    assert "refs/harnery/notes" not in named and "refs/harnery/runs" not in named  # the host's own writes
    assert surface(wf) == before
    assert host_runs(canaries, str(wf.agents)) == []


def test_a_change_while_two_stages_are_in_flight_blames_both(tmp_path: Path) -> None:
    """Without a sandbox a change cannot be told to come from one of two stages in flight: both end."""
    attacks = {"1.3:plan": {"attacks": ["fsmonitor"]}, "1.1:plan": {"attacks": []}}
    wf, _ = hostile_setup(tmp_path, attacks)
    wf.script({"1.1:plan": "sleep:4"})

    done = wf.run("--json", "--parallel", "2", "--sandbox", "off", timeout=300)

    doc = done.json()
    for task_id in ("1.1", "1.3"):
        found = task(doc, task_id)
        assert (found["status"], found["faultKind"]) == ("tamper-fault", "tamper-ambiguous"), found["detail"]
        assert "blamed on every stage in flight" in found["detail"]


def test_a_change_after_a_stage_ended_is_found_before_the_hosts_next_git(tmp_path: Path) -> None:
    """A process the host cannot end (the test, paused the host right after the
    plan stage's own check) writes an fsmonitor: the guard before the host's
    next git finds it, puts it back, and the task ends with the tamper fault."""
    wf, canaries = hostile_setup(tmp_path, {})
    config = wf.work / ".git" / "config"
    env = dict(os.environ, HARN_FAILPOINT="workflow-stage-sealed", HARN_FAILPOINT_MODE="stop")
    proc = subprocess.Popen(["git", "harn", "workflow", "run", "--json", "--sandbox", "off"], cwd=wf.work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    tampered = False
    try:
        deadline = time.time() + 120
        while proc.poll() is None and time.time() < deadline:
            stopped = [pid for pid, _ in group_members(proc.pid) if state_of(pid) == "T"]
            if stopped:
                if not tampered:
                    with config.open("a") as handle:
                        handle.write(f"[core]\n\tfsmonitor = {canaries / 'canary.py'}\n")
                    tampered = True
                os.killpg(proc.pid, signal.SIGCONT)
            time.sleep(0.05)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert tampered
    doc = json.loads(out)
    first = task(doc, "1.1")
    # found by the guard before the host's next git (at plan), or by the check before implement starts
    assert first["status"] == "tamper-fault" and first["stage"] in ("plan", "implement"), (first["detail"], err)
    assert first["stage"] == "plan" or "(blamed on 1.1 plan)" in first["detail"]
    assert str(config) in first["detail"] and "fsmonitor" not in config.read_text()
    assert not (wf.agents / "inputs" / "1.1-implement-1-0.stdin").exists()  # it never started
    # Freezing the whole process can catch another thread between its guard and its git: that one
    # git (a window of microseconds a real daemon would have to hit) is the most the host may run.
    assert len(host_runs(canaries, str(wf.agents))) <= 1, (first["stage"], first["detail"])


def test_git_harn_run_puts_back_what_its_command_changed(tmp_path: Path) -> None:
    wf, canaries = hostile_setup(tmp_path, {})
    config = wf.work / ".git" / "config"
    before = config.read_bytes()
    planted = str(canaries / "canary.py")
    script = (f"import subprocess\nsubprocess.run(['git', 'config', 'core.fsmonitor', {planted!r}])\n"
              "subprocess.run(['git', 'update-ref', 'refs/tags/planted', 'HEAD'])\n")
    done = harn(wf.work, "run", "r1", "--json", "--", sys.executable, "-c", script)
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "run-result")
    assert doc["outcome"] == "run-tampered"
    assert {c["what"] for c in doc["tamper"]["changes"]} == {str(config), "refs/tags/planted"}
    assert config.read_bytes() == before and "refs/tags/planted" not in refs(wf)
    evidence = Path(doc["tamper"]["evidence"])
    assert evidence.is_relative_to(wf.work / ".git" / "harnery" / "run" / "r1")
    assert host_runs(canaries, "subprocess.run") == []

