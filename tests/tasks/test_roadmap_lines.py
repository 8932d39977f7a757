"""The roadmap splits lines as git does: on newlines only [P5]."""

from __future__ import annotations

from git_harn.tasks.roadmap import parse_roadmap, tick


def test_unicode_line_separators_do_not_make_hidden_tasks() -> None:
    text = "- [ ] 1.1 Real task\u2028- [x] 1.2 smuggled\n- [ ] 1.3 Other\x85- [ ] 1.4 smuggled\r\n"
    tasks = parse_roadmap(text)
    assert [(t.id, t.done) for t in tasks] == [("1.1", False), ("1.3", False)]
    ticked, changed = tick(text, "1.3")
    assert changed
    assert ticked == text.replace("- [ ] 1.3", "- [x] 1.3")


def test_tick_keeps_every_other_byte() -> None:
    text = "# R\r\n- [ ] 2.1 a\r\n  Requires: 1.1\r\n- [ ] 2.2 b"
    ticked, changed = tick(text, "2.2")
    assert changed and ticked == "# R\r\n- [ ] 2.1 a\r\n  Requires: 1.1\r\n- [x] 2.2 b"
    assert tick(ticked, "2.2") == (ticked, False)
