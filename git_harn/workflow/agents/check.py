"""``git harn workflow check [--live]``: can each configured agent run?

The configuration is the one a run would use (``<remote>/<base>``, fetched
without writing a ref). For every stage: is the executable there (PATH or
the path given), and for an adapter, does ``<cli> --version`` answer, does
the CLI's own login check pass (the one a run's preflight uses), and would
Claude Code refuse its permission flags (a bypass in any spelling, as root
without ``IS_SANDBOX=1``). With ``--live``, each adapter agent that is
logged in also gets a tiny no-op prompt in an empty temporary folder (never
a worktree of the repository), through the same adapter a run uses, so an
exhausted quota, a refused permission or a network that cannot be reached
shows as the same fault class it would be in a run. That costs a few
tokens per agent. It is bounded to seconds: ``LIVE_TIMEOUT`` in all,
``LIVE_IDLE`` without progress, and Claude Code's own retries cut to
``LIVE_RETRIES`` (``CLAUDE_CODE_MAX_RETRIES``, unless the operator set it),
where a run would wait minutes.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from git_harn.git import Repo
from git_harn.git.env import child_env
from git_harn.proc import exit_words, run_bounded, tail
from git_harn.results import Result
from git_harn.tasks.config import COMMAND_ADAPTER, STAGES, AgentSettings, Stage
from git_harn.text import one_line
from git_harn.workflow.agents import adapters
from git_harn.workflow.agents.adapters import claude
from git_harn.workflow.agents.adapters.classify import Usage
from git_harn.workflow.agents.auth import LOGIN_TIMEOUT, failure
from git_harn.workflow.model import config

VERSION_TIMEOUT = 30.0
LIVE_TIMEOUT = 25.0
LIVE_IDLE = 20.0
LIVE_RETRIES = "1"
LIVE_PROMPT = ("This is a preflight check by git-harn, not a task. Do not read, change or run anything. "
               "Answer with ok = true and summary = \"ready\".")


@dataclass
class WorkflowCheck(Result):
    SCHEMA: ClassVar[str] = "workflow-check"

    base: str
    remote: str
    live: bool
    agents: list[dict[str, Any]] = field(default_factory=list)
    # git-harn settings a run reads from the operator's config only, found in the repository's own [T1]
    ignored: list[dict[str, str]] = field(default_factory=list)
    sandbox: dict[str, Any] = field(default_factory=dict)  # what agents and gates would run in

    @property
    def ok(self) -> bool:
        return all(entry["ok"] for entry in self.agents)

    @property
    def outcome(self) -> str:
        return "ok" if self.ok else "needs-operator"

    def document(self) -> dict[str, Any]:
        body = super().document()
        body["ok"] = self.ok
        return body


def _version(argv: list[str], secrets: tuple[str, ...] = ()) -> tuple[str | None, str | None]:
    """(first line of ``--version``, problem)."""
    done = run_bounded([*argv, "--version"], Path(tempfile.gettempdir()), timeout=VERSION_TIMEOUT,
                       env=child_env({}, secrets))
    if done.start_error is not None:
        return None, done.start_error
    if done.timed_out:
        return None, f"{argv[0]} --version did not answer within {VERSION_TIMEOUT:g}s"
    out = done.stdout.decode("utf-8", "replace").strip().splitlines()
    if done.exit_code != 0:
        return None, one_line(f"{argv[0]} --version {exit_words(done.exit_code)}: {tail(done.stderr, 200)}", 300)
    return (out[0][:200] if out else ""), None


def _live(agent: AgentSettings) -> dict[str, Any]:
    """One no-op prompt through the adapter, in an empty folder."""
    probe = dataclasses.replace(agent, maxTurns=min(agent.maxTurns or 3, 3))
    if agent.adapter == "codex":  # the folder is no git repository
        probe = dataclasses.replace(probe, args=(*agent.args, "--skip-git-repo-check"))
    with tempfile.TemporaryDirectory(prefix="git-harn-check-") as folder:
        where = Path(folder)
        report = where / "check.report.json"
        env = child_env({"HARN_STAGE": agent.stage, "HARN_REPORT": str(report)}, agent.secrets)
        env.setdefault("CLAUDE_CODE_MAX_RETRIES", LIVE_RETRIES)
        run = adapters.run(adapters.Call(probe, Stage.PLAN, where, LIVE_PROMPT, env, report, where / "check",
                                         LIVE_TIMEOUT, LIVE_IDLE))
        answered = run.verdict.fault is None and run.finished.exit_code == 0 and report.exists()
    verdict = run.verdict
    detail = verdict.message or verdict.why
    if verdict.fault is None and not answered:
        detail = f"{agent.adapter} answered without a report ({verdict.why})"
    return {"ok": answered, "fault": verdict.fault, "signal": verdict.why, "detail": one_line(detail, 300),
            "seconds": round(run.finished.seconds, 3), "usage": run.usage.shown()}


def _root_unsandboxed() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and os.environ.get("IS_SANDBOX") != "1"


def _login(agent: AgentSettings) -> str | None:
    """The CLI's own login check, as a run's preflight makes it: what it said when it failed."""
    env = child_env({"HARN_STAGE": Stage.PREFLIGHT}, agent.secrets)
    for check in adapters.login_checks([agent], env):
        if check.skipped is not None:
            continue
        done = run_bounded(check.argv, Path(tempfile.gettempdir()), timeout=LOGIN_TIMEOUT, env=env)
        problem = failure(done, LOGIN_TIMEOUT)
        if problem is not None:
            return one_line(f"{' '.join(check.argv[len(agent.command or ()):])}: {problem}", 300)
    return None


def _check_agent(agent: AgentSettings, live: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"stage": agent.stage, "adapter": agent.adapter,
                             "command": agent.command if agent.command is not None else "builtin",
                             "found": None, "version": None, "live": None, "problems": []}
    if agent.command is None:
        entry["ok"] = True
        return entry
    found = shutil.which(agent.command[0])
    entry["found"] = found
    if found is None:
        entry["problems"].append(f"{agent.command[0]} is not an executable on PATH"
                                 + (f" (install {agent.adapter}, or name it with command = [...])"
                                    if agent.adapter != COMMAND_ADAPTER else ""))
    elif agent.adapter != COMMAND_ADAPTER:
        bypass = claude.bypasses_permissions(agent.args) if agent.adapter == claude.NAME else None
        if bypass is not None and _root_unsandboxed():
            entry["problems"].append(f"config fault: claude refuses {bypass} as root unless IS_SANDBOX=1 "
                                     "(exactly 1; set it only inside a container or VM)")
        entry["version"], problem = _version(agent.command, agent.secrets)
        login = None if problem else _login(agent)
        if problem:
            entry["problems"].append(problem)
        elif login is not None:
            entry["problems"].append(f"auth fault: {agent.adapter} is not logged in ({login})")
            if live:  # no prompt: the run's own preflight would stop here
                entry["live"] = {"ok": False, "fault": "auth", "signal": "login check", "detail": login,
                                 "seconds": 0.0, "usage": Usage().shown()}
        elif live:
            entry["live"] = _live(agent)
            if not entry["live"]["ok"]:
                fault = entry["live"]["fault"]
                entry["problems"].append((f"{fault} fault: " if fault else "") + entry["live"]["detail"])
    entry["ok"] = not entry["problems"]
    return entry


def check(repo: Repo, options: config.Options, live: bool) -> WorkflowCheck:
    """Every configured agent's preflight; BadInput when the configuration itself is wrong."""
    eff = config.load(repo, dataclasses.replace(options, dry_run=True, quiet=True))
    result = WorkflowCheck(eff.base, eff.remote, live, ignored=repo.run_ignored_settings(),
                           sandbox={**eff.sandbox.shown(), "words": eff.sandbox.words()})
    for stage in STAGES:
        if stage in eff.agents:
            result.agents.append(_check_agent(eff.agents[stage], live))
    return result
