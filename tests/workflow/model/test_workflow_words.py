"""Issue 45 item 10: what a run says of its tasks, from the same trial."""

from __future__ import annotations

from pathlib import Path

from tests.kit.harn import assert_valid, harn
from tests.kit.workflow_repo import setup

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


def test_show_never_advises_a_step_that_was_done(tmp_path: Path) -> None:
    """After the advised discard, show printed it again; run, it said
    "nothing to discard", exit 2."""
    wf = setup(tmp_path, roadmap=ONE)
    wf.script({"plan": "blocked"})
    wf.run()
    advised = "git harn workflow discard 21.1 --yes"
    assert f"next for roadmap-21.1: {advised}" in harn(wf.work, "workflow", "show").out
    discarded = harn(wf.work, *advised.split()[2:])
    assert discarded.code == 0, discarded.err
    shown = harn(wf.work, "workflow", "show")
    assert f"next for roadmap-21.1: {advised}" not in shown.out, shown.out
    assert "next for roadmap-21.1: nothing: roadmap-21.1 is gone" in shown.out
    document = harn(wf.work, "workflow", "show", "--json").json()
    assert_valid(document, "workflow-result")
    task = document["tasks"][0]
    assert task["next"]["command"] is None and task["recordedNext"]["command"] == advised
    assert harn(wf.work, *advised.split()[2:]).code == 2  # it was indeed done


def test_the_demo_and_its_readme_paragraph_say_what_the_run_advises(tmp_path: Path) -> None:
    result = harn(tmp_path, "demo", "--workflow", env={"TMPDIR": str(tmp_path)}, timeout=120)
    assert result.code == 0, result.err + result.out
    lines = result.out.splitlines()
    advised = next(line for line in lines if line.startswith("next for roadmap-1.4: "))
    command = advised.removeprefix("next for roadmap-1.4: ")
    assert command.startswith("git harn workflow run --resume-partial-branches")
    # The demo's own words name the run's advice before it does something else.
    prose = next(line for line in lines if line.startswith("the run's own next step for roadmap-1.4"))
    assert command in prose
    # Piped, the refused task's event line is whole (it was cut at about 200 characters).
    ended = next(line for line in lines if line.startswith("git harn: task 1.4: failed at review: "))
    assert ended.endswith("docs/execplans/1.4.md"), ended
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    paragraph = readme[readme.index("`git harn demo --workflow` shows"):].split("\n\n")[0]
    assert "--resume-partial-branches" in paragraph
    assert "the next step for the failed branch:\n`assess`, then `reclaim`" not in paragraph


def test_a_crashed_attempts_stderr_tail_is_kept_in_the_stage_files_and_the_record(tmp_path: Path) -> None:
    """The crash is retried in place and the retry lands: before, what the
    crashed agent said on stderr was kept nowhere."""
    wf = setup(tmp_path, roadmap=ONE)
    wf.script({"21.1:plan": {"1": "crash-loud"}})
    done = wf.run("--json")
    assert done.code == 0, done.err
    document = done.json()
    assert_valid(document, "workflow-result")
    plan = document["tasks"][0]["stages"]["plan"]
    assert plan["ok"] is True and plan["tries"] == 2
    crashed = plan["earlierFaults"]
    assert len(crashed) == 1 and crashed[0]["faultKind"] == "crash" and crashed[0]["exitCode"] == 7
    assert crashed[0]["stderrTail"].rstrip().endswith("FATAL 21.1 plan attempt 1: out of cheese")
    assert len(crashed[0]["stderrTail"]) <= 2100
    stored = harn(wf.work, "workflow", "show", "--json").json()["tasks"][0]["stages"]["plan"]
    assert stored["earlierFaults"] == crashed  # in the record, not only in the run's output
    kept = list((wf.work / ".git" / "harnery" / "workflow" / document["workflowId"]).glob("*plan*.stderr.txt"))
    assert len(kept) == 1, kept
    assert kept[0].read_text().rstrip().endswith("out of cheese")


def test_a_crash_that_ends_the_task_keeps_its_stderr_tail_in_the_stage_detail(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ONE)
    wf.script({"21.1:plan": "crash-loud"})
    document = wf.run("--json", "--stage-attempts", "1").json()
    plan = document["tasks"][0]["stages"]["plan"]
    assert plan["fault"] == "infra" and plan["stderrTail"].rstrip().endswith("attempt 1: out of cheese")
