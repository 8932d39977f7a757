"""The roadmap (``docs/roadmap.md``, git config ``harn.roadmap``) and task names.

A task is a list item ``- [ ] <id> <title>`` or ``- [x] <id> <title>`` (``*``
too, any indentation), ``<id>`` a dotted number. An indented line
``Requires: 1.2.1, 1.1.4`` under it lists what it waits for. An indented item
``- [ ] addendum <n>: <title>`` under it is an addendum: follow-up work on the
task, selectable once the task is checked and its own box is not. The text is
untrusted [P5]: a hostile line can only fail to parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from git_harn.errors import BadInput

DEFAULT_ROADMAP = "docs/roadmap.md"
MAX_LINE = 4096  # longer lines are not tasks; keeps every regex linear and cheap

TASK_ID = r"[0-9]{1,9}(?:\.[0-9]{1,9}){0,9}"
_TASK_LINE = re.compile(rf"^(?P<indent>[ \t]*)[-*][ \t]+\[(?P<mark>[ xX])\][ \t]+(?P<id>{TASK_ID})(?![\w.])"
                        r"[ \t]*(?P<title>.*)$")
_REQUIRES = re.compile(rf"^[ \t]+Requires:[ \t]*(?P<ids>{TASK_ID}(?:[ \t]*,[ \t]*{TASK_ID})*)[ \t]*$")
_ADDENDUM_LINE = re.compile(r"^(?P<indent>[ \t]+)[-*][ \t]+\[(?P<mark>[ xX])\][ \t]+addendum[ \t]+"
                            r"(?P<n>[1-9][0-9]{0,8})[ \t]*:[ \t]*(?P<title>.*)$")
_TASK_ID = re.compile(TASK_ID)
_TASK_BRANCH = re.compile(rf"^(?:refs/heads/)?roadmap-(?P<id>{TASK_ID})(?:-addendum-(?P<n>[0-9]{{1,9}}))?$")


@dataclass
class Addendum:
    """``- [ ] addendum <n>: <title>`` indented under task ``task_id``."""

    task_id: str
    number: int
    title: str
    done: bool
    line: int  # 0-based line number in the roadmap text
    indent: str = "  "


@dataclass
class Task:
    id: str
    title: str
    done: bool
    line: int  # 0-based line number in the roadmap text
    requires: list[str] = field(default_factory=list)
    addenda: list[Addendum] = field(default_factory=list)
    end: int = -1  # last line that belongs to the task (its Requires: and addendum lines)
    indent: str = ""

    @property
    def key(self) -> str:
        """What names this piece of work in a run: the task id."""
        return self.id

    def addendum(self, number: int) -> Addendum | None:
        return next((a for a in self.addenda if a.number == number), None)


def roadmap_path(config_value: str | None) -> str:
    return config_value or DEFAULT_ROADMAP


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def parse_roadmap(text: str) -> list[Task]:
    tasks: list[Task] = []
    for number, line in enumerate(_lines(text)):
        if len(line) > MAX_LINE:
            continue
        match = _TASK_LINE.match(line)
        if match:
            tasks.append(Task(match["id"], match["title"].strip(), match["mark"] != " ", number, end=number,
                              indent=match["indent"]))
            continue
        requires = _REQUIRES.match(line)
        if requires and tasks:
            tasks[-1].requires.extend(_TASK_ID.findall(requires["ids"]))
            tasks[-1].end = number
            continue
        addendum = _ADDENDUM_LINE.match(line)
        if addendum and tasks and len(addendum["indent"]) > len(tasks[-1].indent):
            _add_addendum(tasks[-1], addendum, number)
    return tasks


def _add_addendum(task: Task, match: re.Match[str], number: int) -> None:
    """The first item of a number counts; a repeated number is not an addendum
    (it could never be told apart from the first when ticked)."""
    n = int(match["n"])
    task.end = number
    if task.addendum(n) is None:
        task.addenda.append(Addendum(task.id, n, match["title"].strip(), match["mark"] != " ", number,
                                     match["indent"]))


def _lines(text: str) -> list[str]:
    """Lines as git and a reader see them: split on newlines only (str.splitlines
    would also split on \\x1c, \\x85, \\u2028 …, letting one hostile line pose as two)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def find_task(tasks: list[Task], task_id: str) -> Task | None:
    return next((t for t in tasks if t.id == task_id), None)


def unblocked(tasks: list[Task]) -> list[Task]:
    """Unchecked tasks whose every requirement is checked."""
    done = {t.id for t in tasks if t.done}
    return [t for t in tasks if not t.done and all(r in done for r in t.requires)]


def tick(text: str, task_id: str) -> tuple[str, bool]:
    """Mark ``task_id`` done. Returns (new text, whether it changed);
    BadInput when the roadmap has no such task."""
    lines = text.split("\n")
    task = find_task(parse_roadmap(text), task_id)
    if task is None:
        raise BadInput(f"roadmap has no task {task_id}")
    if task.done:
        return text, False
    line = lines[task.line]
    at = line.index("[ ]")
    lines[task.line] = line[:at] + "[x]" + line[at + 3:]
    return "\n".join(lines), True


def open_addenda(tasks: list[Task]) -> list[Addendum]:
    """Unchecked addenda of checked tasks, in roadmap order."""
    return [a for t in tasks if t.done for a in t.addenda if not a.done]


def tick_addendum(text: str, task_id: str, number: int) -> tuple[str, bool]:
    """Mark addendum ``number`` of ``task_id`` done, and nothing else.
    Returns (new text, whether it changed); BadInput when there is no such addendum."""
    task = find_task(parse_roadmap(text), task_id)
    if task is None:
        raise BadInput(f"roadmap has no task {task_id}")
    item = task.addendum(number)
    if item is None:
        raise BadInput(f"roadmap has no addendum {number} under task {task_id}")
    if item.done:
        return text, False
    lines = text.split("\n")
    line = lines[item.line]
    at = line.index("[ ]")
    lines[item.line] = line[:at] + "[x]" + line[at + 3:]
    return "\n".join(lines), True


def tick_item(text: str, task_id: str, addendum: int | None) -> tuple[str, bool]:
    """The task's own box, or (``addendum`` set) that addendum's box only."""
    return tick(text, task_id) if addendum is None else tick_addendum(text, task_id, addendum)


def validate_task_id(task_id: str) -> str:
    if not _TASK_ID.fullmatch(task_id):
        raise BadInput(f"invalid task id {task_id!r}: expected a dotted number such as 1.2.3")
    return task_id


def task_branch(task_id: str, addendum: int | None = None) -> str:
    suffix = f"-addendum-{addendum}" if addendum is not None else ""
    return f"roadmap-{task_id}{suffix}"


def parse_task_branch(branch: str) -> tuple[str, int | None] | None:
    """(task id, addendum number or None) for a ``roadmap-<id>[-addendum-<n>]`` branch."""
    match = _TASK_BRANCH.match(branch)
    if not match:
        return None
    return match["id"], int(match["n"]) if match["n"] else None
