"""Issue 43, item 1, in real ``git harn workflow run``s with hostile stage
agents [T1] [T2]: every git the host runs is sealed against the shared
repository's config. The run's seal puts a planted setting back before the
host's next git; these agents rewrite it again at once, over and over, so a
git that starts between that check and its own read of the file would obey
it. It must not: fsmonitor is off for every git, the settings that name a
program or a place are passed as they stood before any agent ran, fetch and
push go to the remote of then, and git-harn's own commands come from the
operator's config, never the repository's. These runs have no sandbox,
which would refuse the agents' writes (tests/trust/test_sandbox.py): what is
tested is what holds without one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.kit.canary import host_runs, plant_canary
from tests.kit.harn import assert_valid, git, harn
from tests.kit.workflow_repo import WF, config_text, setup

ROADMAP = "# Roadmap\n\n- [ ] 1.1 First thing\n- [ ] 1.3 Third thing\n"

# 1.3's plan agent: waits until 1.1's integration has begun (what the host
# runs for 1.1 from then on, integration and clean-up, is in no stage's
# window), then writes its settings into the shared config again and again
# until 1.1 has ended, and hands over to the honest scripted agent.
RACER = r'''
import glob, json, os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
task, stage = os.environ["HARN_TASK_ID"], os.environ["HARN_STAGE"]
plan = json.load(open(os.path.join(here, "attacks.json"))).get(f"{task}:{stage}") or {}
for name, text in plan.get("edit", {}).items():  # an honest change of a tracked file, committed below
    open(name, "w").write(text)
if "append" in plan or "replace" in plan:
    common = os.path.abspath(subprocess.run(["git", "rev-parse", "--git-common-dir"], check=True,
                                            capture_output=True, text=True).stdout.strip())
    if plan.get("move_base"):  # the base moves on the remote: 1.1, under review, must merge as it lands
        other = os.path.join(here, "other")
        subprocess.run(["git", "clone", "-q", plan["remote"], other], check=True)
        for name, text in plan["move_base"].items():
            open(os.path.join(other, name), "w").write(text)
        subprocess.run(["git", "-C", other, "commit", "-qam", "the base moves"], check=True)
        subprocess.run(["git", "-C", other, "push", "-q", "origin", "main"], check=True)
    inputs = os.path.join(here, "inputs")
    def reported(reviewer):
        try:
            env = json.load(open(os.path.join(inputs, f"1.1-review-1-{reviewer}.env")))
        except (OSError, ValueError):
            return False
        return os.path.exists(env["HARN_REPORT"])
    root = subprocess.run(["git", "config", "harn.worktreeRoot"], capture_output=True, text=True).stdout.strip()
    deadline = time.time() + 60
    while time.time() < deadline and not (reported(1) and reported(2)):
        time.sleep(0.02)
    deadline = time.time() + 10
    while time.time() < deadline and not glob.glob(os.path.join(root, "*", ".integrate")):
        time.sleep(0.002)  # the host made 1.1's integration worktree: its reviews' end check is behind it
    config = os.path.join(common, "config")
    original = open(config).read()
    planted = original
    for old, new in plan.get("replace", []):
        planted = planted.replace(old, new)
    planted += plan.get("append", "")
    for name, text in plan.get("files", {}).items():
        open(os.path.join(common, name), "w").write(text)
    spare = config + ".racer"
    deadline = time.time() + plan.get("seconds", 20)
    done = os.path.join(here, "1.1-ended")
    mine = None
    host = os.getppid()  # the runner: the gits it runs are its children
    def git_running():
        for thread in os.listdir(f"/proc/{host}/task"):
            try:
                children = open(f"/proc/{host}/task/{thread}/children").read().split()
            except OSError:
                continue
            for pid in children:
                try:
                    if open(f"/proc/{pid}/comm").read().strip() == "git":
                        return True
                except OSError:
                    pass
        return False
    if plan.get("caught_first"):  # written once, while no git runs, and again only once put back
        while time.time() < deadline and git_running():
            pass
        with open(spare, "w") as f:
            f.write(planted)
        os.replace(spare, config)
        mine = os.stat(config).st_ino
        while time.time() < deadline and os.stat(config).st_ino == mine:
            time.sleep(0.0005)
    while time.time() < deadline and not os.path.exists(done):
        try:
            now = os.stat(config).st_ino
        except OSError:
            now = None
        if now != mine:  # put back: plant it again at once
            with open(spare, "w") as f:
                f.write(planted)
            os.replace(spare, config)
            mine = os.stat(config).st_ino
os.execv(sys.executable, [sys.executable, os.path.join(here, "agent.py"), *sys.argv[1:]])
'''

# 1.1's integration is builtin: the run marks 1.1's end by 1.1 landing or failing; the racer
# watches for the remote's main to carry 1.1's work, or for the run's record to end it.
WATCHER = r'''
import os, subprocess, sys, time
remote, flag, work = sys.argv[1], sys.argv[2], sys.argv[3]
deadline = time.time() + 120
while time.time() < deadline and not os.path.exists(flag):
    shown = subprocess.run(["git", "--git-dir", remote, "ls-tree", "-r", "--name-only", "main"],
                           capture_output=True, text=True).stdout
    if "work-1.1.txt" in shown:
        time.sleep(2.0)  # its clean-up and the base fetch after it, raced too
        open(flag, "w").close()
    time.sleep(0.1)
'''


def racing_setup(tmp: Path, attack: dict[str, Any], files: dict[str, str] | None = None,
                 others: dict[str, Any] | None = None) -> tuple[WF, Path]:
    agents = tmp / "agents"
    config = config_text(agents, workflow="stageTimeout = 120\n")
    for stage in ("plan", "implement"):
        config = config.replace(f"{json.dumps(str(agents / 'agent.py'))}, \"{stage}\"",
                                f"{json.dumps(str(agents / 'racer.py'))}, \"{stage}\"")
    wf = setup(tmp, roadmap=ROADMAP, config=config, files=files)
    (agents / "racer.py").write_text(RACER)
    wf.script({"1.1:review": "sleep:6"})  # 1.3's plan agent is surely running when 1.1 integrates
    canary = plant_canary(tmp / "canary")
    plans = {"1.3:plan": {**attack, "remote": str(wf.remote)}, **(others or {})}
    text = json.dumps(plans).replace("@CANARY@", str(canary)).replace("@TMP@", str(tmp))
    (agents / "attacks.json").write_text(text)
    return wf, canary.parent


def run_raced(wf: WF) -> dict[str, Any]:
    """The run, with a watcher that tells the racer when 1.1 has landed."""
    import subprocess
    import sys

    watcher = subprocess.Popen([sys.executable, "-c", WATCHER, str(wf.remote), str(wf.agents / "1.1-ended"),
                                str(wf.work)])
    try:
        done = wf.run("--json", "--parallel", "2", "--sandbox", "off", timeout=300)  # the seal alone
    finally:
        (wf.agents / "1.1-ended").touch()
        watcher.wait(timeout=30)
    doc: dict[str, Any] = done.json()
    return doc


def task(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in doc["tasks"] if t["taskId"] == task_id)


def assert_raced(doc: dict[str, Any]) -> None:
    """The racer was caught (the test raced what it meant to), and 1.1 was not blamed."""
    hostile = task(doc, "1.3")
    assert hostile["status"] == "tamper-fault", hostile["detail"]
    innocent = task(doc, "1.1")
    assert innocent["status"] == "done", innocent["detail"]


def test_an_fsmonitor_written_again_and_again_never_runs_as_the_host(tmp_path: Path) -> None:
    wf, canaries = racing_setup(tmp_path, {"append": "[core]\n\tfsmonitor = @CANARY@\n"})

    doc = run_raced(wf)

    assert_raced(doc)
    assert host_runs(canaries, str(wf.agents)) == []
    assert b"\tfsmonitor = " not in (wf.work / ".git" / "config").read_bytes()  # the seal put it back
    git(wf.work, "status")  # the operator's own git, and git harn, after the run
    harn(wf.work, "status")
    assert host_runs(canaries, str(wf.agents)) == []


def test_a_filter_redefined_again_and_again_never_runs_as_the_host(tmp_path: Path) -> None:
    """The operator's filter ``keep`` (a pass-through, on every file by the
    committed .gitattributes) is pointed at the agent's program: the host's
    checkouts (integration, clean-up) run the filter of the run's start."""
    files = {".gitattributes": "* filter=keep\n"}
    attack = {"append": "[filter \"keep\"]\n\tclean = @CANARY@ clean\n\tsmudge = @CANARY@ smudge\n"
                        "\tprocess = @CANARY@ process\n"}
    wf, canaries = racing_setup(tmp_path, attack, files)
    git(wf.work, "config", "filter.keep.clean", "cat")
    git(wf.work, "config", "filter.keep.smudge", "cat")

    doc = run_raced(wf)

    assert_raced(doc)
    assert host_runs(canaries, str(wf.agents)) == []


