"""Just enough TOML for ``[gates] commands = [[...], ...]`` where tomllib is missing.

Python 3.10 has no tomllib and git-harn adds no dependency for it. This reads
the one table and key the gates need: a ``[gates]`` header and a
``commands`` array of arrays of basic or literal strings (comments, newlines
and trailing commas allowed). Anything else in that value fails closed with
ValueError; other tables are skipped line by line.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\s*(?P<name>[A-Za-z0-9_-]+)\s*\]\s*(?:#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")
_COMMANDS = re.compile(r"^\s*commands\s*=")
MAX_DEPTH = 32  # gate commands nest two deep; deeper is refused, never recursed into
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


def gates_commands(text: str) -> object | None:
    """The value of ``gates.commands`` (None when absent); ValueError if unreadable."""
    table: str | None = None
    lines = text.splitlines()
    for number, line in enumerate(lines):
        header = _HEADER.match(line)
        if header:
            table = header["name"]
        elif _ANY_HEADER.match(line):
            table = None
        elif table == "gates" and _COMMANDS.match(line):
            rest = "\n".join([line.split("=", 1)[1], *lines[number + 1:]])
            return _Scanner(rest).value()
    return None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.depth = 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def skip(self) -> None:
        while self.at < len(self.text):
            char = self.text[self.at]
            if char in " \t\r\n":
                self.at += 1
            elif char == "#":
                end = self.text.find("\n", self.at)
                self.at = len(self.text) if end < 0 else end
            else:
                return

    def value(self) -> object:
        self.skip()
        char = self.peek()
        if char == "[":
            return self.array()
        if self.text.startswith(('"""', "'''"), self.at):
            raise ValueError("multi-line strings are not supported here")
        if char == '"':
            return self.basic()
        if char == "'":
            return self.literal()
        raise ValueError(f"unsupported value at {self.text[self.at:self.at + 20]!r}")

    def array(self) -> list[object]:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ValueError(f"arrays nested more than {MAX_DEPTH} deep")
        self.at += 1
        items: list[object] = []
        while True:
            self.skip()
            if self.peek() == "]":
                self.at += 1
                self.depth -= 1
                return items
            items.append(self.value())
            self.skip()
            if self.peek() == ",":
                self.at += 1
            elif self.peek() != "]":
                raise ValueError("expected ',' or ']' in an array")

    def literal(self) -> str:
        end = self.text.find("'", self.at + 1)
        if end < 0 or "\n" in self.text[self.at:end]:
            raise ValueError("unterminated string")
        value = self.text[self.at + 1:end]
        self.at = end + 1
        return value

    def basic(self) -> str:
        out: list[str] = []
        self.at += 1
        while True:
            char = self.peek()
            if char in ("", "\n"):
                raise ValueError("unterminated string")
            self.at += 1
            if char == '"':
                return "".join(out)
            out.append(self.escape() if char == "\\" else char)

    def escape(self) -> str:
        code = self.peek()
        self.at += 1
        if code in _ESCAPES:
            return _ESCAPES[code]
        width = {"u": 4, "U": 8}.get(code)
        digits = self.text[self.at:self.at + width] if width else ""
        if not width or len(digits) != width or not re.fullmatch(r"[0-9A-Fa-f]+", digits):
            raise ValueError(f"bad escape \\{code}")
        self.at += width
        return chr(int(digits, 16))
