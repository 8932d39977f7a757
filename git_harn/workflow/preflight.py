"""Auth preflight: ``[agents.preflight]`` commands run before a run creates
anything (seed 002).

Each command is an argv list (never a shell), run in the repository's top
folder with the operator's environment plus ``HARN_STAGE=preflight`` and
``HARN_WORKFLOW_ID``, for at most its timeout, stdin empty. All must exit
0. A failure is fatal: no record, branch, worktree or agent is started, and
the result says ``blocked: "auth-preflight-failed"`` (exit 3). Dry runs run
no preflight: they run nothing.
"""

from __future__ import annotations

from typing import Any

from git_harn.git import Repo
from git_harn.text import one_line
from git_harn.workflow import host
from git_harn.workflow.config import Effective

AUTH_PREFLIGHT_FAILED = "auth-preflight-failed"


def run_preflight(repo: Repo, eff: Effective, workflow_id: str) -> dict[str, Any] | None:
    """The preflight's report ``{ok, commands: [...], detail}``; None when none is configured."""
    agent = eff.agents.get("preflight")
    if agent is None:
        return None
    timeout = eff.timeout_of("preflight")
    env = host.refs.agent_env({"HARN_STAGE": "preflight", "HARN_WORKFLOW_ID": workflow_id}, _secrets(eff))
    ran: list[dict[str, Any]] = []
    for argv in agent.commands or (tuple(agent.command or ()),):
        done = host.run_bounded(list(argv), repo.workdir or repo.common_dir, timeout=timeout, env=env)
        problem = _problem(done, timeout)
        ran.append({"argv": list(argv), "exitCode": done.exit_code, "seconds": round(done.seconds, 3),
                    "ok": problem is None, "detail": problem or ""})
        if problem is not None:
            return {"ok": False, "commands": ran,
                    "detail": f"auth preflight {' '.join(argv)} {problem}; nothing was started"}
    return {"ok": True, "commands": ran, "detail": f"{len(ran)} preflight command(s) passed"}


def _secrets(eff: Effective) -> tuple[str, ...]:
    """What the preflight checks is the agents' credentials: it sees every
    secret a stage agent gets, and its own ``env``."""
    names = [name for agent in eff.agents.values() for name in agent.secrets]
    return tuple(dict.fromkeys(names))


def _problem(done: host.Finished, timeout: float) -> str | None:
    if done.start_error is not None:
        return f"could not start: {done.start_error}"
    if done.timed_out:
        return f"timed out after {timeout:g}s"
    if done.exit_code != 0:
        tail = one_line(host.tail(done.stderr, 300), 300)
        return host.exit_words(done.exit_code) + (f": {tail}" if tail else "")
    return None
