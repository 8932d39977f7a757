"""Keep records true to the disk: a vanished workspace is already_gone [W7].

Every command that looks at a workspace calls in here, so nothing depends on
the hooks being installed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from git_harn import store
from git_harn.errors import Busy
from git_harn.git import Repo
from git_harn.identity import host_name
from git_harn.locks import hold_run
from git_harn.record import ALREADY_GONE, RELEASED, RunRecord
from git_harn.workspace import GONE, HERE, REMOTE


def presence(repo: Repo, record: RunRecord) -> str:
    """HERE, GONE (its folder vanished on this host) or REMOTE (another host's)."""
    if record.host != host_name(repo):
        return REMOTE
    return HERE if os.path.isdir(record.path) else GONE


def prune_registration(repo: Repo, path: Path) -> bool:
    """Forget the worktree registered at ``path`` if its folder is missing,
    as ``git worktree prune`` would for that one entry. A locked entry stays."""
    admin_root = repo.common_dir / "worktrees"
    if os.path.lexists(path) or not admin_root.is_dir():
        return False
    wanted = os.path.normpath(os.path.join(path, ".git"))
    for admin in admin_root.iterdir():
        try:
            gitdir = (admin / "gitdir").read_text().strip()
        except OSError:
            continue
        if os.path.normpath(gitdir) == wanted:
            if (admin / "locked").exists():
                return False
            shutil.rmtree(admin)
            return True
    return False


def delete_branch_if_safe(repo: Repo, ref: str) -> tuple[bool, str]:
    """Delete ``ref`` only if its tip is reachable from another ref [P1].

    Returns (deleted, sentence for the operator)."""
    tip = repo.ref_oid(ref)
    short = ref.removeprefix("refs/heads/")
    if tip is None:
        return True, f"branch {short} is already gone"
    unique = repo.unique_commits(tip, {ref})
    if unique:
        return False, (
            f"branch {short} kept: {len(unique)} commit(s) reachable from no other ref "
            f"(tip {str(tip)[:12]})"
        )
    repo.delete_ref(ref, tip)
    return True, f"branch {short} deleted (its tip {str(tip)[:12]} is reachable elsewhere)"


def settle_vanished(repo: Repo, stored: store.Stored) -> RunRecord:
    """Finish a workspace whose folder is gone: prune, delete the branch when
    safe, and record already_gone (or released, when a release was under way).
    The caller holds the run lock."""
    record = stored.record
    prune_registration(repo, Path(record.path))
    _, branch_note = delete_branch_if_safe(repo, record.branch_ref)
    finishing = record.releasing is not None
    record.state = RELEASED if finishing else ALREADY_GONE
    record.lastOutcome = record.state
    record.releasing = None
    record.reason = (
        "release finished after an interruption; " if finishing else "worktree folder is missing; "
    ) + branch_note
    store.write(repo, record, record.state, record.reason, stored.tip)
    return record


def reconcile_quietly(repo: Repo, stored: store.Stored) -> store.Stored:
    """For read-only commands: settle a vanished workspace if the run is free.
    A busy run is left alone; whoever holds it will see the same thing."""
    if stored.record.terminal or presence(repo, stored.record) != GONE:
        return stored
    try:
        with hold_run(repo, stored.record.runId, "reconcile"):
            fresh = store.read(repo, stored.record.runId)
            if fresh is None or fresh.record.terminal or presence(repo, fresh.record) != GONE:
                return fresh or stored
            settle_vanished(repo, fresh)
            return store.read(repo, stored.record.runId) or stored
    except Busy:
        return stored


__all__ = ["GONE", "HERE", "REMOTE", "presence", "settle_vanished", "reconcile_quietly",
           "delete_branch_if_safe", "prune_registration"]
