"""The roadmap (``docs/roadmap.md``, git config ``harn.roadmap``) and task names.

The one grammar ("The roadmap" in docs/workflow.md says it for people):

- a task is a list item ``- [ ] <id> <title>`` or ``- [x] <id> <title>``
  (bullet ``-``, ``*`` or ``+``, any indentation), ``<id>`` a dotted number
  of ASCII digits (``[0-9]``, never another script's digits), at most ten
  numbers of at most nine digits, followed by a space (or ``": "``) and the
  title, or by the end of the line;
- an indented line ``Requires: 1.2.1, 1.1.4`` under a task lists what it
  waits for (commas or spaces between ids); a word there that names no task
  of the roadmap is an unknown requirement, and the task never runs;
- an indented item ``- [ ] addendum <n>: <title>`` under a task is an
  addendum: follow-up work on the task, selectable once the task is checked
  and its own box is not;
- two tasks with one id are bad input (``BadInput`` naming both lines);
- every other checkbox item is ``unparsed``: kept with its line number and
  why, for the workflow to report, so no task disappears unseen.

The text is untrusted [P5]: a hostile line can only fail to parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from git_harn.errors import BadInput
from git_harn.git import Oid, Repo
from git_harn.git.branches import file_at
from git_harn.text import one_line

DEFAULT_ROADMAP = "docs/roadmap.md"
MAX_LINE = 4096  # longer lines are not tasks; keeps every regex linear and cheap

TASK_ID = r"[0-9]{1,9}(?:\.[0-9]{1,9}){0,9}"
_BULLET = r"^(?P<indent>[ \t]*)[-*+][ \t]+\[(?P<mark>[ xX])\]"
_TASK_LINE = re.compile(rf"{_BULLET}[ \t]+(?P<id>{TASK_ID}):?(?:[ \t]+(?P<title>.*))?$")
_REQUIRES = re.compile(r"^[ \t]+Requires:(?P<ids>.*)$")
_ADDENDUM_LINE = re.compile(rf"{_BULLET}[ \t]+addendum[ \t]+(?P<n>[1-9][0-9]{{0,8}})[ \t]*:[ \t]*(?P<title>.*)$")
_CHECKBOX = re.compile(r"^[ \t]*(?P<bullet>[-*+]|[0-9]{1,9}[.)])[ \t]+\[[ xX]\](?P<rest>.*)$")
_TASK_ID = re.compile(TASK_ID)
_TASK_BRANCH = re.compile(rf"^(?:refs/heads/)?roadmap-(?P<id>{TASK_ID})(?:-addendum-(?P<n>[0-9]{{1,9}}))?$")
SHAPE = "a task is '- [ ] <id> <title>', <id> dotted ASCII numbers such as 1.2.3"


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


@dataclass
class Unparsed:
    """A checkbox line that is neither a task nor an addendum, and why."""

    line: int  # 1-based, as an editor shows it
    text: str
    reason: str


@dataclass
class Roadmap:
    tasks: list[Task] = field(default_factory=list)
    unparsed: list[Unparsed] = field(default_factory=list)


def roadmap_path(config_value: str | None) -> str:
    return config_value or DEFAULT_ROADMAP


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def parse_roadmap(text: str) -> list[Task]:
    """The tasks; BadInput when two of them have one id."""
    return read_roadmap(text).tasks


def read_roadmap(text: str) -> Roadmap:
    """Tasks and unparsed lines; BadInput when two tasks have one id."""
    roadmap = Roadmap()
    seen: dict[str, int] = {}
    for number, line in enumerate(_lines(text)):
        if len(line) > MAX_LINE:
            if _CHECKBOX.match(line[:200]):
                roadmap.unparsed.append(_unparsed(number, line, f"longer than {MAX_LINE} characters"))
            continue
        match = _TASK_LINE.match(line)
        if match:
            _add_task(roadmap, seen, match, number)
        elif not _belongs_to_task(roadmap, line, number):
            checkbox = _CHECKBOX.match(line)
            if checkbox:
                roadmap.unparsed.append(_unparsed(number, line, _why_not_a_task(checkbox)))
    return roadmap


def _add_task(roadmap: Roadmap, seen: dict[str, int], match: re.Match[str], number: int) -> None:
    task_id = match["id"]
    if task_id in seen:
        raise BadInput(f"task id {task_id} is used twice in the roadmap, on lines {seen[task_id] + 1} and "
                       f"{number + 1}: give each task its own id")
    seen[task_id] = number
    roadmap.tasks.append(Task(task_id, (match["title"] or "").strip(), match["mark"] != " ", number, end=number,
                              indent=match["indent"]))


def _belongs_to_task(roadmap: Roadmap, line: str, number: int) -> bool:
    """A ``Requires:`` or addendum line of the task above: True once it is taken."""
    task = roadmap.tasks[-1] if roadmap.tasks else None
    requires = _REQUIRES.match(line)
    if requires and task is not None:
        task.requires.extend(word for word in re.split(r"[, \t]+", requires["ids"]) if word)
        task.end = number
        return True
    addendum = _ADDENDUM_LINE.match(line)
    if addendum is None:
        return False
    if task is None or len(addendum["indent"]) <= len(task.indent):
        roadmap.unparsed.append(_unparsed(number, line, "an addendum not under a task: indent it under its "
                                                        "task's line"))
        return True
    earlier = task.addendum(int(addendum["n"]))
    if earlier is not None:  # it could never be told apart from the first when ticked
        roadmap.unparsed.append(_unparsed(number, line, f"repeats addendum {earlier.number} of task {task.id} "
                                                        f"(line {earlier.line + 1}): number it anew"))
    else:
        task.addenda.append(Addendum(task.id, int(addendum["n"]), addendum["title"].strip(),
                                     addendum["mark"] != " ", number, addendum["indent"]))
    task.end = number
    return True


def _why_not_a_task(checkbox: re.Match[str]) -> str:
    if checkbox["bullet"][0].isdigit():
        return f"a numbered list item: {SHAPE}, bulleted with - or *"
    words = checkbox["rest"].split(maxsplit=1)
    if not words:
        return f"an empty checkbox item: {SHAPE}"
    word = one_line(words[0], 40)
    if word.lower().startswith("addendum"):
        return "not an addendum item: '- [ ] addendum <n>: <title>', <n> from 1, indented under its task"
    if checkbox["rest"][:1] not in (" ", "\t"):
        return f"no space after the box: {SHAPE}"
    return f"{word!r} is not a task id: {SHAPE} (at most ten numbers of at most nine digits), then a space"


def _unparsed(number: int, line: str, reason: str) -> Unparsed:
    return Unparsed(number + 1, one_line(line.strip(), 200), reason)


def _lines(text: str) -> list[str]:
    """Lines as git and a reader see them: split on newlines only (str.splitlines
    would also split on \\x1c, \\x85, \\u2028 …, letting one hostile line pose as two)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def find_task(tasks: list[Task], task_id: str) -> Task | None:
    return next((t for t in tasks if t.id == task_id), None)


