"""Addendum items in the roadmap: parsed under their task, ticked one at a time
(issue 13 item 7) [R5] [P5]."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_harn.errors import BadInput
from git_harn.tasks.roadmap import open_addenda, parse_roadmap, tick, tick_addendum, tick_item

ROADMAP = (
    "# Roadmap\n\n"
    "- [x] 1.1 First thing\n"
    "  Requires: 0.9\n"
    "  - [ ] addendum 1: tidy the parser\n"
    "  - [x] addendum 2: document it\n"
    "  * [ ] addendum 3:   spaces around   \n"
    "- [ ] 1.2 Second thing\n"
    "  - [ ] addendum 1: not yet selectable\n"
    "- [x] 1.3 Third thing\n"
)


def test_addenda_belong_to_the_task_above_them() -> None:
    tasks = parse_roadmap(ROADMAP)
    assert [t.id for t in tasks] == ["1.1", "1.2", "1.3"]
    first = tasks[0]
    assert [(a.number, a.title, a.done) for a in first.addenda] == [
        (1, "tidy the parser", False), (2, "document it", True), (3, "spaces around", False)]
    assert first.requires == ["0.9"] and first.end == 6 and first.addenda[0].line == 4
    assert [(a.task_id, a.number) for a in tasks[1].addenda] == [("1.2", 1)]
    assert tasks[2].addenda == []


def test_selectable_only_when_the_task_is_checked_and_the_box_is_not() -> None:
    assert [(a.task_id, a.number) for a in open_addenda(parse_roadmap(ROADMAP))] == [("1.1", 1), ("1.1", 3)]


@pytest.mark.parametrize("line", [
    "- [ ] addendum 1: not indented, so not an addendum",
    "  - [ ] addendum one: no number",
    "  - [ ] addendum 0: numbers start at 1",
    "  - [ ] addendum 4 missing colon",
    "  - [ ] Addendum-5: wrong shape",
    "  - [?] addendum 6: bad mark",
])
def test_lines_that_are_not_addenda(line: str) -> None:
    tasks = parse_roadmap(f"- [x] 2.1 Task\n{line}\n")
    assert [t.id for t in tasks] == ["2.1"] and tasks[0].addenda == []


def test_an_addendum_before_any_task_or_not_deeper_than_its_task_is_ignored() -> None:
    assert parse_roadmap("  - [ ] addendum 1: orphan\n") == []
    nested = parse_roadmap("  - [x] 3.1 Nested task\n  - [ ] addendum 1: same indent\n    - [ ] addendum 2: deeper\n")
    assert [a.number for a in nested[0].addenda] == [2]


def test_a_repeated_number_is_not_a_second_addendum() -> None:
    text = "- [x] 4.1 T\n  - [ ] addendum 1: first\n  - [ ] addendum 1: impostor\n"
    task = parse_roadmap(text)[0]
    assert [(a.number, a.title) for a in task.addenda] == [(1, "first")]
    ticked, changed = tick_addendum(text, "4.1", 1)
    assert changed and ticked == "- [x] 4.1 T\n  - [x] addendum 1: first\n  - [ ] addendum 1: impostor\n"


def test_ticking_an_addendum_changes_its_own_box_only() -> None:
    ticked, changed = tick_addendum(ROADMAP, "1.1", 3)
    assert changed
    assert ticked == ROADMAP.replace("  * [ ] addendum 3:", "  * [x] addendum 3:")
    assert tick_addendum(ticked, "1.1", 3) == (ticked, False)
    assert tick_item(ROADMAP, "1.2", None) == tick(ROADMAP, "1.2")
    # an addendum of another task with the same number stays as it was
    assert "  - [ ] addendum 1: not yet selectable" in tick_addendum(ROADMAP, "1.1", 1)[0]


def test_ticking_keeps_crlf_and_every_other_byte() -> None:
    text = ROADMAP.replace("\n", "\r\n")
    ticked, changed = tick_addendum(text, "1.1", 1)
    assert changed and ticked == text.replace("- [ ] addendum 1: tidy", "- [x] addendum 1: tidy")


def test_unknown_addendum_or_task_is_bad_input() -> None:
    with pytest.raises(BadInput, match="no addendum 9 under task 1.1"):
        tick_addendum(ROADMAP, "1.1", 9)
    with pytest.raises(BadInput, match="no task 7.7"):
        tick_addendum(ROADMAP, "7.7", 1)


def test_a_hostile_title_cannot_smuggle_a_second_item() -> None:
    text = "- [x] 5.1 T\n  - [ ] addendum 1: a\u2028  - [ ] addendum 2: smuggled\x85- [ ] 5.2 smuggled\n"
    tasks = parse_roadmap(text)
    assert [t.id for t in tasks] == ["5.1"]
    assert [a.number for a in tasks[0].addenda] == [1]


_titles = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(marks=st.lists(st.booleans(), min_size=1, max_size=6), titles=st.lists(_titles, min_size=6, max_size=6),
       task_done=st.booleans())
def test_parse_and_tick_round_trip(marks: list[bool], titles: list[str], task_done: bool) -> None:
    lines = [f"- [{'x' if task_done else ' '}] 6.1 Task", "  Requires: 6.0"]
    lines += [f"  - [{'x' if m else ' '}] addendum {n}: {titles[n - 1]}" for n, m in enumerate(marks, 1)]
    lines += ["- [ ] 6.2 Next"]
    text = "\n".join(lines) + "\n"
    task = parse_roadmap(text)[0]
    assert [(a.number, a.done) for a in task.addenda] == list(enumerate(marks, 1))
    assert task.end == len(marks) + 1
    expected_open = [n for n, m in enumerate(marks, 1) if not m] if task_done else []
    assert [a.number for a in open_addenda(parse_roadmap(text))] == expected_open
    for number in range(1, len(marks) + 1):
        ticked, changed = tick_addendum(text, "6.1", number)
        assert changed == (not marks[number - 1])
        before, after = text.split("\n"), ticked.split("\n")
        differing = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert differing == ([number + 1] if changed else [])
        again = parse_roadmap(ticked)
        assert again[0].addendum(number) is not None and again[0].addendum(number).done  # type: ignore[union-attr]
        assert [t.done for t in again] == [t.done for t in parse_roadmap(text)]
