"""The workflow configuration, ``.harn/workflow.toml`` as committed at the base.

Read with ``tomllib`` (``tomli`` on Python 3.10). The file is read from a
commit, never from a working tree, so the agent under judgement cannot change
its own gates or agents [P5]. Anything unreadable is bad input that names the
file and the revision [P7].
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
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


# --- the workflow model: [workflow], [agents.<stage>], [gates] ------------------

STAGES = ("plan", "implement", "review", "integrate")
OPTIONAL_STAGES = ("addendum",)  # [agents.<stage>] tables a run may do without
BUILTIN = "builtin"
STDIN_MODES = ("json", "prompt")
DEFAULT_REMOTE = "origin"
DEFAULT_STAGE_TIMEOUT = 1800.0
DEFAULT_REVIEW_ROUNDS = 2
MAX_PARALLEL = 64

# key -> (type check, what it must be)
_WORKFLOW_KEYS = ("base", "remote", "maxTasks", "parallel", "stageTimeout", "reviewRounds")
_AGENT_KEYS = ("command", "timeout", "stdin")
_TOP_KEYS = ("workflow", "agents", "gates")


@dataclass(frozen=True)
class AgentSettings:
    stage: str
    command: list[str] | None  # None: builtin (integrate only)
    timeout: float | None = None
    stdin: str = "json"

    @property
    def builtin(self) -> bool:
        return self.command is None

    def shown(self) -> dict[str, Any]:
        return {"command": self.command if self.command is not None else BUILTIN,
                "timeout": self.timeout, "stdin": self.stdin}


@dataclass(frozen=True)
class WorkflowSettings:
    """Everything ``.harn/workflow.toml`` says about a workflow run; None: not set."""

    base: str | None = None
    remote: str | None = None
    maxTasks: int | None = None
    parallel: int | None = None
    stageTimeout: float | None = None
    reviewRounds: int | None = None
    agents: dict[str, AgentSettings] = field(default_factory=dict)
    gates: list[list[str]] = field(default_factory=list)


def _bad(where: str, key: str, must: str) -> BadInput:
    return BadInput(f"{where}: setting {key} {must}")


def _positive_int(value: object, where: str, key: str, allow_zero: bool = False) -> int:
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _bad(where, key, f"must be an integer of at least {low}, not {value!r}")
    return value


def _seconds(value: object, where: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise _bad(where, key, f"must be a positive number of seconds, not {value!r}")
    return float(value)


def _name(value: object, where: str, key: str) -> str:
    if not isinstance(value, str) or not value or value.startswith("-") or any(
            ch.isspace() or not ch.isprintable() for ch in value):
        raise _bad(where, key, f"must be a branch or remote name, not {value!r}")
    return value


def _agent(stage: str, table: object, where: str) -> AgentSettings:
    prefix = f"agents.{stage}"
    if not isinstance(table, dict):
        raise _bad(where, prefix, "must be a table")
    for key in table:
        if key not in _AGENT_KEYS:
            raise BadInput(f"{where}: unknown setting {prefix}.{key}")
    if "command" not in table:
        if stage != "integrate":
            raise BadInput(f"{where}: missing setting {prefix}.command (an argv list)")
        command: list[str] | None = None
    else:
        raw = table["command"]
        if raw == BUILTIN and stage == "integrate":
            command = None
        elif _is_argv(raw):
            command = list(raw)
        else:
            builtin = ' or "builtin"' if stage == "integrate" else ""
            raise _bad(where, f"{prefix}.command", f'must be an argv list such as ["my-agent", "--flag"]{builtin}')
    timeout = _seconds(table["timeout"], where, f"{prefix}.timeout") if "timeout" in table else None
    stdin = table.get("stdin", "json")
    if stdin not in STDIN_MODES:
        raise _bad(where, f"{prefix}.stdin", f'must be "json" or "prompt", not {stdin!r}')
    if command is None and ("timeout" in table or "stdin" in table):
        raise _bad(where, f"{prefix}.timeout", "and stdin apply to an agent command, not the builtin integration")
    return AgentSettings(stage, command, timeout, stdin)


def workflow_settings(config: dict[str, Any], where: str) -> WorkflowSettings:
    """The validated workflow model of a parsed ``.harn/workflow.toml``: a
    malformed or unknown setting is BadInput naming the key [P7]."""
    for key in config:
        if key not in _TOP_KEYS:
            raise BadInput(f"{where}: unknown setting {key}")
    table = config.get("workflow", {})
    if not isinstance(table, dict):
        raise _bad(where, "workflow", "must be a table")
    for key in table:
        if key not in _WORKFLOW_KEYS:
            raise BadInput(f"{where}: unknown setting workflow.{key}")
    values: dict[str, Any] = {}
    for key in ("base", "remote"):
        if key in table:
            values[key] = _name(table[key], where, f"workflow.{key}")
    if "maxTasks" in table:
        values["maxTasks"] = _positive_int(table["maxTasks"], where, "workflow.maxTasks")
    if "parallel" in table:
        values["parallel"] = _positive_int(table["parallel"], where, "workflow.parallel")
        if values["parallel"] > MAX_PARALLEL:
            raise _bad(where, "workflow.parallel", f"must be at most {MAX_PARALLEL}")
    if "stageTimeout" in table:
        values["stageTimeout"] = _seconds(table["stageTimeout"], where, "workflow.stageTimeout")
    if "reviewRounds" in table:
        values["reviewRounds"] = _positive_int(table["reviewRounds"], where, "workflow.reviewRounds")
    agents_table = config.get("agents", {})
    if not isinstance(agents_table, dict):
        raise _bad(where, "agents", "must be a table of [agents.<stage>] tables")
    known = STAGES + OPTIONAL_STAGES
    for stage in agents_table:
        if stage not in known:
            raise BadInput(f"{where}: unknown setting agents.{stage} (stages: {', '.join(known)})")
    agents = {stage: _agent(stage, agents_table[stage], where) for stage in known if stage in agents_table}
    gates = config.get("gates", {})
    if isinstance(gates, dict):
        for key in gates:
            if key != "commands":
                raise BadInput(f"{where}: unknown setting gates.{key}")
    return WorkflowSettings(**values, agents=agents, gates=gate_argv_lists(config, where))
