"""The one place that decides which environment a child process inherits.

git exports ``GIT_DIR`` and friends to hooks and to commands it runs; passed
on, they would point git at the wrong repository, so git-harn always names
its folder with ``cwd`` instead. The same scrub applies to commands run in a
workspace (agents, gates, ``git harn run``), which must see their own worktree.

Agents and gates run code nobody reviewed yet, so they get no secret of the
operator's unless their configuration names it: a variable whose name looks
like one (``SECRET_PATTERNS``) is held back from them, and passed only when
listed in ``[agents.<stage>] env`` or ``[gates] env``, or by an adapter's
documented default (``tasks/config.py``). Everything else (PATH, HOME,
LANG, TERM, TMPDIR ...) is passed on as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from fnmatch import translate
from functools import cache

# Set while git-harn itself changes refs, so its own hooks stand aside.
INTERNAL_ENV = "HARN_INTERNAL"
# One object view [T1]: git reads through ``refs/replace/*`` unless told not
# to, libgit2 (pygit2) never does. A replace ref an agent wrote would show
# the gates and reviewers one commit and the squash, built in-process,
# another; with this set every git git-harn runs, and every agent and gate
# it starts, reads the objects libgit2 reads.
NO_REPLACE = {"GIT_NO_REPLACE_OBJECTS": "1"}

LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
                 "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE")
# Settings git takes from the environment as if on its command line (``git -c``
# exports them to what it runs): the operator's own git may use them, a child never.
CONFIG_INJECTION = ("GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_*",
                    "GIT_CONFIG_VALUE_*")
# git-harn's own switches, which must not leak into what a workspace runs.
_HARN_PRIVATE = (INTERNAL_ENV, "HARN_FAILPOINT", "HARN_FAILPOINT_MODE")
# Names that hold, or open the way to, a credential (matched upper-cased) [T5].
SECRET_PATTERNS = ("*_KEY", "*_KEY_ID", "*_KEYS", "*APIKEY*", "*API_KEY*", "*TOKEN*", "*SECRET*",
                   "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*", "*_AUTH", "GH_*", "AWS_*",
                   "AZURE_*", "VAULT_*", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "GIT_ASKPASS",
                   "SSH_ASKPASS", "KRB5CCNAME")


# The variables git-harn reads a forge's token from (gh's own names for
# GitHub; GitHub Enterprise Server hosts prefer the enterprise ones). Held by
# the host alone: no agent, gate or assessor gets one, whatever its
# configuration names [T5].
GITHUB_VARS = ("GH_TOKEN", "GITHUB_TOKEN")
GITHUB_ENTERPRISE_VARS = ("GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
GITLAB_VARS = ("GITLAB_TOKEN",)
GITEA_VARS = ("GITEA_TOKEN", "FORGEJO_TOKEN")
FORGE_TOKEN_VARS = frozenset((*GITHUB_VARS, *GITHUB_ENTERPRISE_VARS, *GITLAB_VARS, *GITEA_VARS))


@cache
def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One expression matching as ``fnmatchcase`` does with any of ``patterns``:
    every agent and gate gets a filtered environment, so one match per name,
    compiled on first use (not at start-up: status and the hooks never filter)."""
    return re.compile("|".join(f"(?:{translate(pattern)})" for pattern in patterns))


def is_secret(name: str) -> bool:
    return _any_of(SECRET_PATTERNS).match(name.upper()) is not None


def never_passed(name: str) -> bool:
    """A variable no child gets, whatever its configuration says."""
    return name in LOCATION_VARS or _any_of(CONFIG_INJECTION).match(name) is not None


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
    env.update(NO_REPLACE)
    # Messages are parsed in a few places (push rejections); keep them English.
    env["LC_ALL"] = "C"
    env["LANGUAGE"] = "C"
    if extra:
        env.update(extra)
    return env


def child_env(extra: Mapping[str, str] | None = None, secrets: Collection[str] = ()) -> dict[str, str]:
    """For an agent, a gate, an assessor: git's location and config variables
    and git-harn's private switches removed, and every secret-looking
    variable held back except those named in ``secrets``; plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not never_passed(k) and k not in _HARN_PRIVATE and k not in FORGE_TOKEN_VARS
           and (k in secrets or not is_secret(k))}
    env.update(NO_REPLACE)
    if extra:
        env.update(extra)
    return env


def operator_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """For the operator's own command (``git harn run -- <cmd>``): their whole
    environment, secrets included, without git's location and config
    variables and git-harn's private switches."""
    env = {k: v for k, v in os.environ.items() if not never_passed(k) and k not in _HARN_PRIVATE}
    if extra:
        env.update(extra)
    return env


def scrub_process() -> None:
    """Drop the location variables from this process (a hook starts with them)."""
    for key in LOCATION_VARS:
        os.environ.pop(key, None)
