"""``git harn doctor --fix``: apply only what loses nothing and what another
git-harn command would do anyway, each finding's own command, judged again
at the moment it is applied (a lock taken meanwhile is left alone).

Each fix is one step that is complete or not done at all, and doctor judges
from the disk, never from a note of its own, so a ``--fix`` killed between
two steps leaves a state the next ``doctor`` reports as it is [P6].
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from git_harn.doctor.check import diagnose
from git_harn.doctor.findings import Applied, DoctorReport, Finding
from git_harn.doctor.locks import GIT_LOCK_AGE, dead_run_git_locks
from git_harn.errors import HarnError
from git_harn.failpoints import failpoint
from git_harn.git import Repo
from git_harn.git.worktrees import checked_out_branches
from git_harn.store import lease
from git_harn.store.locks import break_dead, git_processes_in, owner_alive, read_owner, sync_lock_path
from git_harn.store.notes import prune_notes
from git_harn.store.procs import dead_ran_out
from git_harn.store.record import TERMINAL
from git_harn.sync.push import STAGING_ROOT
from git_harn.workflow.after.settle import settle
from git_harn.workspace.cleanup import cleanup
from git_harn.workspace.reconcile import prune_registration

Approve = Callable[[list[Finding]], bool]


def doctor_run(repo: Repo, older_than: str, fix: bool, approve: bool | Approve,
               remote: str | None = None) -> DoctorReport:
    """The report; with ``fix`` and approval, the safe fixes applied and the
    state judged again (what is left is what was left on purpose)."""
    report = diagnose(repo, older_than, remote)
    if not fix:
        return report
    wanted = [f for f in report.findings if f.fixable]
    if not wanted or not (approve if isinstance(approve, bool) else approve(wanted)):
        report.fixed = []
        return report
    applied = []
    for finding in wanted:
        applied.append(apply(repo, finding))
        failpoint("doctor-fix-applied")
    after = diagnose(repo, older_than, remote)
    after.fixed = applied
    return after


def apply(repo: Repo, finding: Finding) -> Applied:
    """Apply one finding's fix; a refusal is reported, never raised."""
    step = FIXES[finding.code]
    try:
        ok, detail = step(repo, finding.subject)
    except HarnError as exc:
        ok, detail = False, exc.message
    return Applied(finding.code, finding.what, finding.fix or "", ok, detail)


def _cleanup(repo: Repo, subject: dict[str, object]) -> tuple[bool, str]:
    done = cleanup(repo, str(subject["runId"]))
    return done.outcome in TERMINAL, f"{done.outcome}: {done.reason}"


def _prune(repo: Repo, subject: dict[str, object]) -> tuple[bool, str]:
    gone = prune_registration(repo, Path(str(subject["path"])))
    return gone, "registration removed" if gone else "left: its folder is back, or it is locked now"


def _lock(repo: Repo, subject: dict[str, object]) -> tuple[bool, str]:
    path = Path(str(subject["path"]))
    owner = read_owner(path)
    if owner is None:
        return True, "already gone"
    if owner and not dead_ran_out(owner):
        return False, "left: a live process holds it now"
    gone = break_dead(path)
    if not gone:
        return False, "left: a live process holds it now"
    # git's locks the dead run left in its workspace, judged again now: only those still provably left.
    raw = subject.get("gitLocks")
    listed = {str(p) for p in raw} if isinstance(raw, list) else set()
    left = [p for p in dead_run_git_locks(repo, path) if str(p) in listed]
    for lock in left:
        with suppress(FileNotFoundError):
            lock.unlink()
    return True, "removed" + (f", with {len(left)} git lock file(s) of its workspace" if left else "")


def _git_lock(repo: Repo, subject: dict[str, object]) -> tuple[bool, str]:
    path = Path(str(subject["path"]))
    try:
        age = time.time() - path.lstat().st_mtime
    except FileNotFoundError:
        return True, "already gone"
    folders = [repo.common_dir, path.parent, *([repo.workdir] if repo.workdir else [])]
    if age < GIT_LOCK_AGE or any(git_processes_in(f) for f in folders if f.exists()):
        return False, "left: a git works in the repository now"
    with suppress(FileNotFoundError):
        os.unlink(path)
    return True, "removed"


def _settle(repo: Repo, subject: dict[str, object]) -> tuple[bool, str]:
    done = settle(repo, str(subject["workflowId"]))
    return done.outcome == "settled", done.summary


def _lease(repo: Repo, subject: dict[str, object]) -> tuple[bool, str]:
    if subject.get("workflowId") and repo.ref_oid(f"refs/harnery/workflows/{subject['workflowId']}"):
        return _settle(repo, subject)
    path = Path(str(subject["path"]))
    for left in lease.leases(repo):
        if left.path == path and left.dead():
            left.drop()
    return not path.exists(), "removed" if not path.exists() else "left: a live runner holds it now"


def _staging(repo: Repo, subject: dict[str, object]) -> tuple[bool, str]:
    name = str(subject["ref"])
    owner = read_owner(sync_lock_path(repo))
    if not name.startswith(STAGING_ROOT) or (owner and owner_alive(owner)):
        return False, "left: a sync runs now"
    return _delete_ref(repo, name, subject)


def _landed_branch(repo: Repo, subject: dict[str, object]) -> tuple[bool, str]:
    name = str(subject["ref"])
    if name in {ref for _, ref in checked_out_branches(repo)}:
        return False, "left: a worktree has it checked out now"
    return _delete_ref(repo, name, subject)


def _delete_ref(repo: Repo, name: str, subject: dict[str, object]) -> tuple[bool, str]:
    """Delete ``name`` only while it is where doctor saw it (compare-and-swap)."""
    tip = repo.ref_oid(name)
    if tip is None:
        return True, "already gone"
    if str(tip) != subject.get("oid"):
        return False, "left: it moved since doctor looked"
    repo.delete_ref(name, tip)
    return True, "deleted"


def _notes(repo: Repo, subject: dict[str, object]) -> tuple[bool, str]:
    pruned = prune_notes(repo)  # judged again: only what is gone now
    return True, f"{pruned} note(s) pruned; the notes ref's history keeps them"


FIXES: dict[str, Callable[[Repo, dict[str, object]], tuple[bool, str]]] = {
    "workspace-gone": _cleanup,
    "workspace-run-killed": _cleanup,
    "registration-orphan": _prune,
    "lock-dead": _lock,
    "git-lock-left": _git_lock,
    "workflow-runner-gone": _settle,
    "runner-lease-left": _lease,
    "staging-ref-left": _staging,
    "task-branch-landed": _landed_branch,
    "notes-object-gone": _notes,
}
