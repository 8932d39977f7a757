"""The setup: git-harn's hooks installed and current (and which hook
manager's hooks they chain), and git's version against the minimum [H1].
"""

from __future__ import annotations

from git_harn.doctor.findings import SETUP, Finding
from git_harn.git import Repo
from git_harn.git.run import git_version
from git_harn.hooks.files import CHAINED, OURS, UNDER_PRE_COMMIT
from git_harn.hooks.files import status as hooks_status

# reference-transaction hooks (2.28) keep records true and guard deletions;
# ``git worktree repair`` (2.29) reconnects a moved workspace.
MIN_GIT = (2, 29)
INSTALLED = (OURS, CHAINED, UNDER_PRE_COMMIT)


def check_setup(repo: Repo) -> tuple[list[Finding], list[str], str]:
    """Findings, notes (what the hooks chain), and git's version."""
    version, numbers = git_version(repo.cli_cwd)
    found = []
    if numbers and numbers < MIN_GIT:
        found.append(Finding(SETUP, "git-too-old", f"git {version}",
                             f"git-harn needs git {'.'.join(map(str, MIN_GIT))} or later (reference-transaction "
                             "hooks, 'git worktree repair'); upgrade git", None))
    hooks = hooks_status(repo)
    notes = [f"hook {h.name} chains {h.manager or h.chained}" for h in hooks.hooks if h.chained or h.manager]
    missing = [h.name for h in hooks.hooks if h.state not in INSTALLED]
    stale = [h.name for h in hooks.hooks if h.state in INSTALLED and not h.current]
    if missing or stale:
        parts = ([f"not installed: {', '.join(missing)}"] if missing else []) + (
            [f"older than this version: {', '.join(stale)}"] if stale else [])
        found.append(Finding(SETUP, "hooks-not-current", hooks.hooksDir,
                             f"git-harn's hooks {'; '.join(parts)}; without them a branch deletion or a removed "
                             "worktree is noticed only by the next git-harn command, and preserved work is not "
                             "guarded against 'git branch -D'", "git harn hooks install",
                             subject={"missing": missing, "stale": stale}))
    return found, notes, version
