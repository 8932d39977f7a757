"""Run the git CLI as an argv list (never through a shell) [P5]."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from git_harn.errors import GitFailure
from git_harn.git.env import git_env


def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    check: bool = True,
    input_bytes: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd``; raise GitFailure with git's own first line."""
    argv = ["git", *args]
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            input=input_bytes,
            capture_output=True,
            env=git_env(env),
            check=False,
        )
    except OSError as exc:
        raise GitFailure(f"cannot run git: {exc}") from exc
    if check and done.returncode != 0:
        raise GitFailure(f"git {subcommand(args)} failed: {error_line(done.stderr or done.stdout)}")
    return done


def subcommand(args: Sequence[str]) -> str:
    """The git subcommand in ``args``, past global options such as ``-c k=v``."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in ("-c", "-C") and rest:
            rest.pop(0)
    return rest[0] if rest else "(no command)"


def error_line(raw: bytes) -> str:
    """The line of git's output that says what went wrong: its last
    ``fatal:``/``error:`` line, else its first line (not a progress line)."""
    lines = [line.strip() for line in raw.decode("utf-8", "replace").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("fatal: ", "error: "))]
    if errors:
        return errors[-1].removeprefix("fatal: ").removeprefix("error: ")
    return lines[0] if lines else "(no message)"