def test_a_filter_nobody_configured_is_refused_once_seen(tmp_path: Path) -> None:
    """A committed .gitattributes names a filter ``evil`` that no config
    defines (landed earlier, say); the agent defines it in the shared config.
    The seal's check that finds the definition ends the agent's task and, for
    the rest of the run, every git gets ``evil``'s programs empty: written
    again and again after that, it never runs as the host."""
    files = {".gitattributes": "* filter=evil\n"}
    attack = {"append": "[filter \"evil\"]\n\tclean = @CANARY@ clean\n\tsmudge = @CANARY@ smudge\n"
                        "\tprocess = @CANARY@ process\n", "caught_first": True}
    wf, canaries = racing_setup(tmp_path, attack, files)

    doc = run_raced(wf)

    assert_raced(doc)
    assert host_runs(canaries, str(wf.agents)) == []
    assert "filter" in task(doc, "1.3")["detail"] or "config" in task(doc, "1.3")["detail"]


def test_a_merge_driver_redefined_again_and_again_never_runs_as_the_host(tmp_path: Path) -> None:
    """The operator's merge driver ``keep`` (git merge-file, on shared.txt by
    the committed .gitattributes) is pointed at the agent's program while
    1.1's integration rebases onto a base that changed the same file: the
    host's rebase merges with the driver of the run's start."""
    files = {".gitattributes": "shared.txt merge=keep\n", "shared.txt": "one\ntwo\nthree\nfour\nfive\n"}
    attack = {"append": "[merge \"keep\"]\n\tdriver = @CANARY@ merge %A %O %B\n",
              "move_base": {"shared.txt": "one\ntwo\nthree\nfour\nFIVE\n"}}
    others = {"1.1:implement": {"edit": {"shared.txt": "ONE\ntwo\nthree\nfour\nfive\n"}}}
    wf, canaries = racing_setup(tmp_path, attack, files, others)
    git(wf.work, "config", "merge.keep.name", "the operator's own three-way merge")
    git(wf.work, "config", "merge.keep.driver", "git merge-file %A %O %B")

    doc = run_raced(wf)

    assert_raced(doc)
    assert host_runs(canaries, str(wf.agents)) == []
    assert wf.remote_file("shared.txt").split() == ["ONE", "two", "three", "four", "FIVE"]  # the operator's driver


