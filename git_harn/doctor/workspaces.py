"""Workspaces: every live record against its worktree registration and its
folder, and every registration and folder under the worktree root against
the records [W4] [W7].

Nothing here changes anything: where status would settle a vanished
workspace as already_gone, doctor says so and names the command. Only live
records are looked at (``live``: the caller reads them once); a folder or a
registration with no live record is judged by its path alone.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from git_harn.doctor.disk import age_of
from git_harn.doctor.findings import WORKSPACE, Finding, command
from git_harn.files import disk_use
from git_harn.git import Repo
from git_harn.git.workdir import dirty_paths_many
from git_harn.git.worktrees import admin_dir, is_locked, registered_worktrees
from git_harn.integrate.worktree import integration_worktree
from git_harn.store.locks import read_owner, run_lock_path
from git_harn.store.procs import dead_ran_out
from git_harn.store.record import ACTIVE, PRESERVED, RunRecord
from git_harn.workspace.paths import FOREIGN, GONE, HERE, MISSING, REMOTE, UNAVAILABLE, repo_key, worktree_root
from git_harn.workspace.reconcile import owning_clone, presence, whereabouts
from git_harn.workspace.status import kept_advice, kept_branches, next_steps


@dataclass
class Seen:
    """What the workspace checks found, beside the findings: the others'."""

    findings: list[Finding]
    notes: list[str]


def check_workspaces(repo: Repo, live: list[RunRecord], skip_runs: set[str]) -> Seen:
    """Findings for the live records, then for registrations and folders no
    live record explains. ``skip_runs``: workspaces of a dead workflow run,
    which settling that run takes care of (reported there)."""
    seen = Seen([], [])
    others: dict[str, int] = {}
    killed: list[RunRecord] = []
    for record in live:
        where = presence(repo, record)
        if where in (REMOTE, FOREIGN):
            key = f"host {record.host}: act on them there" if where == REMOTE else (
                "another clone on this host: reclaim and cleanup act on them through it from here"
                if owning_clone(repo, record) is not None else "another clone of this repository: act on them there")
            others[key] = others.get(key, 0) + 1
        elif record.runId not in skip_runs:
            found = _of_record(repo, record, where)
            if found is not None:
                seen.findings.append(found)
            elif where == HERE and _killed_run(repo, record):
                killed.append(record)
    seen.findings += _killed_runs(killed)
    seen.notes += [f"{n} live workspace(s) of {who}" for who, n in sorted(others.items())]
    seen.findings += _unrecorded(repo, {os.path.realpath(r.path) for r in live})
    seen.findings += _kept(repo, frozenset(r.runId for r in live))
    return seen


def _kept(repo: Repo, live: frozenset[str]) -> list[Finding]:
    """An ended workspace's branch holding the only copy of its commits: no
    live record names it any more, so nothing else would [P1]."""
    return [Finding(WORKSPACE, "workspace-branch-kept", f"run {kept.record.runId}",
                    f"{kept.record.state} workspace whose branch {kept.record.branch} is kept: {kept.commits} "
                    f"commit(s) on it are reachable from no other ref (its folder {kept.record.path} is gone); "
                    f"reclaim puts them on harnery/salvage/{kept.record.runId} and lets the branch go",
                    kept_advice(kept.record), ageSeconds=age_of(kept.record.updatedAt),
                    subject={"runId": kept.record.runId, "ref": kept.record.branch_ref, "oid": str(kept.tip)})
            for kept in kept_branches(repo, live)]


def _cleanup(run_id: str) -> str:
    return f"git harn cleanup {run_id} --yes"


