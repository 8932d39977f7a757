"""Plain-data helpers shared by every layer: dataclasses as JSON values, paths
and untrusted text made safe to show on one line."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any


class Word(str, enum.Enum):
    """A word of one vocabulary (a stage's name, a skip reason …): a member
    is the string it spells wherever a string goes (compared, formatted,
    written as JSON), so code names the member and never spells the word."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


def jsonable(value: Any) -> Any:
    """Dataclasses and named tuples as objects; dicts, lists and tuples as
    plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {name: jsonable(getattr(value, name)) for name in value._fields}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def home_as_tilde(value: Any, home: str) -> Any:
    """``value`` with the home folder ``home`` written ``~`` in every string
    (``/home/alice/src/x`` → ``~/src/x``): for data that leaves the machine,
    which needs no one's user name or folder layout."""
    if isinstance(value, str):
        if not home or home == "/":
            return value
        return "~" if value == home else value.replace(home.rstrip("/") + "/", "~/")
    if isinstance(value, dict):
        return {k: home_as_tilde(v, home) for k, v in value.items()}
    if isinstance(value, list):
        return [home_as_tilde(v, home) for v in value]
    return value


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_path(path: str) -> str:
    """A path on one line: control characters escaped, as git quotes them."""
    if path.isprintable() and encodable(path):
        return path
    quoted = json.dumps(path, ensure_ascii=False)
    return quoted if encodable(quoted) else json.dumps(path, ensure_ascii=True)


def one_line(text: str, limit: int = 200) -> str:
    """Untrusted or long text folded to one bounded line."""
    return " ".join(text.split())[:limit]


def last_lines(text: str, count: int = 10, width: int = 160) -> list[str]:
    """The last ``count`` lines of command output, for people: trailing blank
    lines and a leading ``…`` marker dropped, control characters blanked,
    each line clipped to ``width`` cells (untrusted text stays one line each)."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    if lines and lines[0] == "…":
        lines.pop(0)
    return [clip("".join(c if c.isprintable() else " " for c in line), width) for line in lines[-count:]]


def last_lines_on_one_line(text: str, limit: int = 300) -> str:
    """As many whole last lines of ``text`` as fit in ``limit`` characters,
    joined by `` | `` (the end of the output is what says why it failed)."""
    shown: list[str] = []
    for line in reversed(last_lines(text, 50, limit)):
        line = " ".join(line.split())
        if not line:
            continue
        if shown and len(line) + 3 + len(" | ".join(shown)) > limit:
            break
        shown.insert(0, line)
    return " | ".join(shown)[:limit]


def with_article(noun: str) -> str:
    """``auth fault`` → ``an auth fault``: enough for the words git-harn says."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def cells(text: str) -> int:
    """Terminal cells ``text`` takes: East Asian wide and full-width characters take two."""
    if text.isascii():  # nearly every run id, branch and path: one cell a character
        return len(text)
    import unicodedata

    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
               for c in text)


def clip(text: str, width: int, keep_end: bool = False) -> str:
    """``text`` cut to ``width`` cells with an ellipsis (at the start when
    ``keep_end``, for paths, whose end says the most)."""
    if cells(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    if text.isascii():
        return "…" + text[len(text) - width + 1:] if keep_end else text[:width - 1] + "…"
    chars = list(reversed(text)) if keep_end else list(text)
    kept: list[str] = []
    used = 1
    for char in chars:
        used += cells(char)
        if used > width:
            break
        kept.append(char)
    body = "".join(reversed(kept)) if keep_end else "".join(kept)
    return "…" + body if keep_end else body + "…"
