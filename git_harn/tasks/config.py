"""The workflow configuration, ``.harn/workflow.toml`` as committed at the base.

Read with ``tomllib`` (``tomli`` on Python 3.10). The file is read from a
commit, never from a working tree, so the agent under judgement cannot change
its own gates or agents [P5]. Anything unreadable is bad input that names the
file and the revision [P7].
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any

from git_harn.errors import BadInput
from git_harn.git import Oid, Repo
from git_harn.git.branches import file_at
from git_harn.git.env import FORGE_TOKEN_VARS, never_passed
from git_harn.text import Word

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


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_names(table: dict[str, Any], where: str, key: str) -> tuple[str, ...]:
    """``env = ["ANTHROPIC_API_KEY", ...]``: the variables of the operator's
    environment that this child may have although they look like secrets
    (git/env.py holds those back from agents and gates by default)."""
    value = table.get("env", [])
    if not isinstance(value, list) or not all(isinstance(name, str) and _ENV_NAME.fullmatch(name)
                                              for name in value):
        raise BadInput(f"{where}: setting {key} must be a list of environment variable names "
                       'such as ["ANTHROPIC_API_KEY"]')
    for name in value:
        if never_passed(name):
            raise BadInput(f"{where}: setting {key} names {name}, which no child ever gets "
                           "(it would point git at another repository or change its configuration)")
        if name in FORGE_TOKEN_VARS:
            raise BadInput(f"{where}: setting {key} names {name}, a forge's token, which only git-harn itself "
                           "holds: no agent, gate or assessor gets it [T5]")
    return tuple(dict.fromkeys(value))


def configured_env_names(repo: Repo, key: str) -> tuple[str, ...]:
    """git config ``key`` (multi-valued, one name each), checked as ``env`` is."""
    values = repo.config_all(key)
    return env_names({"env": values}, "git config", key) if values else ()


def gate_env_names(config: dict[str, Any], where: str) -> tuple[str, ...]:
    """``[gates] env``: the secret-looking variables the gates may have (absent: none)."""
    gates = config.get("gates", {})
    return env_names(gates, where, "gates.env") if isinstance(gates, dict) else ()


# --- the workflow model: [workflow], [agents.<stage>], [gates] ------------------

class Stage(Word):
    """What a task's step is called, in the record (a task's ``stage``, the
    result schema's names) and in ``[agents.<stage>]``: the one list of these words."""

    WORKSPACE = "workspace"  # making or resuming the task's workspace: no agent
    PLAN = "plan"
    IMPLEMENT = "implement"
    ADDENDUM = "addendum"  # writing an addendum [R5]
    GATES = "gates"  # the host's gate commands: no agent
    REVIEW = "review"
    INTEGRATE = "integrate"
    DONE = "done"  # where a landed task stands: no agent
    ASSESS = "assess"  # judging a surviving branch [A1]
    PREFLIGHT = "preflight"  # the run's login check before any task


STAGES = (Stage.PLAN, Stage.IMPLEMENT, Stage.REVIEW, Stage.INTEGRATE)
# optional agents beside the stages: [agents.addendum], [agents.assess], [agents.preflight]
OPTIONAL_AGENTS = (Stage.ADDENDUM, Stage.ASSESS, Stage.PREFLIGHT)
BUILTIN = "builtin"
STDIN_MODES = ("json", "prompt")
DEFAULT_STAGE_TIMEOUT = 1800.0
DEFAULT_REVIEW_ROUNDS = 2
MAX_PARALLEL = 64
DEFAULT_CLAIM_HEARTBEAT = 60.0
DEFAULT_CLAIM_STALE_AFTER = 900.0


class ResumeMode(Word):
    """How far recovery may go with a surviving branch [R7]."""

    ASSESS = "assess"  # report only
    REVIEW = "review"  # judge it again and land it when the reviewers approve
    CONTINUE = "continue"  # resume its stages where its ExecPlan says


RESUME_MODES = tuple(ResumeMode)
DEFAULT_RESUME_MODE = ResumeMode.ASSESS


