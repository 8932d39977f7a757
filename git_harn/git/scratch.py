"""Throwaway repositories (the demo's), made with git itself."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from git_harn.errors import GitFailure
from git_harn.git import remote
from git_harn.git.repo import open_repo
from git_harn.git.run import run_git


def init_repository(path: Path, files: Mapping[str, str], config: Mapping[str, str],
                    message: str = "initial commit", bare_remote: Path | None = None) -> Path:
    """A repository at ``path`` on branch main with one commit of ``files``
    (and, given ``bare_remote``, that bare repository as ``origin``, pushed)."""
    path.mkdir(parents=True, exist_ok=True)
    run_git(["init", "-q", "-b", "main"], path)
    for key, value in config.items():
        run_git(["config", key, value], path)
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    run_git(["add", "-A"], path)
    run_git(["commit", "-q", "-m", message], path)
    if bare_remote is not None:
        run_git(["init", "-q", "--bare", "-b", "main", str(bare_remote)], path)
        run_git(["remote", "add", remote.DEFAULT_REMOTE, str(bare_remote)], path)
        _publish(path)
    return path


def _publish(path: Path) -> None:
    """Push main to ``origin`` and track it, through the one remote door."""
    repo = open_repo(path)
    head = repo.ref_oid("refs/heads/main")
    name = remote.DEFAULT_REMOTE
    pushed = remote.push(repo, name, [remote.Update("refs/heads/main", str(head))], lease=False)
    fetched = remote.fetch(repo, name, [f"+refs/heads/*:refs/remotes/{name}/*"])
    if not (pushed.ok and fetched.ok):
        raise GitFailure(f"could not publish {path} to {name}: {pushed.words or fetched.words}")


def log_text(path: Path, rev: str) -> str:
    """``git log <rev>`` as a person reads it (git's own error when it fails)."""
    shown = run_git(["log", rev], path, check=False)
    return (shown.stdout or shown.stderr).decode("utf-8", "replace").rstrip("\n")


def oneline_log(path: Path, rev: str) -> str:
    """``git log --oneline <rev>``: one line per commit, newest first."""
    shown = run_git(["log", "--oneline", "--no-decorate", rev], path, check=False)
    return (shown.stdout or shown.stderr).decode("utf-8", "replace").rstrip("\n")


def file_text(path: Path, rev: str, name: str) -> str:
    """``git show <rev>:<name>`` (git's own error when it fails)."""
    shown = run_git(["show", f"{rev}:{name}"], path, check=False)
    return (shown.stdout or shown.stderr).decode("utf-8", "replace").rstrip("\n")
