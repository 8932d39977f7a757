"""Plain-data helpers shared by every layer: dataclasses as JSON values, paths
and untrusted text made safe to show on one line."""

from __future__ import annotations

import dataclasses
import json
from typing import Any


def jsonable(value: Any) -> Any:
    """Dataclasses, dicts, lists and tuples as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
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
