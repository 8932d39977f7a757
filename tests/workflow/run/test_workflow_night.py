"""The operator's night (issue 47, as one story): a run of five tasks four
at a time under a spending limit, watched from beside it, telling a command
of the operator's choice what happened; the limit stops it with no work
lost, and its advice, run as printed, finishes the roadmap.

The stage agents are the fake ``claude`` (reporting a cost as claude does),
each waiting for a file the test writes, so the test sets the pace.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.kit.adapter_fakes import PLAN_OK, claude_init, claude_result, fake_cli_env
from tests.kit.harn import assert_valid, git, harn
from tests.kit.runners import GIT_HARN, record_id, start
from tests.kit.workflow_repo import setup
from tests.workflow.agents.test_workflow_spend import APPROVE, config, stages_run
from tests.workflow.page.test_workflow_watch import Lines

ROADMAP = "# R\n\n" + "".join(f"- [ ] 1.{n} Task {n}\n" for n in range(1, 6))
TASKS = [f"1.{n}" for n in range(1, 6)]

# appends the one event it is given, as one line (one write: events arrive from processes of their own)
NOTIFIER = ("import os, sys\ndoc = sys.stdin.read().strip()\n"
            "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT)\n"
            "os.write(fd, (doc.replace('\\n', ' ') + '\\n').encode())\n")


def scenario(calls: Path) -> None:
    """Each plan and implement costs $1, each of the two reviewers $0.25: a task
    $2.50. 1.1's plan, implement and reviews wait for ``go-1.1-<stage>``, every other
    plan for ``go-rest``."""
    plan = [claude_init(), {"await": "go-rest"}, {"work": "plan"}, claude_result(PLAN_OK, cost=1.0)]
    (calls / "scenario.json").write_text(json.dumps({
        "task:1.1:stage:plan": [claude_init(), {"await": "go-1.1-plan"}, {"work": "plan"},
                                claude_result(PLAN_OK, cost=1.0)],
        "task:1.1:stage:implement": [claude_init(), {"await": "go-1.1-implement"}, {"work": "implement"},
                                     claude_result({"ok": True, "summary": "built"}, cost=1.0)],
        "stage:plan": plan,
        "stage:implement": [claude_init(), {"work": "implement"},
                            claude_result({"ok": True, "summary": "built"}, cost=1.0)],
        "task:1.1:stage:review": [claude_init(), {"await": "go-1.1-review"}, claude_result(APPROVE, cost=0.25)],
        "stage:review": [claude_init(), claude_result(APPROVE, cost=0.25)],
    }))


def told(path: Path, count: int, seconds: float = 30) -> list[dict[str, Any]]:
    """The events the notifier was given, once ``count`` were (they come in the background)."""
    deadline = time.monotonic() + seconds
    while (not path.exists() or len(path.read_text().splitlines()) < count) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1)  # one more would show now
    events = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    for event in events:
        assert_valid(event, "workflow-event")
    return events


def advice_of(out: str) -> str:
    [advice] = [line.removeprefix("next: ") for line in out.splitlines() if line.startswith("next: ")]
    return advice


def _until_called(calls: Path, task: str, stage: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while (task, stage) not in stages_run(calls):
        assert time.monotonic() < deadline, stages_run(calls)
        time.sleep(0.05)


def test_a_watched_night_under_a_limit_tells_the_operator_and_the_advice_finishes_it(tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    scenario(calls)
    wf = setup(tmp_path, roadmap=ROADMAP, config=config())
    script = tmp_path / "tell.py"
    script.write_text(NOTIFIER)
    events_file = tmp_path / "events.jsonl"
    notify = shlex.join([sys.executable, str(script), str(events_file)])
    run = start(wf.work, "workflow", "run", "--parallel", "4", "--max-cost-usd", "3.5", "--notify", notify, env=env)
    with run:
        _until_called(calls, "1.4", "plan")
        workflow_id = record_id(wf.work)
        watch = subprocess.Popen([GIT_HARN, "workflow", "watch", "--plain"], cwd=wf.work, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        out = Lines(watch.stdout)
        try:
            out.wait_for(rf"workflow {workflow_id} on origin/main: running\n")
            for task in TASKS[:4]:
                out.wait_for(rf"task {re.escape(task)}: planning")
            (calls / "go-1.1-plan").write_text("")
            out.wait_for(r"task 1\.1: implementing at implement #1")
            (calls / "go-1.1-implement").write_text("")
            out.wait_for(r"task 1\.1: reviewing at review r1")
            (calls / "go-1.1-review").write_text("")
            out.wait_for(r"task 1\.1: done")
            _until_called(calls, "1.5", "plan")  # 1.1 landed: its place went to 1.5
            (calls / "go-rest").write_text("")  # four plans end together: the first reaches $3.50
            assert watch.wait(timeout=60) == 3, out.text + (watch.stderr.read() if watch.stderr else "")
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.wait()
        stdout, stderr = run.proc.communicate(timeout=60)
    assert run.proc.returncode == 3, stdout + stderr
    # the watch: tasks moving through their stages, then the run's summary and its exit code
    lines = out.text.splitlines()
    # it ends with the run's summary and next steps, word for word as the run printed them
    summary = lines.index(next(line for line in lines if line.startswith(f"workflow {workflow_id} on origin/main (")))
    assert lines[summary:] == stdout.splitlines() and "5 tasks: 1 done, 4 halted" in lines[summary:], lines
    [ending] = [line for line in lines if line.endswith(f"workflow {workflow_id} on origin/main: ended")]
    counts = lines[lines.index(ending) + 1]
    # a task the limit halted keeps its work: it is halted, as the summary says, not failed
    assert counts[9:].startswith("landed 1, halted 4, failed 0, running 0, waiting 0, faults 0; spent $6.50 of the "
                                 "$3.50 limit, reached at plan of task "), counts
    doc = harn(wf.work, "workflow", "show", workflow_id, "--json").json()
    assert_valid(doc, "workflow-result")
    by_id = {t["taskId"]: t for t in doc["tasks"]}
    assert by_id["1.1"]["status"] == "done"
    for task in TASKS[1:]:
        halted = by_id[task]
        assert (halted["status"], halted["stage"], halted["faultKind"]) == ("halted", "implement", "budget"), halted
        assert f"plan {task} by claude" in git(wf.work, "log", "--format=%s", f"roadmap-{task}")  # no work lost
    spending = doc["breakers"]["spending"]
    assert (spending["limitUsd"], spending["spentUsd"], spending["reached"]["spentUsd"]) == (3.5, 6.5, 3.5)
    assert [t for t, s in stages_run(calls) if s == "implement"] == ["1.1"]  # nothing started past the limit
    # told: the limit as it was reached, then the halt for it; nothing twice
    events = told(events_file, 2)
    assert [(e["event"], e["reason"]) for e in events] == [("spending-limit", "budget"), ("run-halted", "budget")]
    assert all(e["workflowId"] == workflow_id for e in events)
    assert events[1]["next"] == doc["next"] and events[1]["spentUsd"] == 6.5
    # the advice, run exactly as printed, finishes the roadmap; it never repeats --notify (the record that
    # keeps it is shared), so the operator's own config names the notifier from here on
    advice = advice_of(stdout)
    words = shlex.split(advice)
    assert words[:2] == ["git", "harn"] and "--max-cost-usd" in words and "--notify" not in words, advice
    own = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "harn.notify", "GIT_CONFIG_VALUE_0": notify}
    second = harn(wf.work, *words[2:], env={**env, **own})
    assert second.code == 0, (second.out, second.err)
    roadmap = wf.remote_file("docs/roadmap.md")
    assert all(f"- [x] {task}" in roadmap for task in TASKS), roadmap
    assert [t for t, s in stages_run(calls) if s == "plan"].count("1.2") == 1  # resumed, not planned again
    more = told(events_file, 3)
    assert [(e["event"], e["reason"]) for e in more] == [
        ("spending-limit", "budget"), ("run-halted", "budget"), ("run-finished", None)], more


def _watch(cwd: Path, *args: str) -> tuple[subprocess.Popen[str], Lines]:
    proc = subprocess.Popen([GIT_HARN, "workflow", "watch", "--plain", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    return proc, Lines(proc.stdout)


def test_the_same_night_watched_from_another_machine_with_sync(tmp_path: Path) -> None:
    """The runner's machine shares the run's record by watching it with
    ``--sync`` (the run never pushes it itself); another clone with a host
    name of its own follows it with ``--sync 1`` to its end."""
    env, calls = fake_cli_env(tmp_path)
    scenario(calls)
    wf = setup(tmp_path, roadmap=ROADMAP, config=config())
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "clone", "-q", str(wf.remote), str(elsewhere))
    git(wf.work, "config", "harn.host", "runner-machine")
    git(elsewhere, "config", "harn.host", "elsewhere")
    run = start(wf.work, "workflow", "run", "--parallel", "4", "--max-cost-usd", "3.5", env=env)
    with run:
        _until_called(calls, "1.4", "plan")
        workflow_id = record_id(wf.work)
        sharing, shared = _watch(wf.work, "--sync", "1")
        shared.wait_for(r"synced with origin")  # the record is on the remote: the other machine finds it
        far, seen = _watch(elsewhere, "--sync", "1")
        try:
            seen.wait_for(rf"workflow {workflow_id} on origin/main: running\n")
            seen.wait_for(r"task 1\.1: ")
            # from there only the record tells (a stage's moves are in the runner's run folder): 1.1 lands
            for stage in ("plan", "implement", "review"):
                (calls / f"go-1.1-{stage}").write_text("")
            seen.wait_for(r"task 1\.1: done")
            _until_called(calls, "1.5", "plan")
            (calls / "go-rest").write_text("")
            stdout, stderr = run.proc.communicate(timeout=60)
            assert run.proc.returncode == 3, stdout + stderr
            assert sharing.wait(timeout=60) == 3, shared.text
            assert far.wait(timeout=60) == 3, seen.text + (far.stderr.read() if far.stderr else "")
        finally:
            for proc in (sharing, far):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    lines = seen.text.splitlines()
    summary = lines.index(next(line for line in lines if line.startswith(f"workflow {workflow_id} on origin/main (")))
    assert lines[summary:] == stdout.splitlines(), lines
    assert any(line[9:].startswith("landed 1, halted 4, failed 0, running 0") for line in lines), lines
