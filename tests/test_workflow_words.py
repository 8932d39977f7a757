"""Issue 45 item 10: what a run says of its tasks, from the same trial."""

from __future__ import annotations

from pathlib import Path

from helpers import harn
from wfrepo import setup

ONE = "# Roadmap\n\n- [ ] 21.1 One thing\n"


def test_gates_that_ran_once_say_attempt_1_and_a_landed_task_names_no_misleading_attempt_count(
        tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ONE)
    wf.script({"21.1:implement": {"1": "crash"}})
    done = wf.run()
    assert done.code == 0, done.err
    assert "task 21.1: implement (attempt 2)" in done.err  # the crash, retried in place
    gates = [line for line in done.err.splitlines() if ": gates (" in line]
    assert gates == ["git harn: task 21.1: gates (attempt 1)"], done.err  # the gates ran once
    landed = next(line for line in done.err.splitlines() if line.startswith("git harn: task 21.1: done"))
    assert "after 1 attempt(s)" not in landed  # the task's implement took two
    assert "1 integration attempt(s)" in landed


def test_a_piped_event_line_is_whole(tmp_path: Path) -> None:
    """README: piped, the run prints whole lines (the demo's refused task's
    line was cut at about 200 characters)."""
    wf = setup(tmp_path, roadmap=ONE)
    wf.script({"21.1:plan": "crash-loud"})
    done = wf.run()
    assert done.code != 0
    detail = harn(wf.work, "workflow", "show", "--json").json()["tasks"][0]["detail"]
    assert len(detail) > 200
    ended = next(line for line in done.err.splitlines() if line.startswith("git harn: task 21.1: infra-fault"))
    assert ended == f"git harn: task 21.1: infra-fault at plan: {' '.join(detail.split())}"