def _of_record(repo: Repo, record: RunRecord, where: str) -> Finding | None:
    subject = {"runId": record.runId, "path": record.path}
    age = age_of(record.updatedAt)
    if where == GONE:
        return Finding(WORKSPACE, "workspace-gone", f"run {record.runId}",
                       f"{record.state} workspace whose folder {record.path} vanished; cleanup settles it as "
                       "already_gone (a branch holding unmerged commits is kept)", _cleanup(record.runId),
                       fixable=True, ageSeconds=age, subject=subject)
    if where in (MISSING, UNAVAILABLE):
        code = "workspace-missing" if where == MISSING else "workspace-unavailable"
        fix = (_cleanup(record.runId) if where == MISSING
               else command("git worktree unlock", record.path))
        return Finding(WORKSPACE, code, f"run {record.runId}", whereabouts(repo, record, where) or where, fix,
                       ageSeconds=age, subject=subject)
    if record.state in PRESERVED:
        steps = next_steps(record, where)
        return Finding(WORKSPACE, "workspace-preserved", f"run {record.runId}",
                       f"{record.state}: {record.reason or 'work that exists nowhere else'}; reclaim salvages it "
                       f"to harnery/salvage/{record.runId} and releases the folder", steps[0] if steps else None,
                       diskBytes=disk_use(record.path), ageSeconds=age, subject=subject)
    return None


def _killed_run(repo: Repo, record: RunRecord) -> bool:
    """A ``git harn run`` that never recorded its command's exit: its process
    died (killed), and with it every command it named in its run lock."""
    if record.state != ACTIVE or record.command is None or record.exitCode is not None:
        return False
    return dead_ran_out(read_owner(run_lock_path(repo, record.runId)))


def _killed_runs(records: list[RunRecord]) -> list[Finding]:
    """A killed run's workspace: released by cleanup when it holds nothing
    (fixable), preserved by the same command when it does."""
    dirty = dirty_paths_many([Path(r.path) for r in records])
    found = []
    for record in records:
        changes = dirty.get(Path(record.path))
        clean = isinstance(changes, list) and not changes
        state = "clean" if clean else "with uncommitted changes"
        found.append(Finding(
            WORKSPACE, "workspace-run-killed", f"run {record.runId}",
            f"'git harn run' died before its command {shlex.join(record.command or [])!r} ended; the workspace "
            f"is {state}: cleanup " + ("releases it" if clean else "preserves it (nothing is lost)"),
            _cleanup(record.runId), fixable=clean, diskBytes=disk_use(record.path),
            ageSeconds=age_of(record.updatedAt), subject={"runId": record.runId, "path": record.path}))
    return found


def _unrecorded(repo: Repo, live_paths: set[str]) -> list[Finding]:
    """Registrations and folders under this repository's worktree root that
    no live record explains (the integration worktree is a leftover's)."""
    home = worktree_root(repo) / repo_key(repo)
    integration = os.path.realpath(integration_worktree(repo))  # a leftover's, not a workspace's
    registered = {os.path.realpath(p): p for p in registered_worktrees(repo)}
    found = []
    for real, path in sorted(registered.items()):
        if real in live_paths or not _under(real, home) or real == integration:
            continue
        found.append(_registration(repo, path))
    try:
        folders = sorted(home.iterdir())
    except OSError:
        folders = []
    for folder in folders:
        real = os.path.realpath(folder)
        if real == integration or real in live_paths or real in registered or not folder.is_dir():
            continue
        found.append(Finding(WORKSPACE, "folder-unregistered", str(folder),
                             "a folder under the worktree root that is no worktree of this repository and "
                             "no live workspace's; look inside before removing it (doctor never does)",
                             command("rm -r --", str(folder)), diskBytes=disk_use(folder),
                             subject={"path": str(folder)}))
    return found


def _under(path: str, home: Path) -> bool:
    return Path(path).is_relative_to(os.path.realpath(home))


def _registration(repo: Repo, path: Path) -> Finding:
    admin = admin_dir(repo, path)
    subject = {"path": str(path)}
    if os.path.isdir(path):
        return Finding(WORKSPACE, "worktree-unrecorded", str(path),
                       "a worktree under the worktree root that no live run record names; 'git worktree remove' "
                       "refuses while it holds changes", command("git worktree remove", str(path)),
                       diskBytes=disk_use(path), subject=subject)
    if is_locked(admin):
        return Finding(WORKSPACE, "registration-locked", str(path),
                       "a locked worktree registration whose folder is absent and that no live record names: "
                       "away, not gone; unlock it if it is gone for good",
                       command("git worktree unlock", str(path)), subject=subject)
    return Finding(WORKSPACE, "registration-orphan", str(path),
                   "a worktree registration whose folder is gone, not locked, and that no live record names; "
                   "removing the registration loses nothing", command("git worktree remove", str(path)),
                   fixable=True, subject=subject)
