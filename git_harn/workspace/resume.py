"""Resume: put a preserved workspace back to work, for the workflow's
recovery of a surviving task branch [W8] [P1] [P2].

A workspace that cleanup preserved only because its branch holds commits no
other ref has (``preserved_unmerged``, clean, its branch still at the frozen
OID) is returned to ``active``: the frozen intent was cleanup's decision
about exactly that tip, and work resuming on it ends that decision. The next
cleanup freezes a new intent. Anything else (dirty, moved since it was
frozen, another host's or clone's, folder absent) is refused and changes
nothing; such a workspace stays for ``reclaim``.
"""

from __future__ import annotations

from pathlib import Path

from git_harn.errors import Refused
from git_harn.git import Repo
from git_harn.git.workdir import dirty_paths
from git_harn.store import runs as store
from git_harn.store.live import live_records
from git_harn.store.record import ACTIVE, PRESERVED_UNMERGED, RunRecord
from git_harn.workspace.cleanup import read_known
from git_harn.workspace.paths import HERE
from git_harn.workspace.reconcile import presence


def workspaces_on(repo: Repo, branch: str) -> list[RunRecord]:
    """The records of this clone's workspaces on ``branch`` that are not terminal."""
    found = []
    for stored in live_records(repo):
        if isinstance(stored, store.Stored) and stored.record.branch == branch:
            found.append(stored.record)
    return found


def resumable(repo: Repo, record: RunRecord) -> str | None:
    """Why ``record``'s workspace cannot be resumed, or None when it can."""
    where = presence(repo, record)
    if where != HERE:
        return f"workspace of run {record.runId} is not here ({where})"
    if record.state not in (ACTIVE, PRESERVED_UNMERGED):
        return f"workspace of run {record.runId} is {record.state}"
    tip = repo.ref_oid(record.branch_ref)
    frozen = record.frozenIntent["oid"] if record.frozenIntent else None
    if frozen is not None and (tip is None or str(tip) != frozen):
        return (f"{record.branch} moved since cleanup froze it at {frozen[:12]}; "
                f"'git harn reclaim {record.runId}' settles that first")
    dirty = dirty_paths(Path(record.path))
    if dirty:
        return f"workspace of run {record.runId} has {len(dirty)} uncommitted path(s)"
    return None


def resume_locked(repo: Repo, run_id: str, why: str) -> RunRecord:
    """Return ``run_id``'s workspace to ``active``; the caller holds the run lock."""
    stored = read_known(repo, run_id)
    record = stored.record
    problem = "workspace is terminal" if record.terminal else resumable(repo, record)
    if problem is not None:
        raise Refused(f"cannot resume run {run_id}: {problem}")
    if record.state == ACTIVE and record.frozenIntent is None:
        return record
    record.state = ACTIVE
    record.frozenIntent = None
    record.reason = why
    store.write(repo, record, "resume", why, stored.tip)
    return record
