"""Advice executes [L4] (issue 21, defect 5): every end a run can reach gets
its next step from the facts at the end, and that step, run exactly as
printed (split like a shell would, run as argv, no shell), succeeds and moves
the task on."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.kit.fault_repo import fault_setup, faults
from tests.kit.harn import assert_valid, git, ref
from tests.kit.workflow_repo import WF, setup, sigterm_when_hanging

ONE = "# Roadmap\n\n- [ ] 21.1 One thing\n"
ROUND_ONE = "stageTimeout = 30\nreviewRounds = 1\n"
RESUME = "git harn workflow run --resume-partial-branches --resume-mode continue"


def _landed(wf: WF) -> None:
    assert "- [x] 21.1 " in wf.remote_file("docs/roadmap.md")
    assert ref(wf.work, "refs/harnery/integrated/21.1") is not None


def _selectable_again(wf: WF) -> None:
    assert ref(wf.work, "refs/heads/roadmap-21.1") is None
    plan = wf.run("--dry-run", "--json").json()
    assert [(t["taskId"], t["status"]) for t in plan["tasks"]] == [("21.1", "planned")]


def _crash_marker(wf: WF) -> None:
    """What an integrate killed midway leaves behind [I4]."""
    marker = wf.work / ".git" / "harnery" / "integrate" / "21-1.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"taskId": "21.1", "branch": "roadmap-21.1", "pid": 1, "startedAt": "then"}))


@dataclass
class Case:
    name: str
    misbehave: dict[str, object]  # faults.json (faults.py), before the first run
    script: dict[str, object]  # script.json (agent.py), before the first run
    end: tuple[str, str, str]  # state, status, stage
    command: str  # the advised command, exactly
    moved_on: Callable[[WF], None]
    before: Callable[[WF], None] | None = None
    flags: tuple[str, ...] = ()
    workflow: str = ROUND_ONE


CASES = [
    Case("auth fault at plan, nothing committed", {"21.1:plan": "exit77"}, {},
         ("auth-fault", "auth-fault", "plan"), "git harn workflow run", _landed),
    Case("infra fault at plan, nothing committed", {"21.1:plan": "crash"}, {},
         ("infra-fault", "infra-fault", "plan"), "git harn workflow run", _landed, flags=("--stage-attempts", "1")),
    Case("provider fault at implement, the plan committed", {"21.1:implement": "exit75"}, {},
         ("provider-fault", "provider-fault", "implement"), RESUME, _landed),
    Case("infra fault at implement, the plan committed", {"21.1:implement": "hang"}, {},
         ("infra-fault", "infra-fault", "implement"), RESUME, _landed, flags=("--stage-attempts", "1"),
         workflow="stageTimeout = 2\nreviewRounds = 1\n"),
    Case("product failure at implement, the plan committed", {"21.1:implement": "partial"}, {},
         ("failed", "failed", "implement"), RESUME, _landed),
    Case("the gates fail on the tip", {}, {"implement": "break"},
         ("failed", "failed", "gates"), RESUME, _landed),
    Case("refused at review", {}, {"review": "never-approve"},
         ("refused", "failed", "review"), RESUME, _landed),
    Case("provider fault at review", {"21.1:review:1": "exit75"}, {},
         ("provider-fault", "provider-fault", "review"), RESUME, _landed),
    Case("the ExecPlan says BLOCKED", {}, {"plan": "blocked"},
         ("blocked", "blocked", "plan"), "git harn workflow discard 21.1 --yes", _selectable_again),
    Case("uncommitted work left at implement", {}, {"implement": "dirty"},
         ("failed", "failed", "implement"), "git harn workflow discard 21.1 --yes", _selectable_again),
    Case("an integration that died midway", {}, {},
         ("halted", "halted", "integrate"), "git harn integrate roadmap-21.1 --resume-after-crash", _landed,
         before=_crash_marker),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_end_advises_a_command_that_runs_as_printed_and_moves_the_task_on(tmp_path: Path, case: Case) -> None:
    wf = fault_setup(tmp_path, ONE, workflow=case.workflow)
    faults(wf, case.misbehave)
    wf.script(case.script)
    if case.before is not None:
        case.before(wf)
    done = wf.run("--json", *case.flags)
    doc = done.json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert (task["state"], task["status"], task["stage"]) == case.end, task["detail"]
    assert task["next"]["command"] == case.command, task["next"]
    faults(wf, {})  # the trouble is over: the provider is back, the operator looked
    wf.script({})
    argv = shlex.split(task["next"]["command"])
    ran = subprocess.run(argv, cwd=wf.work, capture_output=True, text=True, timeout=180, check=False)
    assert ran.returncode == 0, (argv, ran.stdout, ran.stderr)
    case.moved_on(wf)


# --- a next step run on an unchanged state never gives the same state (issue 45, item 5) ----------

_NEXT = re.compile(r"^next(?: for \S+)?: (?P<command>.+)\n  \((?P<why>.*)\)$", re.MULTILINE)
# ends whose cause is outside the task's work: their advice must say what has to change first
_OUTSIDE = {"auth-fault": "credential", "provider-fault": "provider", "infra-fault": "outside the task"}


@dataclass(frozen=True)
class Seen:
    """What a run left: the task branch's tip, the base on the remote, and the steps it printed."""

    tip: str | None
    base: str
    steps: tuple[tuple[str, str], ...]  # (command, why)

    @property
    def finished(self) -> bool:
        return not self.steps


