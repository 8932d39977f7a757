"""The roadmap's one task grammar: what is a task, what is bad input, and what
is reported as ``unparsed`` so that no task disappears unseen (issue 23
items 1-3) [P5]."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_harn.errors import BadInput
from git_harn.tasks.roadmap import parse_roadmap, read_roadmap, tick, validate_task_id
from tests.kit.harn import all_refs, assert_valid, harn
from tests.kit.workflow_repo import setup

ODD = (
    "# R\n\n"
    "  - [ ] addendum 1: before any task\n"
    "- [ ] 9.1 First\n"
    "- [ ] 9.3a Letter in the id\n"
    "- [ ] 9..4 Empty number\n"
    "- [ ] fix/../x Path as an id\n"
    "- [ ] 1.2.3.4.5.6.7.8.9.10.11 Eleven levels\n"
    "- [ ] 9.5;rm Semicolon\n"
    "- [ ] 9.6: Colon\n"
    "- [ ] \u0669.1 Arabic-Indic digit\n"
    "+ [ ] 9.7 Plus bullet\n"
    "1. [ ] 9.8 Numbered item\n"
    "- [ ] 9.9 Last\n"
    "  - [ ] addendum 1: real\n"
    "  - [ ] addendum 1: repeated number\n"
    "- [ ]\n"
    "- plain bullet, no box: prose\n"
)


def test_tasks_are_the_lines_the_grammar_names() -> None:
    roadmap = read_roadmap(ODD)
    assert [(t.id, t.title) for t in roadmap.tasks] == [
        ("9.1", "First"), ("9.6", "Colon"), ("9.7", "Plus bullet"), ("9.9", "Last")]
    assert [a.number for a in roadmap.tasks[-1].addenda] == [1]


def test_every_checkbox_line_that_is_not_a_task_is_reported_with_its_line() -> None:
    unparsed = read_roadmap(ODD).unparsed
    assert [u.line for u in unparsed] == [3, 5, 6, 7, 8, 9, 11, 13, 16, 17]
    by_line = {u.line: u for u in unparsed}
    assert by_line[5].text == "- [ ] 9.3a Letter in the id"
    assert "not under a task" in by_line[3].reason
    assert "'9.3a' is not a task id" in by_line[5].reason
    assert "'9.5;rm' is not a task id" in by_line[9].reason
    assert "'\u0669.1' is not a task id" in by_line[11].reason
    assert "numbered" in by_line[13].reason
    assert "repeats addendum 1 of task 9.9 (line 15)" in by_line[16].reason
    assert "empty" in by_line[17].reason
    assert all(u.reason for u in unparsed)


def test_a_line_too_long_to_be_a_task_is_reported_not_dropped() -> None:
    long = "- [ ] 3.1 " + "x" * 5000
    roadmap = read_roadmap(f"- [ ] 3.0 ok\n{long}\n")
    assert [t.id for t in roadmap.tasks] == ["3.0"]
    assert [u.line for u in roadmap.unparsed] == [2]
    assert "longer than" in roadmap.unparsed[0].reason and len(roadmap.unparsed[0].text) <= 200


@pytest.mark.parametrize("task_id", ["\u0661", "1.\u0662", "\uff11.2", "1.2.3.4.5.6.7.8.9.10.11", "1234567890"])
def test_ids_are_ascii_digits_only(task_id: str) -> None:
    with pytest.raises(BadInput):
        validate_task_id(task_id)


def test_a_duplicate_id_is_bad_input_naming_both_lines() -> None:
    text = "# R\n\n- [ ] 9.1 First\n- [ ] 9.2 Other\n- [x] 9.1 Duplicate of first\n"
    with pytest.raises(BadInput, match=r"task id 9\.1 .*lines 3 and 5"):
        parse_roadmap(text)
    with pytest.raises(BadInput, match="lines 3 and 5"):
        tick(text, "9.2")  # nothing acts on such a roadmap, integration included


def test_requires_names_ids_separated_by_commas_or_spaces() -> None:
    tasks = parse_roadmap("- [ ] 1.1 a\n- [ ] 1.2 b\n- [ ] 1.3 c\n  Requires: 1.1, 1.2 9.99 and\n")
    assert tasks[2].requires == ["1.1", "1.2", "9.99", "and"]  # the last two name no task


# --- end to end ----------------------------------------------------------------------


def test_duplicate_ids_refuse_the_run_before_anything_is_created(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 First\n- [ ] 9.1 Duplicate of first\n- [ ] 9.2 Next\n")
    before = all_refs(wf.work)
    for args in (("--json",), ("--dry-run",)):
        done = wf.run(*args)
        assert done.code == 2, done.out + done.err
        assert "task id 9.1" in done.err and "lines 3 and 4" in done.err
        assert done.err.count("\n") == 1
    assert all_refs(wf.work) == before
    assert wf.log() == [] and not (tmp_path / "worktrees").exists()


def test_dry_run_and_show_list_unparsed_lines(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 First\n- [ ] 9.3a Odd\n- [ ] 9.5;rm Semicolon\n")
    dry = wf.run("--dry-run", "--json")
    assert dry.code == 0, dry.err
    doc = dry.json()
    assert_valid(doc, "workflow-result")
    assert doc["selected"] == ["9.1"]
    assert [(u["line"], u["text"]) for u in doc["unparsed"]] == [(4, "- [ ] 9.3a Odd"),
                                                                 (5, "- [ ] 9.5;rm Semicolon")]
    human = wf.run("--dry-run").out
    assert "unparsed line 4: - [ ] 9.3a Odd ('9.3a' is not a task id" in human
    assert "unparsed line 5:" in human
    ran = wf.run("--json")
    assert ran.code == 0, ran.err
    assert [t["taskId"] for t in ran.json()["tasks"]] == ["9.1"]
    assert "- [ ] 9.5;rm Semicolon" in wf.remote_file("docs/roadmap.md")  # never landed as 9.5
    shown = harn(wf.work, "workflow", "show", "--json")
    assert_valid(shown.json(), "workflow-result")
    assert [u["line"] for u in shown.json()["unparsed"]] == [4, 5]
    assert "unparsed line 5: - [ ] 9.5;rm Semicolon" in harn(wf.work, "workflow", "show").out


def test_a_requirement_naming_no_task_is_skipped_and_said(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 First\n- [ ] 9.2 Waits for a ghost\n  Requires: 9.1, 9.99\n")
    dry = wf.run("--dry-run", "--json").json()
    skipped = {s["taskId"]: s for s in dry["skipped"]}
    assert skipped["9.2"]["reason"] == "unknown-requirement"
    assert "9.99" in skipped["9.2"]["detail"]
    assert "skipped 9.2: unknown-requirement (requires 9.99, which names no task" in wf.run("--dry-run").out
    ran = wf.run("--json")
    doc = ran.json()
    assert_valid(doc, "workflow-result")
    assert [t["taskId"] for t in doc["tasks"]] == ["9.1"]  # 9.1 landed; 9.2 still cannot run
    assert {"taskId": "9.2", "reason": "unknown-requirement"}.items() <= {
        s["taskId"]: s for s in doc["skipped"]}["9.2"].items()


# After 9.1 lands, someone pushes a roadmap that names 9.1 twice.
DUPLICATING_HOOK = """#!/bin/sh
if git log -1 --format=%B main | grep -q '^Harnery-Task: 9.1$'; then
  unset GIT_DIR
  there=$(pwd)
  git clone -q "$there" "$there.dup" && cd "$there.dup" || exit 1
  printf -- '- [ ] 9.1 Again\\n' >> docs/roadmap.md
  git -c user.name=Other -c user.email=other@example.com commit -qam 'a duplicate id'
  git push -q origin main
fi
"""


def test_a_duplicate_pushed_during_the_run_stops_selection_and_is_said(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 First\n- [ ] 9.2 After it\n  Requires: 9.1\n")
    hook = wf.remote / "hooks" / "post-receive"
    hook.write_text(DUPLICATING_HOOK)
    hook.chmod(0o755)
    done = wf.run("--json")
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert [(t["taskId"], t["status"]) for t in doc["tasks"]] == [("9.1", "done")]
    assert "no further task selected" in doc["halted"] and "lines 3 and 6" in doc["halted"]
    assert doc["outcome"] == "workflow-incomplete" and doc["finished"] is True
    assert "- [ ] 9.1 Again" in wf.remote_file("docs/roadmap.md")
