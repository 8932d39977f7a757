"""Auth preflight: before a run creates anything [R3].

Two kinds of check, in this order: the ``[agents.preflight]`` commands,
and the adapters' own login checks (``claude auth status --text``, ``codex
login status``) for every claude or codex stage agent, unless
``[agents.preflight] adapterChecks = false``. Each command is an argv list
(never a shell), run in the repository's top folder with the operator's
environment plus ``HARN_STAGE=preflight`` and ``HARN_WORKFLOW_ID``, stdin
empty, for at most its timeout (an adapter's check: ``LOGIN_TIMEOUT``; the
CLIs answer in under a second, offline too). All must exit 0. A failure is
fatal: no record, branch, worktree or agent is started, and the result says
``blocked: "auth-preflight-failed"`` (exit 3) with the CLI's own words. Dry
runs run no preflight: they run nothing.
"""

from __future__ import annotations

from typing import Any

from git_harn.git import Repo
from git_harn.git.env import child_env
from git_harn.proc import Finished, exit_words, run_bounded, tail
from git_harn.tasks.config import STAGES, Stage
from git_harn.text import one_line
from git_harn.workflow.agents import adapters
from git_harn.workflow.agents.adapters.classify import said
from git_harn.workflow.model.config import Effective

AUTH_PREFLIGHT_FAILED = "auth-preflight-failed"
LOGIN_TIMEOUT = 30.0


def run_preflight(repo: Repo, eff: Effective, workflow_id: str) -> dict[str, Any] | None:
    """The preflight's report ``{ok, commands: [...], detail}``; None when there is nothing to check."""
    agent = eff.agents.get(Stage.PREFLIGHT)
    env = child_env({"HARN_STAGE": Stage.PREFLIGHT, "HARN_WORKFLOW_ID": workflow_id}, _secrets(eff))
    planned: list[tuple[list[str], float, str | None]] = [
        (list(argv), eff.timeout_of(Stage.PREFLIGHT), None) for argv in (agent.commands if agent else ())]
    if agent is None or agent.adapterChecks:
        stages = [eff.agents[stage] for stage in STAGES if stage in eff.agents]
        planned += [(check.argv, LOGIN_TIMEOUT, check.adapter) for check in adapters.login_checks(stages, env)
                    if check.skipped is None]
    if not planned:
        return None
    ran: list[dict[str, Any]] = []
    for argv, timeout, adapter in planned:
        done = run_bounded(argv, repo.workdir or repo.common_dir, timeout=timeout, env=env)
        problem = failure(done, timeout)
        ran.append({"argv": argv, "exitCode": done.exit_code, "seconds": round(done.seconds, 3),
                    "ok": problem is None, "detail": problem or "", "adapter": adapter})
        if problem is not None:
            return {"ok": False, "commands": ran,
                    "detail": f"auth preflight {' '.join(argv)} {problem}; nothing was started"}
    return {"ok": True, "commands": ran, "detail": f"{len(ran)} preflight command(s) passed"}


def _secrets(eff: Effective) -> tuple[str, ...]:
    """What the preflight checks is the agents' credentials: it sees every
    secret a stage agent gets, and its own ``env``."""
    names = [name for agent in eff.agents.values() for name in agent.secrets]
    return tuple(dict.fromkeys(names))


def failure(done: Finished, timeout: float) -> str | None:
    """Why a check failed, in the command's own words (stdout and stderr), or None."""
    if done.start_error is not None:
        return f"could not start: {done.start_error}"
    if done.timed_out:
        return f"timed out after {timeout:g}s"
    if done.exit_code != 0:
        words = " | ".join(said(tail(done.stdout, 300) + "\n" + tail(done.stderr, 300)))
        return exit_words(done.exit_code) + (f": {one_line(words, 300)}" if words else "")
    return None