def _seen(wf: WF, out: str) -> Seen:
    # one step per command: a resumed task's is printed for the task and for the survivor, and a
    # run that stopped starting tasks prints its own, the same command with its own reason
    whys: dict[str, list[str]] = {}
    for m in _NEXT.finditer(out):
        whys.setdefault(m["command"], []).append(m["why"])
    steps = tuple((command, " | ".join(said)) for command, said in whys.items())
    return Seen(ref(wf.work, "refs/heads/roadmap-21.1"), git(wf.remote, "rev-parse", "main"), steps)


def _run_step(wf: WF, command: str) -> Seen:
    ran = subprocess.run(shlex.split(command), cwd=wf.work, capture_output=True, text=True, timeout=180,
                         check=False)
    assert ran.returncode in (0, 3), (command, ran.stdout, ran.stderr)
    return _seen(wf, ran.stdout)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_ends_next_step_run_twice_on_an_unchanged_state_never_repeats_that_state(
        tmp_path: Path, case: Case) -> None:
    """The agents go on misbehaving as they did: the printed step, run as
    printed, and then the step that run printed, must each change what the
    run left (a new tip, a moved base, another step) or finish, unless the
    end's cause is outside the task's work and its advice says so."""
    wf = fault_setup(tmp_path, ONE, workflow=case.workflow)
    faults(wf, case.misbehave)
    wf.script(case.script)
    if case.before is not None:
        case.before(wf)
    first = wf.run(*case.flags)
    assert first.code == 3, first.err
    seen = _seen(wf, first.out)
    assert [c for c, _ in seen.steps] == [case.command], first.out
    for _ in range(2):  # the printed step, then the step its run printed
        if seen.finished:
            break
        (command, why), = seen.steps
        after = _run_step(wf, command)
        outside = _OUTSIDE.get(case.end[0])
        if outside is not None and after == seen:
            assert outside in why, why  # the same state again: the advice said what must change first
            break
        assert after.finished or after != seen, (command, seen)
        seen = after


def test_a_task_that_landed_advises_nothing(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE, workflow=ROUND_ONE)
    task = wf.run("--json").json()["tasks"][0]
    assert (task["state"], task["next"]) == ("done", {"command": None, "why": "landed"})


def test_advice_repeats_the_remote_and_base_the_operator_named(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE, workflow=ROUND_ONE)
    git(wf.work, "remote", "rename", "origin", "up")
    faults(wf, {"21.1:plan": "exit77"})
    task = wf.run("--json", "--remote", "up", "--base", "main").json()["tasks"][0]
    assert task["next"]["command"] == "git harn workflow run --remote up --base main"
    faults(wf, {})
    ran = subprocess.run(shlex.split(task["next"]["command"]), cwd=wf.work, capture_output=True, text=True,
                         timeout=180, check=False)
    assert ran.returncode == 0, ran.stderr
    _landed(wf)