def unblocked(tasks: list[Task]) -> list[Task]:
    """Unchecked tasks whose every requirement is checked (so never one that
    names an unknown requirement)."""
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


def unknown_requirements(tasks: list[Task], task: Task) -> list[str]:
    """What ``task`` requires that names no task of the roadmap: it can never run."""
    known = {t.id for t in tasks}
    return [r for r in task.requires if r not in known]


def validate_task_id(task_id: str) -> str:
    if not _TASK_ID.fullmatch(task_id):
        raise BadInput(f"invalid task id {task_id!r}: expected a dotted number such as 1.2.3")
    return task_id


def work_key(task_id: str, addendum: int | None = None) -> str:
    """The one spelling of what names a piece of work: ``<id>``, or ``<id>-addendum-<n>``
    (its claim, its kept tip under ``refs/harnery/integrated/``, its line in a run)."""
    return task_id if addendum is None else f"{task_id}-addendum-{addendum}"


def task_branch(task_id: str, addendum: int | None = None) -> str:
    return f"roadmap-{work_key(task_id, addendum)}"


def parse_task_branch(branch: str) -> tuple[str, int | None] | None:
    """(task id, addendum number or None) for a ``roadmap-<id>[-addendum-<n>]`` branch."""
    match = _TASK_BRANCH.match(branch)
    if not match:
        return None
    return match["id"], int(match["n"]) if match["n"] else None


# --- the roadmap committed at a commit [P5] -------------------------------------

# The roadmap is read whole or not at all: the remediation flush writes it
# back, so a prefix would drop every task after the cut [P5].
ROADMAP_LIMIT = 16 << 20


def roadmap_file(repo: Repo) -> str:
    """Where the roadmap lives in the tree (git config harn.roadmap)."""
    path = PurePosixPath(roadmap_path(repo.config("harn.roadmap")))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BadInput(f"harn.roadmap must be a path inside the repository, not {str(path)!r}")
    return str(path)


def roadmap_bytes_at(repo: Repo, commit: Oid) -> bytes | None:
    """The whole roadmap at ``commit`` (None: absent); TooLarge past ROADMAP_LIMIT."""
    return file_at(repo, commit, roadmap_file(repo), limit=ROADMAP_LIMIT)


def roadmap_at(repo: Repo, commit: Oid) -> Roadmap | None:
    """The roadmap's tasks and unparsed lines at ``commit``; BadInput (naming
    the file) when two tasks there have one id; TooLarge past ROADMAP_LIMIT."""
    raw = roadmap_bytes_at(repo, commit)
    if raw is None:
        return None
    try:
        return read_roadmap(decode(raw))
    except BadInput as exc:
        raise BadInput(f"{roadmap_file(repo)} at {str(commit)[:12]}: {exc}") from None


def tasks_at(repo: Repo, commit: Oid) -> list[Task] | None:
    roadmap = roadmap_at(repo, commit)
    return None if roadmap is None else roadmap.tasks


def ticked_at(repo: Repo, commit: Oid, task_id: str) -> bool:
    """The roadmap at ``commit`` has the task ticked."""
    task = find_task(tasks_at(repo, commit) or [], task_id)
    return task is not None and task.done
