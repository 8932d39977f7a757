"""The effective configuration of one run: command-line flags over
``.harn/workflow.toml`` as committed at ``<remote>/<base>`` [P5].

The file is read from the fetched base, never from a task branch or the
operator's working tree, so an agent cannot change its own agents, gates or
roadmap. Everything is checked before anything is created [P7].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from git_harn.errors import BadInput
from git_harn.git import Repo
from git_harn.git.workflow_refs import Oid
from git_harn.workflow import host
from git_harn.workflow.host import (
    DEFAULT_REMOTE,
    DEFAULT_REVIEW_ROUNDS,
    DEFAULT_SCHEMA_RETRIES,
    DEFAULT_STAGE_ATTEMPTS,
    DEFAULT_STAGE_TIMEOUT,
    MAX_PARALLEL,
    MAX_RETRIES,
    STAGES,
    AgentSettings,
    WorkflowSettings,
)

DEFAULT_BASE = "main"


@dataclass(frozen=True)
class Options:
    """What the command line asked for; None: not given."""

    base: str | None = None
    remote: str | None = None
    max_tasks: int | None = None
    parallel: int | None = None
    dry_run: bool = False
    quiet: bool = False  # --json: nothing but the document
    stage_attempts: int | None = None
    schema_retries: int | None = None
    assess_partial_branches: bool | None = None


@dataclass
class Effective:
    base: str
    remote: str
    base_oid: Oid
    maxTasks: int | None
    parallel: int
    stageTimeout: float
    reviewRounds: int
    agents: dict[str, AgentSettings]
    gates: list[list[str]] = field(default_factory=list)
    stageAttempts: int = DEFAULT_STAGE_ATTEMPTS
    schemaRetries: int = DEFAULT_SCHEMA_RETRIES
    assessPartialBranches: bool = True

    @property
    def upstream(self) -> str:
        return f"{self.remote}/{self.base}"

    def timeout_of(self, stage: str) -> float:
        agent = self.agents.get(stage)
        return agent.timeout if agent is not None and agent.timeout is not None else self.stageTimeout

    def shown(self) -> dict[str, Any]:
        return {"maxTasks": self.maxTasks, "parallel": self.parallel, "stageTimeout": self.stageTimeout,
                "reviewRounds": self.reviewRounds, "gates": self.gates, "stageAttempts": self.stageAttempts,
                "schemaRetries": self.schemaRetries, "assessPartialBranches": self.assessPartialBranches}


def _check_flags(options: Options) -> None:
    if options.max_tasks is not None and options.max_tasks < 1:
        raise BadInput("--max-tasks must be at least 1")
    if options.parallel is not None and not 1 <= options.parallel <= MAX_PARALLEL:
        raise BadInput(f"--parallel must be between 1 and {MAX_PARALLEL}")
    if options.stage_attempts is not None and not 1 <= options.stage_attempts <= MAX_RETRIES:
        raise BadInput(f"--stage-attempts must be between 1 and {MAX_RETRIES}")
    if options.schema_retries is not None and not 0 <= options.schema_retries <= MAX_RETRIES:
        raise BadInput(f"--schema-retries must be between 0 and {MAX_RETRIES}")


def _read(repo: Repo, remote: str, base: str, dry_run: bool) -> tuple[Oid, WorkflowSettings]:
    host.refs.check_remote(repo, remote)
    host.refs.check_branch_name(base, "--base")
    oid = host.refs.fetch_branch(repo, remote, base, write_ref=not dry_run)
    settings = host.settings_at(repo, oid, f"{remote}/{base}")
    if settings is None:
        raise BadInput(f"{remote}/{base} has no {host.WORKFLOW_FILE}: write one with 'git harn workflow init', "
                       f"then commit and push it")
    return oid, settings


def load(repo: Repo, options: Options) -> Effective:
    """Fetch the base and return the checked configuration; BadInput names the key."""
    _check_flags(options)
    remote = options.remote or DEFAULT_REMOTE
    base = options.base or repo.config("harn.base") or DEFAULT_BASE
    oid, settings = _read(repo, remote, base, options.dry_run)
    # The file may name another base or remote: then that one is the source of truth.
    wanted_remote = options.remote or settings.remote or remote
    wanted_base = options.base or settings.base or base
    if (wanted_remote, wanted_base) != (remote, base):
        remote, base = wanted_remote, wanted_base
        oid, settings = _read(repo, remote, base, options.dry_run)
        if (options.remote or settings.remote or remote, options.base or settings.base or base) != (remote, base):
            raise BadInput(f"{host.WORKFLOW_FILE}: workflow.base/workflow.remote at {remote}/{base} name "
                           "yet another base; make them agree")
    agents = dict(settings.agents)
    for stage in STAGES:
        if stage not in agents:
            if stage != "integrate":
                raise BadInput(f"{host.WORKFLOW_FILE} at {remote}/{base}: missing setting agents.{stage} "
                               f"([agents.{stage}] command = [...])")
            agents[stage] = AgentSettings("integrate", None)
    gates = host.gate_commands(repo, host.Base(f"{remote}/{base}", oid))
    if not gates:
        raise BadInput(f"{host.WORKFLOW_FILE} at {remote}/{base}: missing setting gates.commands "
                       "(the workflow needs gates as evidence)")
    if host.tasks_at(repo, oid) is None:
        raise BadInput(f"{remote}/{base} has no roadmap at {host.roadmap_file(repo)} (git config harn.roadmap)")
    host.plans_dir(repo)  # harn.execplans must be sane before anything starts
    host.gate_timeout(repo)
    return Effective(
        base=base, remote=remote, base_oid=oid,
        maxTasks=options.max_tasks if options.max_tasks is not None else settings.maxTasks,
        parallel=options.parallel if options.parallel is not None else (settings.parallel or 1),
        stageTimeout=settings.stageTimeout or DEFAULT_STAGE_TIMEOUT,
        reviewRounds=settings.reviewRounds or DEFAULT_REVIEW_ROUNDS,
        agents=agents, gates=gates,
        stageAttempts=_first(options.stage_attempts, settings.stageAttempts, DEFAULT_STAGE_ATTEMPTS),
        schemaRetries=_first(options.schema_retries, settings.schemaRetries, DEFAULT_SCHEMA_RETRIES),
        assessPartialBranches=_first(options.assess_partial_branches, settings.assessPartialBranches, True),
    )


def _first(flag: Any, setting: Any, default: Any) -> Any:
    """Flags over the file over the default; 0 and false count as given."""
    return flag if flag is not None else setting if setting is not None else default