class LandMode(Word):
    """How a task's judged squash reaches the base [F1]: pushed onto it, or
    proposed as a pull (merge) request from git-harn's own landing branch."""

    PUSH = "push"
    PULL_REQUEST = "pull-request"

    @classmethod
    def parse(cls, value: object, where: str) -> LandMode:
        for mode in cls:
            if value == mode.value:
                return mode
        raise BadInput(f"{where} must be one of {', '.join(repr(m.value) for m in cls)}, not {value!r}")


DEFAULT_MAX_RECOVERY_CANDIDATES = 20
DEFAULT_STAGE_ATTEMPTS = 3
DEFAULT_SCHEMA_RETRIES = 2
MAX_RETRIES = 10

# key -> (type check, what it must be)
_WORKFLOW_KEYS = ("base", "remote", "maxTasks", "parallel", "stageTimeout", "reviewRounds",
                  "claims", "claimHeartbeat", "claimStaleAfter",
                  "resumePartialBranches", "resumeMode", "maxRecoveryCandidates", "idleTimeout",
                  "stageAttempts", "schemaRetries", "assessPartialBranches",
                  "sandbox", "gateNetwork", "stageDiskLimit", "stageProcessLimit", "maxCostUsd", "land",
                  "forge", "forgeUrl", "autoMerge")
_AGENT_KEYS = ("command", "timeout", "stdin", "commands", "adapter", "args", "model", "maxTurns", "maxBudgetUsd",
               "idleTimeout", "env", "adapterChecks", "writable")
_PREFLIGHT_ONLY = ("commands", "adapterChecks")
# [agents.<stage>] adapter: "command" is the stage agent protocol itself; the
# others turn a coding agent CLI into a stage agent (workflow/adapters/)
COMMAND_ADAPTER = "command"
ADAPTERS = (COMMAND_ADAPTER, "claude", "codex")
ADAPTER_ONLY_KEYS = ("args", "model", "maxTurns", "maxBudgetUsd", "idleTimeout")
DEFAULT_IDLE_TIMEOUT = 600.0
# What an adapter's CLI needs to log in, passed to it without an ``env``
# setting: the variables each CLI documents for non-interactive use.
ADAPTER_SECRETS = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN"),
}
_TOP_KEYS = ("workflow", "agents", "gates", "prices")
# [prices.<model>]: US dollars per million tokens of each kind, for agents that report tokens only (codex)
PRICE_KEYS = ("input", "cached", "output")


@dataclass(frozen=True)
class AgentSettings:
    stage: str
    command: list[str] | None  # None: builtin (integrate only)
    timeout: float | None = None
    stdin: str = "json"
    adapter: str = COMMAND_ADAPTER
    args: tuple[str, ...] = ()
    model: str | None = None
    maxTurns: int | None = None
    maxBudgetUsd: float | None = None
    idleTimeout: float | None = None
    commands: tuple[tuple[str, ...], ...] = ()  # [agents.preflight]: every command, in order
    env: tuple[str, ...] = ()  # secret-looking variables it may have (git/env.py)
    adapterChecks: bool = True  # [agents.preflight]: also the adapters' own login checks
    writable: tuple[str, ...] = ()  # paths it may write inside the sandbox, beside the defaults

    @property
    def builtin(self) -> bool:
        return self.command is None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret-looking variables this agent gets: its ``env`` and its adapter's login variables."""
        return tuple(dict.fromkeys((*self.env, *ADAPTER_SECRETS.get(self.adapter, ()))))

    def shown(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"command": self.command if self.command is not None else BUILTIN,
                                 "timeout": self.timeout, "stdin": self.stdin}
        if self.adapter != COMMAND_ADAPTER:
            shown.update(adapter=self.adapter, args=list(self.args), model=self.model, maxTurns=self.maxTurns,
                         maxBudgetUsd=self.maxBudgetUsd, idleTimeout=self.idleTimeout)
        if self.stage == Stage.PREFLIGHT:
            shown.update(commands=[list(argv) for argv in self.commands], adapterChecks=self.adapterChecks)
        if self.env:
            shown["env"] = list(self.env)
        if self.writable:
            shown["writable"] = list(self.writable)
        return shown


