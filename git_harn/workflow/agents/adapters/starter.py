"""The ``[agents.*]`` tables of ``git harn workflow init --agent claude|codex``.

Permissions follow docs/security-and-permissions.md: writing stages may
edit the worktree and run the few git commands a commit needs; reviewers
may only read; nothing approves everything.
"""

from __future__ import annotations

AGENT_CHOICES = ("claude", "codex")

_CLAUDE = '''\
# Stage agents through the Claude Code adapter. For each stage git-harn runs
#   claude -p --output-format stream-json --verbose --json-schema <report schema>
#          --session-id <id> (--resume <id> on a retry after a fault) [args]
# in the task's worktree, never through a shell, with the prompt on stdin. It
# keeps the event stream beside the stage's report and reads the report from
# the final result's structured_output. command = ["claude"] (from PATH) is the
# default; name another executable with command = ["/path/to/claude"].
# Permissions: acceptEdits approves edits inside the worktree; the allow list
# names the only shell commands a stage may run. Do not use
# --dangerously-skip-permissions outside a container or VM (see
# docs/security-and-permissions.md). `git harn workflow check --live` tries them.

[agents.plan]
adapter = "claude"
args = ["--permission-mode", "acceptEdits", "--allowedTools",
        "Bash(git add:*)", "Bash(git commit:*)", "Bash(git status:*)", "Bash(git diff:*)", "Bash(git log:*)"]
# model = "sonnet"
# maxTurns = 40           # --max-turns
# maxBudgetUsd = 5        # --max-budget-usd, per stage run
# idleTimeout = 600       # seconds without progress before the agent counts as hung
# timeout = 1800

[agents.implement]
adapter = "claude"
args = ["--permission-mode", "acceptEdits", "--allowedTools",
        "Bash(git add:*)", "Bash(git commit:*)", "Bash(git status:*)", "Bash(git diff:*)", "Bash(git log:*)",
        "Bash(make test:*)"]

[agents.review]
adapter = "claude"
args = ["--permission-mode", "default", "--disallowedTools", "Edit", "Write", "NotebookEdit",
        "--allowedTools", "Bash(git diff:*)", "Bash(git log:*)", "Bash(git show:*)"]

'''

_CODEX = '''\
# Stage agents through the Codex CLI adapter. For each stage git-harn runs
#   codex exec --json -C <worktree> --output-schema <report schema> -o <answer>
#              [args] [resume <id> on a retry after a fault] -
# never through a shell, with the prompt on stdin (closed after it), keeps the
# event stream beside the stage's report, and reads the report from the -o
# file. command = ["codex"] (from PATH) is the default.
# Permissions: workspace-write confines writes to the worktree (network off);
# recent versions also keep git metadata read-only, so `git commit` fails in a
# linked worktree until the common git directory's objects/, refs/ and logs/
# are writable roots (sandbox_workspace_write.writable_roots in your codex
# config, outside the repository). Reviewers get read-only. Do not use
# danger-full-access outside a container or VM (docs/security-and-permissions.md).

[agents.plan]
adapter = "codex"
args = ["--sandbox", "workspace-write"]
# model = "gpt-5-codex"
# idleTimeout = 600       # seconds without progress before the agent counts as hung
# timeout = 1800

[agents.implement]
adapter = "codex"
args = ["--sandbox", "workspace-write"]

[agents.review]
adapter = "codex"
args = ["--sandbox", "read-only"]

# codex reports tokens, not dollars: with a price for its model a run's
# spending limit (workflow.maxCostUsd, --max-cost-usd) counts its stages;
# without one their cost is unknown and not counted. US dollars per million
# tokens (an agent without a model: [prices.codex]); set your own prices.
# [prices.codex]
# input = 1.25
# cached = 0.125
# output = 10

'''

SECTIONS = {"claude": _CLAUDE, "codex": _CODEX}


def with_adapter(starter: str, agent: str) -> str:
    """``starter`` with its plan, implement and review tables for ``agent``."""
    head, rest = starter.split("# Stage agents:", 1)
    _, tail = rest.split("[agents.integrate]", 1)
    return f"{head}{SECTIONS[agent]}[agents.integrate]{tail}"
