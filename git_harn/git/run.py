"""Run the git CLI as an argv list (never through a shell) [P5]."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from git_harn.errors import GitFailure

# Set while git-harn itself changes refs, so its own hooks stand aside.
INTERNAL_ENV = "HARN_INTERNAL"


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env[INTERNAL_ENV] = "1"
    # Messages are parsed in a few places (push rejections); keep them English.
    env["LC_ALL"] = "C"
    env["LANGUAGE"] = "C"
    if extra:
        env.update(extra)
    return env


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
        raise GitFailure(f"git {args[0]} failed: {first_line(done.stderr or done.stdout)}")
    return done


def first_line(raw: bytes) -> str:
    for line in raw.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line:
            return line.removeprefix("fatal: ").removeprefix("error: ")
    return "(no message)"