@dataclass(frozen=True)
class Price:
    """``[prices.<model>]``: US dollars per million input, cached input and output tokens."""

    input: float
    cached: float
    output: float


@dataclass(frozen=True)
class WorkflowSettings:
    """Everything ``.harn/workflow.toml`` says about a workflow run; None: not set."""

    base: str | None = None
    remote: str | None = None
    maxTasks: int | None = None
    parallel: int | None = None
    stageTimeout: float | None = None
    reviewRounds: int | None = None
    idleTimeout: float | None = None
    resumePartialBranches: bool | None = None
    resumeMode: str | None = None
    maxRecoveryCandidates: int | None = None
    stageAttempts: int | None = None
    schemaRetries: int | None = None
    assessPartialBranches: bool | None = None
    agents: dict[str, AgentSettings] = field(default_factory=dict)
    claims: bool | None = None
    claimHeartbeat: float | None = None
    claimStaleAfter: float | None = None
    gates: list[list[str]] = field(default_factory=list)
    gateEnv: tuple[str, ...] = ()
    sandbox: str | None = None  # auto | bwrap | off (workspace/sandbox.py)
    gateNetwork: bool | None = None
    stageDiskLimit: str | None = None  # a size: 10g, 512m
    stageProcessLimit: int | None = None
    maxCostUsd: float | None = None  # the run's spending limit (workflow/agents/spend.py)
    prices: dict[str, Price] = field(default_factory=dict)  # [prices.<model>]
    land: LandMode | None = None  # push | pull-request [F1]
    forge: str | None = None  # github | gitlab | gitea (forgejo): the remote's forge, when its URL does not say
    forgeUrl: str | None = None  # where the forge's API is (GitHub Enterprise, a forge behind another name)
    autoMerge: bool | None = None  # ask the forge to merge each request once its checks pass


def _bad(where: str, key: str, must: str) -> BadInput:
    return BadInput(f"{where}: setting {key} {must}")


def _positive_int(value: object, where: str, key: str, allow_zero: bool = False) -> int:
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _bad(where, key, f"must be an integer of at least {low}, not {value!r}")
    return value


