"""The one place that decides which environment a child process inherits.

git exports ``GIT_DIR`` and friends to hooks and to commands it runs; passed
on, they would point git at the wrong repository, so git-harn always names
its folder with ``cwd`` instead. The same scrub applies to commands run in a
workspace (agents, ``git harn run``), which must see their own worktree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# Set while git-harn itself changes refs, so its own hooks stand aside.
INTERNAL_ENV = "HARN_INTERNAL"

LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
                 "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE")
# git-harn's own switches, which must not leak into what a workspace runs.
_HARN_PRIVATE = (INTERNAL_ENV, "HARN_FAILPOINT")


def scrubbed(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without the location variables."""
    env = {k: v for k, v in os.environ.items() if k not in LOCATION_VARS}
    if extra:
        env.update(extra)
    return env


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """For git commands git-harn runs itself."""
    env = scrubbed()
    env[INTERNAL_ENV] = "1"
    # Messages are parsed in a few places (push rejections); keep them English.
    env["LC_ALL"] = "C"
    env["LANGUAGE"] = "C"
    if extra:
        env.update(extra)
    return env


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """For a command run in a workspace: git's location variables and
    git-harn's private switches removed."""
    env = {k: v for k, v in scrubbed().items() if k not in _HARN_PRIVATE}
    if extra:
        env.update(extra)
    return env


def scrub_process() -> None:
    """Drop the location variables from this process (a hook starts with them)."""
    for key in LOCATION_VARS:
        os.environ.pop(key, None)
