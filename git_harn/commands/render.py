"""The one renderer: a result for people, or as one versioned JSON document."""

from __future__ import annotations

import json
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
