"""ExecPlan status lines and plan names: untrusted text, parsed as data [P5]."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_harn.tasks.execplan import STATUSES, parse_status, plan_task_id, task_plan_name
from git_harn.tasks.roadmap import decode, parse_roadmap, parse_task_branch, read_roadmap, unblocked


@pytest.mark.parametrize(("text", "status"), [
    ("Status: COMPLETE", "COMPLETE"),
    ("**Status:** in progress", "IN PROGRESS"),
    ("- _Status_: *Blocked*", "BLOCKED"),
    ("## status: Draft.", "DRAFT"),
    ("Status: `IN_PROGRESS`", "IN PROGRESS"),
    ("> **STATUS**: approved", "APPROVED"),
    ("Status: WIP\nStatus: DRAFT", "DRAFT"),
    ("Status: COMPLETE; rm -rf /", None),
    ("The status: COMPLETE", None),
    ("x" * 10_000 + "\nStatus: COMPLETE", "COMPLETE"),
    ("Status: " + "COMPLETE" * 1000, None),
])
def test_status_line_forms(text: str, status: str | None) -> None:
    assert parse_status(f"# Plan\n\n{text}\n".encode()) == status


def test_binary_and_huge_plans_have_no_status() -> None:
    assert parse_status(b"\0\xff\xfe" * 100_000 + b"\nStatus: COMPLETE\n") == "COMPLETE"
    assert parse_status(b"\0" * (2 << 20) + b"\nStatus: COMPLETE\n") is None  # beyond what is read


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_parse_without_error(raw: bytes) -> None:
    assert parse_status(raw) in (*STATUSES, None)
    parse_roadmap(raw.decode("utf-8", "replace"))


def test_plan_names() -> None:
    assert plan_task_id("1.2.md") == "1.2"
    assert plan_task_id("1.2-add-the-thing.md") == "1.2"
    assert plan_task_id("1.2.3.md") == "1.2.3"
    assert plan_task_id("README.md") is None and plan_task_id("1.2.txt") is None
    assert task_plan_name(["1.2.1.md", "1.2-b.md", "1.2-a.md"], "1.2") == "1.2-a.md"
    assert task_plan_name(["1.2-a.md", "1.2.md"], "1.2") == "1.2.md"
    assert task_plan_name(["1.20.md", "1.2.1.md"], "1.2") is None


def test_hostile_roadmap_lines_are_not_tasks() -> None:
    text = "- [ ] 1.2 $(rm -rf ~) `id`\n- [ ] 1.3; touch x\n- [ ] $(x) 1.4\n" + "- [ ] 9 " + "a" * 10_000 + "\n"
    roadmap = read_roadmap(text)
    assert [(t.id, t.title) for t in roadmap.tasks] == [("1.2", "$(rm -rf ~) `id`")]
    assert [u.line for u in roadmap.unparsed] == [2, 3, 4]  # reported, never a task
    assert parse_task_branch("roadmap-1.2;rm") is None
    assert parse_task_branch("roadmap-1.2-addendum-3") == ("1.2", 3)


@pytest.mark.parametrize("line", [
    " " * 4095 + "x",
    "-" + " " * 4094 + "x",
    "status" + " " * 4089 + "x",
    "Status:" + " \t*" * 1360 + "x",
    "Status: COMPLETE" + " " * 4079 + "x",
])
def test_long_whitespace_runs_parse_in_linear_time(line: str) -> None:
    """A 1 MiB plan of lines built to make a backtracking regex quadratic [P5]."""
    raw = ((line + "\n") * ((1 << 20) // (len(line) + 1))).encode()
    started = time.monotonic()
    assert parse_status(raw) is None
    assert time.monotonic() - started < 0.5


def test_hostile_roadmap_parses_exactly_the_well_formed_tasks() -> None:
    marker = "/tmp/pwned-by-roadmap"
    raw = b"\n".join([
        f"- [ ] 1.1 $(touch {marker}) `touch {marker}`; touch {marker} | sh".encode(),
        b"  Requires: 1.0; rm -rf ~",  # words that name no task: 1.1 never runs
        b"- [ ] " + b"9" * 5000,  # a huge line is never a task
        b"- [x] 1.2 " + b"a" * 4000,  # long but within the line limit
        b"- [ ] 1.3 " + b"b" * 5000,
        b"- [ ] 1.4 \xff\xfe\0 binary",
        b"\0\x01- [ ] 1.5 hidden behind binary",
        b"- [ ] $(echo 1.7) not an id",
        b"- [ ] 1.6;rm -rf ~",  # not a task: reported as unparsed
        b"  Requires: 1.1, 1.2",  # so this belongs to 1.4
        b"\0\xff" * 100_000,
        b" " * 4095 + b"x",
        b"- [ ] 1.8 last",
    ])
    started = time.monotonic()
    tasks = parse_roadmap(decode(raw))
    assert time.monotonic() - started < 0.5
    assert [(t.id, t.done, t.requires) for t in tasks] == [
        ("1.1", False, ["1.0;", "rm", "-rf", "~"]), ("1.2", True, []), ("1.4", False, ["1.1", "1.2"]),
        ("1.8", False, [])]
    assert tasks[0].title == f"$(touch {marker}) `touch {marker}`; touch {marker} | sh"
    assert tasks[1].title == "a" * 4000
    assert tasks[2].title == "\ufffd\ufffd\0 binary"
    assert [t.id for t in unblocked(tasks)] == ["1.8"]
