"""The roadmap (``docs/roadmap.md``, git config ``harn.roadmap``) and task names.

A task is a list item ``- [ ] <id> <title>`` or ``- [x] <id> <title>`` (``*``
too, any indentation), ``<id>`` a dotted number. An indented line
``Requires: 1.2.1, 1.1.4`` under it lists what it waits for. The text is
untrusted [P5]: a hostile line can only fail to parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from git_harn.errors import BadInput

DEFAULT_ROADMAP = "docs/roadmap.md"
MAX_LINE = 4096  # longer lines are not tasks; keeps every regex linear and cheap

TASK_ID = r"\d{1,9}(?:\.\d{1,9}){0,9}"
_TASK_LINE = re.compile(rf"^(?P<indent>[ \t]*)[-*][ \t]+\[(?P<mark>[ xX])\][ \t]+(?P<id>{TASK_ID})(?![\w.])"
                        r"[ \t]*(?P<title>.*)$")
_REQUIRES = re.compile(rf"^[ \t]+Requires:[ \t]*(?P<ids>{TASK_ID}(?:[ \t]*,[ \t]*{TASK_ID})*)[ \t]*$")
_TASK_ID = re.compile(TASK_ID)
_TASK_BRANCH = re.compile(rf"^(?:refs/heads/)?roadmap-(?P<id>{TASK_ID})(?:-addendum-(?P<n>\d{{1,9}}))?$")


@dataclass
class Task:
    id: str
    title: str
    done: bool
    line: int  # 0-based line number in the roadmap text
    requires: list[str] = field(default_factory=list)


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
            tasks.append(Task(match["id"], match["title"].strip(), match["mark"] != " ", number))
            continue
        requires = _REQUIRES.match(line)
        if requires and tasks:
            tasks[-1].requires.extend(_TASK_ID.findall(requires["ids"]))
    return tasks


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