def _bounded_int(value: object, where: str, key: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_RETRIES:
        raise _bad(where, key, f"must be an integer from {low} to {MAX_RETRIES}, not {value!r}")
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
        if key not in _AGENT_KEYS or (key in _PREFLIGHT_ONLY and stage != Stage.PREFLIGHT):
            raise BadInput(f"{where}: unknown setting {prefix}.{key}")
    adapter = table.get("adapter", COMMAND_ADAPTER)
    if adapter not in ADAPTERS:
        raise _bad(where, f"{prefix}.adapter", f"must be one of {', '.join(map(repr, ADAPTERS))}, not {adapter!r}")
    if adapter != COMMAND_ADAPTER and stage in OPTIONAL_AGENTS:
        raise _bad(where, f"{prefix}.adapter", "applies to the stage agents (plan, implement, review, integrate)")
    if adapter != COMMAND_ADAPTER:
        return _adapter_agent(stage, table, where, adapter)
    for key in ADAPTER_ONLY_KEYS:
        if key in table:
            raise _bad(where, f"{prefix}.{key}", 'applies only with adapter = "claude" or "codex"')
    if stage == Stage.PREFLIGHT:
        return _preflight(table, where)
    if "command" not in table:
        if stage != Stage.INTEGRATE:
            raise BadInput(f"{where}: missing setting {prefix}.command (an argv list)")
        command: list[str] | None = None
    else:
        raw = table["command"]
        if raw == BUILTIN and stage == Stage.INTEGRATE:
            command = None
        elif _is_argv(raw):
            command = list(raw)
        else:
            builtin = ' or "builtin"' if stage == Stage.INTEGRATE else ""
            raise _bad(where, f"{prefix}.command", f'must be an argv list such as ["my-agent", "--flag"]{builtin}')
    timeout = _seconds(table["timeout"], where, f"{prefix}.timeout") if "timeout" in table else None
    stdin = table.get("stdin", "json")
    if stdin not in STDIN_MODES:
        raise _bad(where, f"{prefix}.stdin", f'must be "json" or "prompt", not {stdin!r}')
    if command is None and ("timeout" in table or "stdin" in table or "env" in table):
        raise BadInput(f"{where}: settings {prefix}.timeout, .stdin and .env apply to an agent command, "
                       "not the builtin integration")
    return AgentSettings(stage, command, timeout, stdin, env=env_names(table, where, f"{prefix}.env"),
                         writable=_writable(table, where, prefix))


def _writable(table: dict[str, Any], where: str, prefix: str) -> tuple[str, ...]:
    """``writable = ["~/.cache/tool"]``: more paths the agent may write in the sandbox (absolute, or from ~)."""
    value = table.get("writable", [])
    if not isinstance(value, list) or not all(
            isinstance(path, str) and (path.startswith("/") or path.startswith("~/")) and "\n" not in path
            for path in value):
        raise _bad(where, f"{prefix}.writable", 'must be a list of absolute paths such as ["~/.cache/tool"]')
    return tuple(value)


def _adapter_agent(stage: str, table: dict[str, Any], where: str, adapter: str) -> AgentSettings:
    """An agent run through an adapter: ``command`` names the executable
    (default: the CLI's own name on PATH); the prompt always goes on stdin."""
    prefix = f"agents.{stage}"
    raw = table.get("command", [adapter])
    if isinstance(raw, str) and raw != BUILTIN:
        raw = [raw]
    if not _is_argv(raw):
        raise _bad(where, f"{prefix}.command", f'must name the {adapter} executable, such as ["{adapter}"]')
    args = table.get("args", [])
    if not isinstance(args, list) or not all(isinstance(word, str) for word in args):
        raise _bad(where, f"{prefix}.args", 'must be a list of strings such as ["--model", "x"]')
    if "stdin" in table and table["stdin"] != "prompt":
        raise _bad(where, f"{prefix}.stdin", f'is always "prompt" with adapter = "{adapter}"')
    model = table.get("model")
    if model is not None and (not isinstance(model, str) or not model or model.startswith("-")):
        raise _bad(where, f"{prefix}.model", f"must be a model name, not {model!r}")
    max_turns = _positive_int(table["maxTurns"], where, f"{prefix}.maxTurns") if "maxTurns" in table else None
    budget = table.get("maxBudgetUsd")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0):
        raise _bad(where, f"{prefix}.maxBudgetUsd", f"must be a positive amount of US dollars, not {budget!r}")
    if adapter == "codex" and (max_turns is not None or budget is not None):
        raise _bad(where, f"{prefix}.maxTurns", "and maxBudgetUsd are Claude Code settings; codex exec has neither")
    return AgentSettings(
        stage, list(raw), _seconds(table["timeout"], where, f"{prefix}.timeout") if "timeout" in table else None,
        "prompt", adapter, tuple(args), model, max_turns, float(budget) if budget is not None else None,
        _seconds(table["idleTimeout"], where, f"{prefix}.idleTimeout") if "idleTimeout" in table else None,
        env=env_names(table, where, f"{prefix}.env"), writable=_writable(table, where, prefix))


def _claim_settings(table: dict[str, Any], where: str) -> dict[str, Any]:
    """``claims`` (true/false), ``claimHeartbeat`` and ``claimStaleAfter`` (seconds)."""
    values: dict[str, Any] = {}
    if "claims" in table:
        if not isinstance(table["claims"], bool):
            raise _bad(where, "workflow.claims", f"must be true or false, not {table['claims']!r}")
        values["claims"] = table["claims"]
    for key in ("claimHeartbeat", "claimStaleAfter"):
        if key in table:
            values[key] = _seconds(table[key], where, f"workflow.{key}")
    return values


