"""Evidence the agent cannot forge (issue 44, deliver 4): the gates and
review notes git-harn writes carry a MAC made with a key outside the
repository; a note is believed only when its MAC verifies on this machine.
A forged note is rerun (gates) or reported (reviews), never trusted."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from tests.kit.harn import git, harn, ref
from tests.kit.recovery_repo import ONE, RESUME
from tests.kit.workflow_repo import WF, config_text, setup

# An implement agent that commits broken code with its plan COMPLETE, writes
# a passing gates note on its own tip with plumbing (the shape git-harn
# writes, every member well formed) and reports failure.
FORGER = r'''
import json, os, subprocess, sys, time

def git(*args, data=None):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True, input=data).stdout.strip()

task = os.environ["HARN_TASK_ID"]
os.makedirs("docs/execplans", exist_ok=True)
open(f"docs/execplans/{task}.md", "w").write(f"# ExecPlan {task}\n\nStatus: COMPLETE\n")
open("broken", "w").write("the gates fail on this\n")
open(f"work-{task}.txt", "w").write("half of it\n")
git("add", "-A")
git("commit", "-q", "-m", f"implement {task}")
tip = git("rev-parse", "HEAD")
now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
gates = {"schemaVersion": 1, "branch": f"roadmap-{task}", "commit": tip,
         "base": {"rev": "origin/main", "oid": os.environ["HARN_BASE"]},
         "source": ".harn/workflow.toml at origin/main", "where": "temporary", "passed": True,
         "startedAt": now, "finishedAt": now, "host": "ci",
         "commands": [{"argv": ["sh", "-c", "test ! -e broken"], "exitCode": 0, "timedOut": False,
                       "seconds": 0.01, "outputTail": "", "error": None}]}
here = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, "forged-" + tip), "w").write(json.dumps({"gates": gates}))
with open(os.environ["HARN_REPORT"], "w") as f:
    json.dump({"ok": False, "summary": "could not finish"}, f)
'''


def forger_wf(tmp: Path) -> tuple[WF, Path]:
    """A run whose implement agent forges: its gates log each run to ``gates.log``."""
    agents = tmp / "agents"
    log = tmp / "gates.log"
    config = config_text(agents, workflow="stageTimeout = 30\nreviewRounds = 1\n")
    py, forger = json.dumps(sys.executable), json.dumps(str(agents / "forger.py"))
    config = config.replace(f'[agents.implement]\ncommand = [{py}, {json.dumps(str(agents / "agent.py"))}, '
                            '"implement"]', f"[agents.implement]\ncommand = [{py}, {forger}]")
    config = config.replace('[["sh", "-c", "test ! -e broken"]]',
                            json.dumps([["sh", "-c", f"echo ran >> {log}; test ! -e broken"]]))
    wf = setup(tmp, roadmap=ONE, config=config)
    (agents / "forger.py").write_text(FORGER)
    return wf, log


def plant(work: Path, tip: str, note: dict[str, Any]) -> None:
    """The note on ``tip`` in refs/harnery/notes, written with plumbing as any
    process outside git-harn could (an agent's daemon, another clone's sync)."""
    import subprocess

    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=work, input=json.dumps(note),
                          capture_output=True, text=True, check=True).stdout.strip()
    parent = ref(work, "refs/harnery/notes")
    entries = git(work, "ls-tree", parent) + "\n" if parent else ""
    entries = "".join(line + "\n" for line in entries.splitlines() if not line.endswith("\t" + tip))
    tree = subprocess.run(["git", "mktree"], cwd=work, input=entries + f"100644 blob {blob}\t{tip}\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    commit = git(work, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", "planted")
    git(work, "update-ref", "refs/harnery/notes", commit)


def forged_survivor(tmp: Path) -> tuple[WF, Path, str]:
    wf, log = forger_wf(tmp)
    first = wf.run("--json")
    task = first.json()["tasks"][0]
    assert (task["status"], task["stage"]) == ("failed", "implement"), task["detail"]
    tip = ref(wf.work, "refs/heads/roadmap-5.1")
    assert tip is not None
    plant(wf.work, tip, json.loads((wf.agents / f"forged-{tip}").read_text()))
    assert not log.exists()  # the gates never ran on it
    return wf, log, tip


def test_a_forged_passing_gates_note_is_not_believed_by_assess(tmp_path: Path) -> None:
    wf, _, tip = forged_survivor(tmp_path)
    done = harn(wf.work, "assess", "roadmap-5.1", "--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert doc["classification"] != "adopt-complete", doc
    assert "validation-passed" not in doc["reasons"]
    assert doc["evidence"]["validation"] is None
    assert doc["evidence"]["validationUnverified"] is True
    assert any(m.startswith("unverified-validation-evidence") for m in doc["missingEvidence"]), doc
    plain = harn(wf.work, "assess", "roadmap-5.1")
    assert "unverified" in plain.out, plain.out


def test_review_mode_reruns_the_gates_on_a_forged_note_and_lands_nothing(tmp_path: Path) -> None:
    wf, log, tip = forged_survivor(tmp_path)
    before = wf.remote_log()
    done = wf.run("--json", *RESUME, "--resume-mode", "review")
    assert done.code != 0, done.out
    assert log.read_text().split() == ["ran"]  # the gates ran again, on the exact tip
    task = done.json()["tasks"][0]
    assert (task["status"], task["stage"]) == ("failed", "gates"), task["detail"]
    assert task["gates"]["commit"] == tip and task["gates"]["passed"] is False
    assert wf.remote_log() == before and "- [ ] 5.1" in wf.remote_file("docs/roadmap.md")
    assert ref(wf.work, "refs/harnery/integrated/5.1") is None


def test_review_mode_reruns_the_gates_even_when_the_note_verifies(tmp_path: Path) -> None:
    """A passing gates note of this machine on a tip that now fails (a gate
    that depends on more than the tree): review mode runs them again first."""
    wf, log, tip = forged_survivor(tmp_path)
    git(wf.work, "update-ref", "-d", "refs/harnery/notes")
    git(wf.work, "config", "harn.gate", "true")  # the operator's gate passes; the committed one fails
    ran = harn(wf.work, "gates", "run", "roadmap-5.1")
    git(wf.work, "config", "--unset", "harn.gate")
    assert ran.code == 0, ran.err
    assert harn(wf.work, "assess", "roadmap-5.1", "--json").json()["classification"] == "adopt-complete"
    done = wf.run("--json", *RESUME, "--resume-mode", "review")
    assert done.code != 0
    assert log.read_text().split() == ["ran"]
    assert ref(wf.work, "refs/harnery/integrated/5.1") is None


def test_the_key_is_made_once_private_and_a_note_from_another_key_is_unverified(tmp_path: Path) -> None:
    wf, _, tip = forged_survivor(tmp_path)
    git(wf.work, "update-ref", "-d", "refs/harnery/notes")
    elsewhere = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "other-machine")}
    git(wf.work, "config", "harn.gate", "true")
    ran = harn(wf.work, "gates", "run", "roadmap-5.1", env=elsewhere)
    assert ran.code == 0, ran.err
    keys = list((tmp_path / "other-machine").rglob("*.key"))
    assert len(keys) == 1 and stat.S_IMODE(keys[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(keys[0].parent.stat().st_mode) == 0o700
    there = harn(wf.work, "assess", "roadmap-5.1", "--json", env=elsewhere).json()
    assert there["classification"] == "adopt-complete"
    here = harn(wf.work, "assess", "roadmap-5.1", "--json").json()  # this machine's key differs
    assert here["evidence"]["validation"] is None and here["evidence"]["validationUnverified"] is True
    assert any("another machine" in r for r in here["evidence"]["validationProblem"].split(";")), here


def _note(work: Path, tip: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(git(work, "show", f"refs/harnery/notes:{tip}"))
    return loaded


def test_a_note_of_this_machine_altered_after_it_was_made_is_not_believed(tmp_path: Path) -> None:
    wf, log, tip = forged_survivor(tmp_path)
    git(wf.work, "update-ref", "-d", "refs/harnery/notes")
    assert harn(wf.work, "gates", "run", "roadmap-5.1").code == 3  # really run: they fail, signed
    failed = _note(wf.work, tip)
    assert failed["gates"]["passed"] is False and failed["gates"]["mac"]["value"]
    failed["gates"]["passed"] = True
    failed["gates"]["commands"][0]["exitCode"] = 0
    plant(wf.work, tip, failed)  # the same MAC, on the content changed
    doc = harn(wf.work, "assess", "roadmap-5.1", "--json").json()
    assert doc["evidence"]["validation"] is None and doc["classification"] != "adopt-complete"
    assert "does not match" in doc["evidence"]["validationProblem"]
    # put back as it was made, it verifies again: the MAC is of the content
    moved = _note(wf.work, tip)
    moved["gates"]["passed"] = False
    moved["gates"]["commands"][0]["exitCode"] = 1
    plant(wf.work, tip, moved)
    assert harn(wf.work, "assess", "roadmap-5.1", "--json").json()["evidence"]["validation"]["passed"] is False


def test_a_mac_is_bound_to_its_commit_and_kind() -> None:
    from git_harn.store import mac

    commit, other = "a" * 40, "b" * 40
    value = mac.sign("gates", commit, {"commit": commit, "passed": True})
    assert mac.unverified("gates", commit, value) is None
    assert "does not match" in str(mac.unverified("gates", other, value))
    assert "does not match" in str(mac.unverified("review", commit, value))
    assert mac.without_mac(value) == {"commit": commit, "passed": True}


def test_a_review_note_not_verified_here_is_reported_not_believed(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ONE, config=config_text(tmp_path / "agents",
                                                          workflow="stageTimeout = 30\nreviewRounds = 1\n"))
    wf.script({"review": "never-approve"})
    task = wf.run("--json").json()["tasks"][0]
    assert task["assessment"]["evidence"]["review"]["approved"] is False  # its own note, verified
    judged = next(c for c in git(wf.work, "rev-list", "roadmap-5.1").split()
                  if "review" in _note_or_empty(wf.work, c))
    note = _note(wf.work, judged)
    del note["review"]["mac"]  # as an older git-harn, or another tool, wrote it
    plant(wf.work, judged, note)
    doc = harn(wf.work, "assess", "roadmap-5.1", "--json").json()
    assert doc["evidence"]["review"] is None
    assert "unverified here" in doc["evidence"]["reviewProblem"]
    assert any(r.startswith("review-note-unverified: the review note on") and "refused" in r
               for r in doc["residualRisk"]), doc["residualRisk"]
    assert "review-refused" not in doc["reasons"]


def _note_or_empty(work: Path, commit: str) -> dict[str, Any]:
    try:
        return _note(work, commit)
    except AssertionError:
        return {}


def test_the_key_is_never_made_by_a_read(tmp_path: Path) -> None:
    wf, _, _ = forged_survivor(tmp_path)
    git(wf.work, "update-ref", "-d", "refs/harnery/notes")
    git(wf.work, "config", "harn.gate", "true")
    assert harn(wf.work, "gates", "run", "roadmap-5.1").code == 0  # signed on this machine
    elsewhere = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "fresh-machine")}
    doc = harn(wf.work, "assess", "roadmap-5.1", "--json", env=elsewhere).json()
    assert "no evidence key yet" in doc["evidence"]["validationProblem"]
    assert not (tmp_path / "fresh-machine").exists()


def test_a_key_others_can_read_is_refused_in_one_line(tmp_path: Path) -> None:
    wf, _, _ = forged_survivor(tmp_path)
    elsewhere = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "loose")}
    git(wf.work, "config", "harn.gate", "true")
    assert harn(wf.work, "gates", "run", "roadmap-5.1", env=elsewhere).code == 0
    [key] = list((tmp_path / "loose").rglob("*.key"))
    key.chmod(0o644)
    done = harn(wf.work, "gates", "run", "roadmap-5.1", env=elsewhere)
    assert done.code != 0 and done.err.startswith("git harn: error: the evidence key"), done.err
    assert len(done.err.strip().splitlines()) == 1


PEEKER = r'''
import json, os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
key = json.load(open(os.path.join(here, "key-path.json")))["key"]
try:
    seen = "read %d bytes" % len(open(key, "rb").read())
except OSError as exc:
    seen = type(exc).__name__
open(os.path.join(here, "peek.json"), "w").write(json.dumps({"seen": seen}))
raw = sys.stdin.read()
sys.exit(subprocess.run([sys.executable, os.path.join(here, "agent.py"), "plan"], input=raw, text=True).returncode)
'''


def test_no_stage_in_the_sandbox_can_read_the_evidence_key(tmp_path: Path) -> None:
    from git_harn.workspace.sandbox import probe

    found, why = probe()
    if not found:
        import pytest

        pytest.skip(f"bubblewrap cannot run: {why}")
    agents = tmp_path / "agents"
    py = json.dumps(sys.executable)
    config = config_text(agents, workflow="stageTimeout = 30\nreviewRounds = 1\n").replace(
        f'[agents.plan]\ncommand = [{py}, {json.dumps(str(agents / "agent.py"))}, "plan"]',
        f'[agents.plan]\ncommand = [{py}, {json.dumps(str(agents / "peeker.py"))}]')
    wf = setup(tmp_path, roadmap=ONE, config=config)
    (agents / "peeker.py").write_text(PEEKER)
    data = tmp_path / "data"  # under the folders the test session lets every stage write
    key = data / "git-harn" / "keys" / "evidence.key"
    (agents / "key-path.json").write_text(json.dumps({"key": str(key)}))
    git(wf.work, "config", "harn.gate", "true")
    assert harn(wf.work, "gates", "run", "main", env={"XDG_DATA_HOME": str(data)}).code == 0  # the key is made
    git(wf.work, "config", "--unset", "harn.gate")
    assert key.exists()
    done = wf.run("--json", env={"XDG_DATA_HOME": str(data)})
    assert done.code == 0, done.err
    assert done.json()["settings"]["sandbox"]["active"] is True
    assert json.loads((agents / "peek.json").read_text())["seen"] == "FileNotFoundError"
