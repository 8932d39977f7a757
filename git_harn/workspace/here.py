"""Whether a command runs inside one of git-harn's own workspaces.

Commands that act on the main checkout (``workflow run``, ``workflow init``)
refuse there; ``start`` says that its default base is the workspace's
branch. Finding out reads at most three records, never the list of every
run: the run id is the worktree's folder name (git-harn's default path, and
git's admin folder for it) or the suffix of a ``harnery/ws/<run-id>``
branch, and only a live record whose path is this worktree counts.
"""

from __future__ import annotations

import os
from pathlib import Path

from git_harn.errors import BadInput, HarnError
from git_harn.git import Repo
from git_harn.git.worktrees import main_worktree
from git_harn.store import runs as store
from git_harn.store.ids import validate_run_id
from git_harn.store.record import RunRecord
from git_harn.workspace.paths import WS_BRANCH_PREFIX


def workspace_here(repo: Repo) -> RunRecord | None:
    """The live record of the git-harn workspace the command runs in, if any."""
    if repo.workdir is None or repo.git_dir == repo.common_dir:  # bare, or the main worktree
        return None
    top = os.path.realpath(repo.workdir)
    for run_id in _candidates(repo, top):
        try:
            stored = store.read(repo, run_id)
        except HarnError:
            continue  # an unreadable record names no workspace here
        if stored is not None and not stored.record.terminal and os.path.realpath(stored.record.path) == top:
            return stored.record
    return None


def _candidates(repo: Repo, top: str) -> list[str]:
    names = [os.path.basename(top), repo.git_dir.name]
    try:
        head = repo.head_branch() or ""
    except BadInput:  # unborn HEAD
        head = ""
    if head.startswith("refs/heads/" + WS_BRANCH_PREFIX):
        names.append(head.removeprefix("refs/heads/" + WS_BRANCH_PREFIX))
    found: list[str] = []
    for name in names:
        try:
            validate_run_id(name)
        except BadInput:
            continue
        if name not in found:
            found.append(name)
    return found


def refuse_in_workspace(repo: Repo, command: str) -> None:
    """BadInput when ``command`` (which acts on the main checkout) runs in a workspace."""
    record = workspace_here(repo)
    if record is None:
        return
    main, _ = main_worktree(repo)
    where = f"in the main worktree, {main}" if main is not None else "in the main checkout"
    raise BadInput(f"{Path(record.path)} is the git-harn workspace of run {record.runId}: run "
                   f"'git harn {command}' {where} (nothing was changed)")
