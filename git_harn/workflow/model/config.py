"""The effective configuration of one run: command-line flags over
``.harn/workflow.toml`` as committed at ``<remote>/<base>`` [P5].

The file is read from the fetched base, never from a task branch or the
operator's working tree, so an agent cannot change its own agents, gates or
roadmap. Everything is checked before anything is created [P7].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from git_harn.assess.gates import gate_commands, gate_timeout
from git_harn.errors import BadInput
from git_harn.forge.choose import ALIASES, FORGES
from git_harn.forge.rest import checked_url
from git_harn.git import Oid, Repo
from git_harn.git.branches import check_branch_name, check_remote, fetch_branch
from git_harn.git.remote import DEFAULT_REMOTE
from git_harn.tasks.branches import DEFAULT_BASE, Base
from git_harn.tasks.config import (
    DEFAULT_CLAIM_HEARTBEAT,
    DEFAULT_CLAIM_STALE_AFTER,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_RECOVERY_CANDIDATES,
    DEFAULT_RESUME_MODE,
    DEFAULT_REVIEW_ROUNDS,
    DEFAULT_SCHEMA_RETRIES,
    DEFAULT_STAGE_ATTEMPTS,
    DEFAULT_STAGE_TIMEOUT,
    MAX_PARALLEL,
    MAX_RETRIES,
    RESUME_MODES,
    STAGES,
    WORKFLOW_FILE,
    AgentSettings,
    LandMode,
    Price,
    Stage,
    WorkflowSettings,
    settings_at,
)
from git_harn.tasks.execplan import plans_dir
from git_harn.tasks.roadmap import roadmap_file, tasks_at
from git_harn.workspace.sandbox import Asked, Policy, policy_of

T = TypeVar("T")


@dataclass(frozen=True)
class Options:
    """What the command line asked for; None: not given."""

    base: str | None = None
    remote: str | None = None
    max_tasks: int | None = None
    parallel: int | None = None
    dry_run: bool = False
    quiet: bool = False  # --json: nothing but the document
    idle_timeout: float | None = None
    claims: bool | None = None  # --claims / --no-claims
    claim_heartbeat: float | None = None
    claim_stale_after: float | None = None
    resume_partial_branches: bool | None = None
    resume_mode: str | None = None
    max_recovery_candidates: int | None = None
    stage_attempts: int | None = None
    schema_retries: int | None = None
    assess_partial_branches: bool | None = None
    wait_for_provider: str | None = None  # --wait-for-provider[=<max>]: "" for the default bound
    sandbox: str | None = None  # --sandbox auto|bwrap|off
    max_cost_usd: float | None = None  # --max-cost-usd: the run's spending limit
    hard_limit: bool = False  # --hard-limit: the crossing stops the stages still running too
    notify: str | None = None  # --notify: the notifier's command line (run/notify.py), over harn.notify
    land: str | None = None  # --land push|pull-request [F1]
    auto_merge: bool | None = None  # --auto-merge / --no-auto-merge
    forge: str | None = None  # --forge: over workflow.forge
    forge_url: str | None = None  # --forge-url: over workflow.forgeUrl


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
    idleTimeout: float = DEFAULT_IDLE_TIMEOUT
    claims: bool = False  # task claims through the remote (workflow.claims)
    claimHeartbeat: float = DEFAULT_CLAIM_HEARTBEAT
    claimStaleAfter: float = DEFAULT_CLAIM_STALE_AFTER
    resumePartialBranches: bool = False
    resumeMode: str = DEFAULT_RESUME_MODE
    maxRecoveryCandidates: int = DEFAULT_MAX_RECOVERY_CANDIDATES
    stageAttempts: int = DEFAULT_STAGE_ATTEMPTS
    schemaRetries: int = DEFAULT_SCHEMA_RETRIES
    assessPartialBranches: bool = True
    sandbox: Policy = field(default_factory=Policy)  # what agents and gates run in, and their bounds
    maxCostUsd: float | None = None  # the spending limit of the run (agents/spend.py), None: none
    hardLimit: bool = False
    prices: dict[str, Price] = field(default_factory=dict)  # [prices.<model>]: dollars per million tokens
    land: LandMode = LandMode.PUSH  # how a judged squash reaches the base [F1]
    forge: str | None = None  # workflow.forge: which forge the remote is on (None: its URL says, or none)
    forgeUrl: str | None = None  # workflow.forgeUrl: where that forge's API is
    autoMerge: bool = False  # ask the forge to merge each request once its checks pass (where it allows)

    @property
    def upstream(self) -> str:
        return f"{self.remote}/{self.base}"

    def timeout_of(self, stage: str) -> float:
        agent = self.agents.get(stage)
        return agent.timeout if agent is not None and agent.timeout is not None else self.stageTimeout

    def shown(self) -> dict[str, Any]:
        return {"maxTasks": self.maxTasks, "parallel": self.parallel, "stageTimeout": self.stageTimeout,
                "reviewRounds": self.reviewRounds, "gates": self.gates,
                "claims": self.claims, "claimHeartbeat": self.claimHeartbeat,
                "claimStaleAfter": self.claimStaleAfter,
                "resumePartialBranches": self.resumePartialBranches, "resumeMode": self.resumeMode,
                "maxRecoveryCandidates": self.maxRecoveryCandidates, "idleTimeout": self.idleTimeout,
                "stageAttempts": self.stageAttempts, "schemaRetries": self.schemaRetries,
                "assessPartialBranches": self.assessPartialBranches, "sandbox": self.sandbox.shown(),
                "maxCostUsd": self.maxCostUsd, "hardLimit": self.hardLimit, "land": self.land.value,
                "forge": self.forge, "forgeUrl": self.forgeUrl, "autoMerge": self.autoMerge}


def _check_flags(options: Options) -> None:
    if options.max_tasks is not None and options.max_tasks < 1:
        raise BadInput("--max-tasks must be at least 1")
    if options.parallel is not None and not 1 <= options.parallel <= MAX_PARALLEL:
        raise BadInput(f"--parallel must be between 1 and {MAX_PARALLEL}")
    if options.idle_timeout is not None and not options.idle_timeout > 0:
        raise BadInput("--idle-timeout must be a positive number of seconds")
    for flag, seconds in (("--claim-heartbeat", options.claim_heartbeat),
                          ("--claim-stale-after", options.claim_stale_after)):
        if seconds is not None and not seconds > 0:
            raise BadInput(f"{flag} must be a positive number of seconds")
    if options.resume_mode is not None and options.resume_mode not in RESUME_MODES:
        raise BadInput(f"--resume-mode must be one of {', '.join(RESUME_MODES)}")
    if options.max_recovery_candidates is not None and options.max_recovery_candidates < 1:
        raise BadInput("--max-recovery-candidates must be at least 1")
    if options.stage_attempts is not None and not 1 <= options.stage_attempts <= MAX_RETRIES:
        raise BadInput(f"--stage-attempts must be between 1 and {MAX_RETRIES}")
    if options.schema_retries is not None and not 0 <= options.schema_retries <= MAX_RETRIES:
        raise BadInput(f"--schema-retries must be between 0 and {MAX_RETRIES}")
    if options.max_cost_usd is not None and not 0 < options.max_cost_usd < float("inf"):
        raise BadInput("--max-cost-usd must be a positive amount of US dollars")
    if options.land is not None:
        LandMode.parse(options.land, "--land")


def _read(repo: Repo, remote: str, base: str, dry_run: bool) -> tuple[Oid, WorkflowSettings]:
    check_remote(repo, remote)
    check_branch_name(base, "--base")
    oid = fetch_branch(repo, remote, base, write_ref=not dry_run)
    settings = settings_at(repo, oid, f"{remote}/{base}")
    if settings is None:
        raise BadInput(f"{remote}/{base} has no {WORKFLOW_FILE}: write one with 'git harn workflow init', "
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
            raise BadInput(f"{WORKFLOW_FILE}: workflow.base/workflow.remote at {remote}/{base} name "
                           "yet another base; make them agree")
    agents = dict(settings.agents)
    land = LandMode.parse(options.land, "--land") if options.land is not None else settings.land or LandMode.PUSH
    integrator = agents.get(Stage.INTEGRATE)
    if land is LandMode.PULL_REQUEST and integrator is not None and not integrator.builtin:
        raise BadInput(f"{WORKFLOW_FILE} at {remote}/{base}: workflow.land = \"pull-request\" needs the builtin "
                       "integration (agents.integrate.command = \"builtin\", or no [agents.integrate])")
    if options.forge is not None and ALIASES.get(options.forge.lower(), options.forge.lower()) not in FORGES:
        raise BadInput(f"--forge must be one of {', '.join(FORGES)} (or forgejo), not {options.forge!r}")
    if options.forge_url is not None:
        checked_url(options.forge_url, "--forge-url")
    if settings.forge is not None and ALIASES.get(settings.forge.lower(), settings.forge.lower()) not in FORGES:
        raise BadInput(f"{WORKFLOW_FILE} at {remote}/{base}: setting workflow.forge must be one of "
                       f"{', '.join(FORGES)} (or forgejo), not {settings.forge!r}")
    for stage in STAGES:
        if stage not in agents:
            if stage != Stage.INTEGRATE:
                raise BadInput(f"{WORKFLOW_FILE} at {remote}/{base}: missing setting agents.{stage} "
                               f"([agents.{stage}] command = [...])")
            agents[stage] = AgentSettings(Stage.INTEGRATE, None)
    gates = gate_commands(repo, Base(f"{remote}/{base}", oid))[0]
    if not gates:
        raise BadInput(f"{WORKFLOW_FILE} at {remote}/{base}: missing setting gates.commands "
                       "(the workflow needs gates as evidence)")
    if tasks_at(repo, oid) is None:
        raise BadInput(f"{remote}/{base} has no roadmap at {roadmap_file(repo)} (git config harn.roadmap)")
    plans_dir(repo)  # harn.execplans must be sane before anything starts
    max_cost = options.max_cost_usd if options.max_cost_usd is not None else settings.maxCostUsd
    if options.hard_limit and max_cost is None:
        raise BadInput("--hard-limit needs a spending limit: --max-cost-usd or workflow.maxCostUsd")
    gate_timeout(repo, None)
    return Effective(
        base=base, remote=remote, base_oid=oid,
        maxTasks=options.max_tasks if options.max_tasks is not None else settings.maxTasks,
        parallel=options.parallel if options.parallel is not None else (settings.parallel or 1),
        stageTimeout=settings.stageTimeout or DEFAULT_STAGE_TIMEOUT,
        reviewRounds=settings.reviewRounds or DEFAULT_REVIEW_ROUNDS,
        agents=agents, gates=gates,
        idleTimeout=options.idle_timeout or settings.idleTimeout or DEFAULT_IDLE_TIMEOUT,
        claims=options.claims if options.claims is not None else bool(settings.claims),
        claimHeartbeat=_first(options.claim_heartbeat, settings.claimHeartbeat, DEFAULT_CLAIM_HEARTBEAT),
        claimStaleAfter=_first(options.claim_stale_after, settings.claimStaleAfter, DEFAULT_CLAIM_STALE_AFTER),
        resumePartialBranches=_first(options.resume_partial_branches, settings.resumePartialBranches, False),
        resumeMode=_first(options.resume_mode, settings.resumeMode, DEFAULT_RESUME_MODE),
        maxRecoveryCandidates=_first(options.max_recovery_candidates, settings.maxRecoveryCandidates,
                                     DEFAULT_MAX_RECOVERY_CANDIDATES),
        stageAttempts=_first(options.stage_attempts, settings.stageAttempts, DEFAULT_STAGE_ATTEMPTS),
        schemaRetries=_first(options.schema_retries, settings.schemaRetries, DEFAULT_SCHEMA_RETRIES),
        assessPartialBranches=_first(options.assess_partial_branches, settings.assessPartialBranches, True),
        land=land, forge=options.forge or settings.forge, forgeUrl=options.forge_url or settings.forgeUrl,
        autoMerge=_first(options.auto_merge, settings.autoMerge, False),
        sandbox=policy_of(repo, Asked(options.sandbox, settings.sandbox, settings.gateNetwork,
                                      settings.stageDiskLimit, settings.stageProcessLimit)),
        maxCostUsd=max_cost, hardLimit=options.hard_limit, prices=dict(settings.prices),
    )


def _first(flag: T | None, setting: T | None, default: T) -> T:
    """Flags over the file over the default; 0 and false count as given."""
    return flag if flag is not None else setting if setting is not None else default