def _preflight(table: dict[str, Any], where: str) -> AgentSettings:
    """``[agents.preflight]``: ``command`` (an argv list), ``commands`` (a list
    of them), or both; each must exit 0 before the run creates anything.
    ``adapterChecks = false`` turns off the adapters' own login checks
    (``claude auth status``, ``codex login status``), which run otherwise."""
    commands: list[tuple[str, ...]] = []
    if "command" in table:
        if not _is_argv(table["command"]):
            raise _bad(where, "agents.preflight.command", 'must be an argv list such as ["my-agent", "--check-auth"]')
        commands.append(tuple(table["command"]))
    if "commands" in table:
        raw = table["commands"]
        if not isinstance(raw, list) or not raw or not all(_is_argv(argv) for argv in raw):
            raise _bad(where, "agents.preflight.commands", 'must be a list of argv lists such as [["agent", "auth"]]')
        commands += [tuple(argv) for argv in raw]
    checks = table.get("adapterChecks", True)
    if not isinstance(checks, bool):
        raise _bad(where, "agents.preflight.adapterChecks", "must be true or false")
    if not commands and "adapterChecks" not in table:
        raise BadInput(f"{where}: missing setting agents.preflight.command (an argv list)")
    if "stdin" in table:
        raise BadInput(f"{where}: unknown setting agents.preflight.stdin (a preflight gets no input)")
    timeout = _seconds(table["timeout"], where, "agents.preflight.timeout") if "timeout" in table else None
    return AgentSettings(Stage.PREFLIGHT, list(commands[0]) if commands else [], timeout, "json",
                         commands=tuple(commands), env=env_names(table, where, "agents.preflight.env"),
                         adapterChecks=checks)


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
    if "idleTimeout" in table:
        values["idleTimeout"] = _seconds(table["idleTimeout"], where, "workflow.idleTimeout")
    values.update(_claim_settings(table, where))
    if "land" in table:
        values["land"] = LandMode.parse(table["land"], f"{where}: setting workflow.land")
    if "autoMerge" in table:
        if not isinstance(table["autoMerge"], bool):
            raise _bad(where, "workflow.autoMerge", f"must be true or false, not {table['autoMerge']!r}")
        values["autoMerge"] = table["autoMerge"]
    for key in ("forge", "forgeUrl"):  # which forge, checked where it is chosen (forge/choose)
        if key in table:
            if not isinstance(table[key], str) or not table[key].strip() or "\n" in table[key]:
                raise _bad(where, f"workflow.{key}", f"must be a name or an address, not {table[key]!r}")
            values[key] = table[key].strip()
    values.update(_recovery_settings(table, where))
    values.update(_sandbox_settings(table, where))
    if "maxCostUsd" in table:
        values["maxCostUsd"] = _dollars(table["maxCostUsd"], where, "workflow.maxCostUsd")
    if "stageAttempts" in table:
        values["stageAttempts"] = _bounded_int(table["stageAttempts"], where, "workflow.stageAttempts", 1)
    if "schemaRetries" in table:
        values["schemaRetries"] = _bounded_int(table["schemaRetries"], where, "workflow.schemaRetries", 0)
    if "assessPartialBranches" in table:
        if not isinstance(table["assessPartialBranches"], bool):
            raise _bad(where, "workflow.assessPartialBranches",
                       f"must be true or false, not {table['assessPartialBranches']!r}")
        values["assessPartialBranches"] = table["assessPartialBranches"]
    agents_table = config.get("agents", {})
    if not isinstance(agents_table, dict):
        raise _bad(where, "agents", "must be a table of [agents.<stage>] tables")
    for stage in agents_table:
        if stage not in STAGES and stage not in OPTIONAL_AGENTS:
            raise BadInput(f"{where}: unknown setting agents.{stage} (stages: {', '.join(STAGES + OPTIONAL_AGENTS)})")
    agents: dict[str, AgentSettings] = {stage: _agent(stage, agents_table[stage], where)
                                        for stage in STAGES + OPTIONAL_AGENTS if stage in agents_table}
    gates = config.get("gates", {})
    if isinstance(gates, dict):
        for key in gates:
            if key not in ("commands", "env"):
                raise BadInput(f"{where}: unknown setting gates.{key}")
    return WorkflowSettings(**values, agents=agents, gates=gate_argv_lists(config, where),
                            gateEnv=gate_env_names(config, where), prices=_prices(config, where))


