"""One renderer for humans and for --json."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import click


def jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def emit_json(document: Any) -> None:
    text = json.dumps(jsonable(document), indent=2, ensure_ascii=False)
    if not _encodable(text):  # a file name that is not UTF-8: escape it, stay valid JSON
        text = json.dumps(jsonable(document), indent=2, ensure_ascii=True)
    click.echo(text)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns aligned to their widest cell; the last column is not padded."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers) - 1)]
    lines = []
    for row in [headers, *rows]:
        cells = [str(cell).ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, str(row[-1])]).rstrip())
    return "\n".join(lines)


def printable_path(path: str) -> str:
    """A path on one line: control characters escaped, as git quotes them."""
    if path.isprintable() and _encodable(path):
        return path
    quoted = json.dumps(path, ensure_ascii=False)
    return quoted if _encodable(quoted) else json.dumps(path, ensure_ascii=True)
