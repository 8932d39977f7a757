"""The setup: git-harn's hooks installed and current (and which hook
manager's hooks they chain), git's version against the minimum [H1], and
the ``harn.*`` settings that name a path on this machine that is not there.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from git_harn.doctor.findings import SETUP, Finding, command
from git_harn.git import Repo
from git_harn.git.config import origin_file
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
    return [*found, *_missing_paths(repo)], notes, version


def _missing_paths(repo: Repo) -> list[Finding]:
    """``harn.worktreeRoot`` whose folder and its parent are both missing (a
    root that has held no workspace yet is missing alone; a missing parent
    is a typo or an unplugged disk, and the next workspace would make the
    whole path, on whatever disk is there), and a ``harn.assessor`` whose
    program is an absolute path that is not there (every assessment fails).
    Report-only: unsetting either changes where workspaces go or who
    assesses, which is the operator's call."""
    found = []
    root = repo.config("harn.worktreeRoot")
    if root and Path(os.path.expanduser(root)).is_absolute():
        path = Path(os.path.expanduser(root))
        if not os.path.lexists(path) and not os.path.lexists(path.parent):
            found.append(_setting(repo, "harn.worktreeRoot", path,
                                  "names a folder that is not there, nor its parent (a typo, or a disk not "
                                  "mounted): the next workspace would create the whole path; mount the disk, "
                                  "or unset it so workspaces go to the default folder"))
    program = _assessor_program(repo.config("harn.assessor"))
    if program is not None and not os.path.lexists(program):
        found.append(_setting(repo, "harn.assessor", program,
                              "names a program that is not there: every assessment would fail; install it, "
                              "or unset it to use the built-in assessor"))
    return found


def _assessor_program(value: str | None) -> Path | None:
    """The program of a ``harn.assessor`` command when it is an absolute path."""
    try:
        words = shlex.split(value or "")
    except ValueError:
        return None  # the assessor itself says what is wrong with it
    program = Path(os.path.expanduser(words[0])) if words else None
    return program if program is not None and program.is_absolute() else None


def _setting(repo: Repo, key: str, path: Path, why: str) -> Finding:
    where = origin_file(repo.cli_cwd, key)
    fix = command("git config --file", str(where), "--unset-all", key) if where is not None else None
    return Finding(SETUP, "setting-path-missing", f"{key} = {path}", f"git config {key} {why}", fix,
                   subject={"key": key, "path": str(path), "file": str(where) if where else None})