def _dollars(value: object, where: str, key: str, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value >= 0 if zero else value > 0) \
            or value != value or value == float("inf"):
        raise _bad(where, key, f"must be a {'' if zero else 'positive '}amount of US dollars, not {value!r}")
    return float(value)


def _prices(config: dict[str, Any], where: str) -> dict[str, Price]:
    """``[prices.<model>] input = 1.25, cached = 0.125, output = 10``: dollars per million tokens."""
    table = config.get("prices", {})
    if not isinstance(table, dict):
        raise _bad(where, "prices", "must be a table of [prices.<model>] tables")
    prices = {}
    for model, row in table.items():
        if not isinstance(row, dict):
            raise _bad(where, f"prices.{model}", "must be a table: input, cached and output dollars per million tokens")
        for key in row:
            if key not in PRICE_KEYS:
                raise BadInput(f"{where}: unknown setting prices.{model}.{key} (known: {', '.join(PRICE_KEYS)})")
        missing = [key for key in PRICE_KEYS if key not in row]
        if missing:
            raise BadInput(f"{where}: missing setting prices.{model}.{missing[0]} (dollars per million tokens)")
        prices[model] = Price(*(_dollars(row[key], where, f"prices.{model}.{key}", zero=True) for key in PRICE_KEYS))
    return prices


def _sandbox_settings(table: dict[str, Any], where: str) -> dict[str, Any]:
    """sandbox, gateNetwork, stageDiskLimit, stageProcessLimit (checked again where they are used)."""
    values: dict[str, Any] = {}
    if "sandbox" in table:
        if table["sandbox"] not in ("auto", "bwrap", "off"):
            raise _bad(where, "workflow.sandbox", f"must be one of 'auto', 'bwrap', 'off', not {table['sandbox']!r}")
        values["sandbox"] = table["sandbox"]
    if "gateNetwork" in table:
        if not isinstance(table["gateNetwork"], bool):
            raise _bad(where, "workflow.gateNetwork", f"must be true or false, not {table['gateNetwork']!r}")
        values["gateNetwork"] = table["gateNetwork"]
    if "stageDiskLimit" in table:
        raw = table["stageDiskLimit"]
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            raise _bad(where, "workflow.stageDiskLimit", f"must be a size such as \"10g\", not {raw!r}")
        values["stageDiskLimit"] = str(raw)
    if "stageProcessLimit" in table:
        values["stageProcessLimit"] = _positive_int(table["stageProcessLimit"], where, "workflow.stageProcessLimit")
    return values


def _recovery_settings(table: dict[str, Any], where: str) -> dict[str, Any]:
    """resumePartialBranches, resumeMode, maxRecoveryCandidates [R7]."""
    values: dict[str, Any] = {}
    if "resumePartialBranches" in table:
        if not isinstance(table["resumePartialBranches"], bool):
            raise _bad(where, "workflow.resumePartialBranches",
                       f"must be true or false, not {table['resumePartialBranches']!r}")
        values["resumePartialBranches"] = table["resumePartialBranches"]
    if "resumeMode" in table:
        if table["resumeMode"] not in RESUME_MODES:
            raise _bad(where, "workflow.resumeMode",
                       f"must be one of {', '.join(map(repr, RESUME_MODES))}, not {table['resumeMode']!r}")
        values["resumeMode"] = table["resumeMode"]
    if "maxRecoveryCandidates" in table:
        values["maxRecoveryCandidates"] = _positive_int(table["maxRecoveryCandidates"], where,
                                                        "workflow.maxRecoveryCandidates")
    return values


def settings_at(repo: Repo, commit: Oid, rev: str) -> WorkflowSettings | None:
    """The ``.harn/workflow.toml`` committed at ``commit`` (None: absent) [P5];
    ``rev`` names it in errors."""
    raw = file_at(repo, commit, WORKFLOW_FILE)
    if raw is None:
        return None
    where = f"{WORKFLOW_FILE} at {rev}"
    return workflow_settings(parse_toml(raw, where), where)