def test_a_remote_redirected_again_and_again_is_not_where_the_host_fetches_or_pushes(tmp_path: Path) -> None:
    """``remote.origin.url``/``pushurl`` pointed at the agent's repository and
    ``uploadpack``/``receivepack``, ``core.sshCommand`` and a credential helper
    at its program: 1.1 lands on the remote of the run's start, the agent's
    repository receives nothing, and none of the programs runs as the host."""
    attacker = tmp_path / "attacker.git"
    git(tmp_path, "init", "-q", "--bare", str(attacker))
    wf, canaries = racing_setup(tmp_path, {})
    attack = {"replace": [[f"url = {wf.remote}", f"url = {attacker}"]],
              "append": (f"[remote \"origin\"]\n\tpushurl = {attacker}\n\tuploadpack = @CANARY@ upload\n"
                         "\treceivepack = @CANARY@ receive\n[core]\n\tsshCommand = @CANARY@ ssh\n"
                         "[credential]\n\thelper = !@CANARY@ credential\n")}
    text = json.dumps({"1.3:plan": {**attack, "remote": str(wf.remote)}}).replace("@CANARY@",
                                                                                str(canaries / "canary.py"))
    (wf.agents / "attacks.json").write_text(text)

    doc = run_raced(wf)

    assert_raced(doc)
    assert host_runs(canaries, str(wf.agents)) == []
    assert git(attacker, "for-each-ref") == ""  # nothing was pushed there
    assert "work-1.1.txt" in git(wf.remote, "ls-tree", "-r", "--name-only", "main")


def test_harn_settings_in_the_repository_config_are_not_a_runs_commands(tmp_path: Path) -> None:
    """``harn.gate``, ``harn.gateEnv``, ``harn.assessor`` written into the
    repository's own config (by an agent's code run outside a sealed run, say):
    the run takes its gates from the base's .harn/workflow.toml, gives no gate
    the operator's secret, and ``workflow check`` says what it ignores."""
    wf = setup(tmp_path, roadmap="# Roadmap\n\n- [ ] 1.1 First thing\n")
    canary = plant_canary(tmp_path / "canary")
    git(wf.work, "config", "harn.gate", f"{canary} gate")
    git(wf.work, "config", "harn.gateEnv", "OPERATOR_TOKEN")
    git(wf.work, "config", "harn.assessor", f"{canary} assessor")

    done = wf.run("--json", timeout=200, env={"OPERATOR_TOKEN": "s3cret"})

    doc = done.json()
    assert task(doc, "1.1")["status"] == "done", task(doc, "1.1")["detail"]
    assert host_runs(canary.parent, str(wf.agents)) == []
    checked = harn(wf.work, "workflow", "check")
    said = checked.out + checked.err
    for key in ("harn.gate", "harn.gateEnv", "harn.assessor"):
        assert key in said, said
    document = harn(wf.work, "workflow", "check", "--json").json()
    assert_valid(document, "workflow-check")
    assert document["ignored"] == [{"key": "harn.gate", "scope": "local"}, {"key": "harn.gateEnv", "scope": "local"},
                                   {"key": "harn.assessor", "scope": "local"}]
