"""Where git runs hooks from, and that folder in git-harn's own workspaces.

git reads a relative ``core.hooksPath`` from the top of each worktree (husky
9 sets ``.husky/_``, a generated, git-ignored folder). A new linked worktree
has no such folder, so it would run no hook at all; git-harn makes the
workspaces, so it copies the main worktree's folder into each one it starts.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pygit2

from git_harn.git import worktrees
from git_harn.git.repo import Repo


@dataclass(frozen=True)
class HooksPath:
    value: str | None  # core.hooksPath as configured, or None
    scope: str | None  # where it is set: local, worktree, global, system, command

    @property
    def relative(self) -> bool:
        return bool(self.value) and not os.path.isabs(os.path.expanduser(self.value or ""))

    @property
    def shared(self) -> bool:
        """Set outside this repository: every repository using it runs these hooks."""
        return self.scope in ("global", "system")


def hooks_path_setting(repo: Repo) -> HooksPath:
    """core.hooksPath and the scope git takes it from (git's own precedence)."""
    out = repo._git("config", "--show-scope", "--get", "core.hooksPath", check=False).rstrip("\n")
    if not out:
        return HooksPath(None, None)
    scope, _, value = out.partition("\t")
    return HooksPath(value, scope)


def provide_hooks_folder(repo: Repo, worktree: Path) -> str | None:
    """Copy a relative core.hooksPath folder from the main worktree into the
    new ``worktree`` when it has none. Returns a warning when the folder
    cannot be given (it would show as untracked files there), else None."""
    # Only the value counts here, and it comes from the config already read
    # (no git process for each workspace); where it is set does not matter.
    setting = HooksPath(repo.config_path("core.hooksPath"), None)
    if not setting.relative or setting.value is None:
        return None
    main, _ = worktrees.main_worktree(repo)
    if main is None:
        return None
    source = main / setting.value
    target = worktree / setting.value
    if not source.is_dir() or os.path.lexists(target) or os.path.realpath(main) == os.path.realpath(worktree):
        return None
    shutil.copytree(source, target, symlinks=True)
    try:
        pg = pygit2.Repository(str(worktree))
        exposed = [p for p in target.rglob("*") if (p.is_file() or p.is_symlink())
                   and not pg.path_is_ignored(p.relative_to(worktree).as_posix())]
    except (pygit2.GitError, ValueError):
        exposed = []
    if exposed:
        shutil.rmtree(target)
        return (f"core.hooksPath {setting.value} is relative and not git-ignored: the workspace at "
                f"{worktree} gets no hooks (ignore that folder, or make core.hooksPath absolute)")
    return None
