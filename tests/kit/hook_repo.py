"""Helpers for the hook tests: run plain git as a user would, and look at records."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.kit.harn import git, harn, record

HOOKS = ("reference-transaction", "post-checkout", "pre-auto-gc")
SHIPPED = Path(__file__).resolve().parents[2] / "hooks"


def git_run(repo: Path, *args: str, env: dict[str, str] | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """A plain git command whose failure the test wants to see, not raise."""
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, input=stdin,
                          env=dict(os.environ, **(env or {})), check=False)


def remove_folder(repo: Path, run_id: str) -> None:
    shutil.rmtree(record(repo, run_id)["path"])


def leave_a_vanished_worktree(repo: Path, path: Path) -> None:
    """A registered worktree whose folder is gone: what gives post-checkout
    on `git worktree add` something to settle, so git-harn is started."""
    git(repo, "worktree", "add", "-q", "--detach", str(path))
    shutil.rmtree(path)


def state(repo: Path, run_id: str) -> str:
    return str(record(repo, run_id)["state"])


def install_hooks(repo: Path) -> None:
    result = harn(repo, "hooks", "install")
    assert result.code == 0, result.err


def commit_in(path: Path, name: str, content: str) -> str:
    (path / name).write_text(content)
    git(path, "add", name)
    git(path, "commit", "-q", "-m", f"add {name}")
    return git(path, "rev-parse", "HEAD")
