"""``git harn workflow init``: a commented starter ``.harn/workflow.toml`` and
``.harn/prompts/<stage>.md`` templates in the working tree, for the operator
to edit and commit. Nothing that exists is overwritten."""

from __future__ import annotations

import os
from pathlib import Path

from git_harn.errors import BadInput
from git_harn.git import Repo
from git_harn.tasks.config import STAGES, WORKFLOW_FILE
from git_harn.workflow.agents.adapters import starter
from git_harn.workflow.agents.stages import BUILTIN_PROMPTS, PROMPTS_DIR
from git_harn.workflow.model.result import InitResult
from git_harn.workspace.here import refuse_in_workspace

STARTER = '''\
# git-harn workflow configuration. `git harn workflow run` reads this file as
# committed on <remote>/<base>, never from a task branch or a working tree:
# edit it, commit it, push it. Flags on the command line override [workflow].

[workflow]
# base = "main"            # branch on the remote that tasks land on
# remote = "origin"
# maxTasks = 10            # stop after starting this many tasks (default: no limit)
# parallel = 1             # tasks at once; integrations take turns on the merge lock
# stageTimeout = 1800      # seconds a stage agent may run; its process group is killed after
# reviewRounds = 2         # implement -> gates -> dual review rounds before a task fails
# maxCostUsd = 20          # no agent stage starts once the run's stages cost this much (--max-cost-usd)

# Stage agents: argv lists, run in the task's worktree, never through a shell.
# They read the task context on stdin (stdin = "json", the default, or
# "prompt") and in HARN_* variables, and write a JSON report to $HARN_REPORT.
# See docs/workflow.md in git-harn's source, or `man git-harn`.

[agents.plan]
command = ["my-agent", "plan"]
# timeout = 600
# stdin = "prompt"

[agents.implement]
command = ["my-agent", "implement"]

[agents.review]
command = ["my-agent", "review"]

[agents.integrate]
command = "builtin"        # git-harn's own integration: rebase, squash, tick, push

[gates]
# Evidence the host gathers itself on the exact tip; every command must exit 0.
commands = [["make", "test"]]
'''


def _shipped_prompt(stage: str) -> str:
    shipped = Path(__file__).resolve().parent / "prompts" / f"{stage}.md"
    try:
        return shipped.read_text(encoding="utf-8")
    except OSError:
        return BUILTIN_PROMPTS[stage] + "\n"


def init(repo: Repo, agent: str | None = None) -> InitResult:
    """``agent`` ("claude" or "codex"): the stage agents use that adapter."""
    if repo.is_bare or repo.workdir is None:
        raise BadInput("workflow init writes into a working tree; run it in a checkout")
    refuse_in_workspace(repo, "workflow init")
    if agent is not None and agent not in starter.AGENT_CHOICES:
        raise BadInput(f"--agent must be one of {', '.join(starter.AGENT_CHOICES)}, not {agent!r}")
    root = repo.workdir
    files = {WORKFLOW_FILE: STARTER if agent is None else starter.with_adapter(STARTER, agent)}
    files.update({f"{PROMPTS_DIR}/{stage}.md": _shipped_prompt(stage) for stage in STAGES})
    result = InitResult()
    for name, text in files.items():
        path = root / name
        if os.path.lexists(path):
            result.kept.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "x", encoding="utf-8") as handle:  # never over anything
                handle.write(text)
        except FileExistsError:
            result.kept.append(name)
            continue
        result.written.append(name)
    return result