def test_an_interrupted_run_advises_per_task_from_what_each_left(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 12.1 Has work when stopped\n- [ ] 12.2 Stopped while planning\n")
    wf.script({"12.1:implement": "commit-hang", "12.2:plan": "hang"})
    _, out, _, _ = sigterm_when_hanging(wf, ["--parallel", "2", "--json"], 2)
    tasks = {t["taskId"]: t for t in json.loads(out)["tasks"]}
    assert [(tasks[i]["state"], tasks[i]["status"]) for i in ("12.1", "12.2")] == [("interrupted", "halted")] * 2
    assert tasks["12.1"]["next"]["command"] == RESUME  # its commit is kept on roadmap-12.1
    assert tasks["12.2"]["next"]["command"] == "git harn workflow run"  # nothing committed: no branch left
    assert ref(wf.work, "refs/heads/roadmap-12.2") is None
    wf.script({})
    ran = subprocess.run(shlex.split(tasks["12.1"]["next"]["command"]), cwd=wf.work, capture_output=True,
                         text=True, timeout=180, check=False)
    assert ran.returncode == 0, ran.stderr
    roadmap = wf.remote_file("docs/roadmap.md")
    assert "- [x] 12.1 " in roadmap and "- [x] 12.2 " in roadmap  # the one command moved both on


# --- the run's halts -------------------------------------------------------------------


def _run_as_printed(wf: WF, command: str) -> subprocess.CompletedProcess[str]:
    ran = subprocess.run(shlex.split(command), cwd=wf.work, capture_output=True, text=True, timeout=180,
                         check=False)
    assert ran.returncode == 0, (command, ran.stdout, ran.stderr)
    return ran


@pytest.mark.parametrize(("script", "command", "moved_on"), [
    ({"review": "never-approve"}, RESUME, _landed),  # report-only in assess mode: continue mode resumes it
    ({"implement": "dirty"}, "git harn workflow discard 21.1 --yes", _selectable_again),  # continue refuses dirt
])
def test_needs_operator_recovery_names_what_moves_each_survivor_on(
        tmp_path: Path, script: dict[str, str], command: str, moved_on: Callable[[WF], None]) -> None:
    wf = fault_setup(tmp_path, ONE, workflow=ROUND_ONE)
    wf.script(script)
    wf.run("--json")
    wf.script({})
    done = wf.run("--json", "--resume-partial-branches")  # assess mode: report only
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert done.code == 3 and doc["halted"].startswith("needs-operator-recovery: 1 surviving branch(es)")
    [unresolved] = doc["recovery"]["unresolved"]
    assert unresolved["next"]["command"] == command, unresolved
    assert f"next for roadmap-21.1: {command}" in wf.run("--resume-partial-branches").out
    _run_as_printed(wf, command)
    moved_on(wf)


def test_a_blocked_preflight_names_the_relaunch_that_starts_the_run(tmp_path: Path) -> None:
    flag = tmp_path / "no-credential"
    flag.write_text("")
    check = json.dumps([sys.executable, "-c", f"import os, sys; sys.exit(1 if os.path.exists({str(flag)!r}) else 0)"])
    wf = fault_setup(tmp_path, ONE, workflow=ROUND_ONE, extra=f"\n[agents.preflight]\ncommand = {check}\n")
    doc = wf.run("--json").json()
    assert doc["blocked"] == "auth-preflight-failed"
    assert doc["next"]["command"] == "git harn workflow run"
    flag.unlink()  # the credential works again
    _run_as_printed(wf, doc["next"]["command"])
    _landed(wf)


def test_a_manual_merge_ready_addendum_advises_the_integrate_that_lands_it(tmp_path: Path) -> None:
    from tests.kit.addenda_repo import make
    from tests.kit.addenda_repo import script as addendum_script

    wf = make(tmp_path, "# R\n\n- [x] 2.1 Landed\n  - [ ] addendum 1: polish it\n")
    addendum_script(wf, {"addendum": "mmr"})
    task = wf.run("--json").json()["tasks"][0]
    assert (task["state"], task["next"]["command"]) == (
        "manual-merge-ready", "git harn integrate roadmap-2.1-addendum-1")
    _run_as_printed(wf, task["next"]["command"])  # the operator checked it; it lands as one squash
    assert "  - [x] addendum 1: polish it" in wf.remote_file("docs/roadmap.md")
    assert ref(wf.work, "refs/harnery/integrated/2.1-addendum-1") is not None
