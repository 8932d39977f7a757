"""The one renderer: a result for people, or as one versioned JSON document."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from git_harn.results import Result
from git_harn.text import encodable, jsonable

R = TypeVar("R", bound=Result)
View = Callable[[R], Iterable[str]]


def show(result: R, as_json: bool, view: View[R]) -> int:
    """Print ``result`` (``view`` gives the human lines); return its exit code."""
    if as_json:
        emit_json(result.document())
    else:
        for line in view(result):
            click.echo(line)
    return result.exit_code


def emit_json(document: Any) -> None:
    text = json.dumps(jsonable(document), indent=2, ensure_ascii=False)
    if not encodable(text):  # a file name that is not UTF-8: escape it, stay valid JSON
        text = json.dumps(jsonable(document), indent=2, ensure_ascii=True)
    click.echo(text)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns aligned to their widest cell; the last column is not padded."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers) - 1)]
    lines = []
    for row in [headers, *rows]:
        cells = [str(cell).ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, str(row[-1])]).rstrip())
    return "\n".join(lines)


def terminal_width() -> int | None:
    """The width to fit on a terminal; None when piped (scripts get whole lines)."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((80, 24)).columns


LAST_COLUMN_FLOOR = 30  # the last column never wraps narrower than this, whatever the terminal


def wrapped_table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None) -> str:
    """``table``, with the last column wrapped to ``width`` (continuation
    lines under its start); whole lines when ``width`` is None (piped).
    Nothing is cut: a long cell takes more lines, never fewer words."""
    plain = table(headers, rows)
    if width is None:
        return plain
    import textwrap  # only on a terminal: every command's start-up imports this module
    indent = sum(max(len(str(r[i])) for r in [headers, *rows]) + 2 for i in range(len(headers) - 1))
    room = max(width - indent, LAST_COLUMN_FLOOR)
    out = []
    for line in plain.splitlines():
        head, tail = line[:indent], line[indent:]
        pieces = textwrap.wrap(tail, room, break_long_words=False, break_on_hyphens=False) or [""]
        out.append((head + pieces[0]).rstrip())
        out += [" " * indent + piece for piece in pieces[1:]]
    return "\n".join(out)
