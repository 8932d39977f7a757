"""The workflow configuration, ``.harn/workflow.toml`` as committed at the base.

Read with ``tomllib`` (``tomli`` on Python 3.10). The file is read from a
commit, never from a working tree, so the agent under judgement cannot change
its own gates or agents [P5]. Anything unreadable is bad input that names the
file and the revision [P7].
"""

from __future__ import annotations

import sys
from typing import Any

from git_harn.errors import BadInput

WORKFLOW_FILE = ".harn/workflow.toml"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def parse_toml(raw: bytes, where: str) -> dict[str, Any]:
    """The TOML document ``raw``; BadInput naming ``where`` if it is not one."""
    try:
        loaded: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError and TOMLDecodeError are ValueErrors
        raise BadInput(f"cannot read {where}: {exc}") from exc
    except RecursionError as exc:  # the parser recurses once per nested array
        raise BadInput(f"cannot read {where}: values nested too deeply") from exc
    return loaded


def gate_argv_lists(config: dict[str, Any], where: str) -> list[list[str]]:
    """``[gates] commands``: a list of argv lists (absent: none)."""
    gates = config.get("gates", {})
    value = gates.get("commands") if isinstance(gates, dict) else gates
    if value is None:
        return []
    if not isinstance(value, list) or not all(_is_argv(argv) for argv in value):
        raise BadInput(f"{where}: [gates] commands must be a list of argv lists such as [[\"make\", \"test\"]]")
    return [list(argv) for argv in value]


def _is_argv(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(word, str) for word in value)
