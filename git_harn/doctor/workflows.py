"""Workflow runs that did not end: a record still running whose runner is
provably dead here (``interrupted (runner gone)``, settled by ``git harn
workflow settle``), another host's gone silent (``stale``), and a dead
runner's lease whose record ended or was never written [L2] [L3].

Whether a runner lives is asked of ``workflow.record.Liveness``, the same
judgement ``workflow list`` and ``show`` make; the agents and gates a dead
runner left running are the process groups its lease names.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from git_harn.assess.gates import abandoned_checkouts
from git_harn.doctor.disk import age_of, shown_size
from git_harn.doctor.findings import WORKFLOW, Finding, command
from git_harn.doctor.locks import remove_command
from git_harn.files import disk_use
from git_harn.git import Oid, Repo
from git_harn.git.checkout import leftovers
from git_harn.git.worktrees import checked_out_branches, registered_here
from git_harn.integrate.land import INTEGRATED_PREFIX
from git_harn.integrate.worktree import integration_worktree
from git_harn.store import lease
from git_harn.store.locks import run_busy, settle_command
from git_harn.store.procs import Group
from git_harn.store.record import RunRecord
from git_harn.tasks.roadmap import parse_task_branch, work_key
from git_harn.workflow.ledger import record
from git_harn.workspace.salvage import SALVAGE_LOG


@dataclass
class Runs:
    findings: list[Finding] = field(default_factory=list)
    dead_runs: set[str] = field(default_factory=set)  # run ids of the workspaces a dead run left
    dead_workflows: set[str] = field(default_factory=set)  # workflow ids whose runner is gone here


def check_workflows(repo: Repo, live: list[RunRecord] | None = None) -> Runs:
    """``live``: the live run records (the caller reads them once), for the
    workspaces a dead run left."""
    found = Runs()
    workspaces = {r.runId: r for r in live or []}
    alive = record.Liveness(repo, record.stale_after(repo, None))
    leases = {left.workflow_id: left for left in lease.leases(repo)}
    running = set()
    for item in record.list_all(repo):
        if not isinstance(item, record.Stored):
            continue
        run = record.RecordedRun.of(item)
        if not run.in_progress:
            continue
        running.add(run.workflow_id)
        state = alive.of(item.body)
        if state == record.GONE:
            found.findings.append(_gone(repo, run, leases.get(run.workflow_id), workspaces))
            found.dead_runs |= _run_ids(run)
            found.dead_workflows.add(run.workflow_id)
        elif state == record.STALE:
            runner = run.runner or _NO_RUNNER
            found.findings.append(Finding(
                WORKFLOW, "workflow-stale", f"workflow {run.workflow_id}",
                f"running on host {runner.host or '?'}, silent since {runner.heartbeat_at or 'ever'}; "
                "only that host can tell whether it died: settle it there", None,
                ageSeconds=age_of(runner.heartbeat_at), subject={"workflowId": run.workflow_id}))
    for left in lease.leases(repo):
        if left.workflow_id not in running and left.dead():
            found.findings.append(_lease_left(repo, left))
    return found


# a record written before records named their runner: nothing known of it
_NO_RUNNER = record.Runner(None, None, None, None, None)


def _run_ids(run: record.RecordedRun) -> set[str]:
    return {task.run_id for task in run.tasks}


def _gone(repo: Repo, run: record.RecordedRun, left: lease.Left | None, workspaces: dict[str, RunRecord]) -> Finding:
    workflow_id = run.workflow_id
    runner = run.runner or _NO_RUNNER
    groups = [g for g in left.groups() if g.alive()] if left is not None else []
    alive = [g.pgid for g in groups]
    tasks = _run_ids(run)
    things = _left_behind(repo, run, tasks, groups, workspaces)
    why = (f"still 'running', but its runner (pid {runner.pid or '?'} on {runner.host or '?'}) is dead; "
           f"settling ends what it left running, clears its lock files, settles its {len(tasks)} workspace(s) "
           "(landed ones released, the rest left as survivors), releases its claims, removes the checkouts it "
           "kept and closes the record as interrupted")
    if alive:
        why += f"; its agents' process group(s) {', '.join(map(str, alive))} still run"
    if things:
        why += "; it left: " + "; ".join(_shown(thing) for thing in things)
    disk = sum(thing.get("diskBytes") or 0 for thing in things)
    return Finding(WORKFLOW, "workflow-runner-gone", f"workflow {workflow_id}", why, settle_command(workflow_id),
                   fixable=True, diskBytes=disk or None, ageSeconds=age_of(runner.heartbeat_at),
                   subject={"workflowId": workflow_id, "groupsAlive": alive, "left": things})


# What a dead run left, by kind (the finding's ``subject.left``).
LEFT_WORKSPACE, LEFT_GATES, LEFT_INTEGRATION = "workspace", "gates-checkout", "integration-worktree"
LEFT_CLAIM, LEFT_AGENTS = "claim", "agents"


def _left_behind(repo: Repo, run: record.RecordedRun, run_ids: set[str], groups: list[Group],
                 workspaces: dict[str, RunRecord]) -> list[dict[str, Any]]:
    """What settling the dead run clears, each with its disk use: its tasks'
    workspaces, the gates' checkouts its runner kept in the temp folder, the
    integration worktree a killed integration left mid-operation, the claims
    it held when it died, and the agents still alive (with their pids)."""
    things: list[dict[str, Any]] = []
    for run_id in sorted(run_ids):
        record = workspaces.get(run_id)
        if record is not None and os.path.isdir(record.path):
            things.append({"kind": LEFT_WORKSPACE, "path": record.path, "runId": run_id,
                           "diskBytes": disk_use(record.path)})
    runner = run.runner or _NO_RUNNER
    for holder, owner in abandoned_checkouts(repo):
        if owner.get("pid") == runner.pid and owner.get("start") == runner.start:
            things.append({"kind": LEFT_GATES, "path": str(holder), "diskBytes": disk_use(holder)})
    integration = integration_worktree(repo)
    if registered_here(repo, integration) and leftovers(integration):
        things.append({"kind": LEFT_INTEGRATION, "path": str(integration), "diskBytes": disk_use(integration)})
    for task_id in run.claims_held:  # as its record last said: doctor asks no remote unless told to
        things.append({"kind": LEFT_CLAIM, "taskId": task_id, "remote": run.remote})
    for group in groups:
        things.append({"kind": LEFT_AGENTS, "group": group.pgid, "pids": sorted(group.members())})
    return things


def _shown(thing: dict[str, Any]) -> str:
    size = f" ({shown_size(thing['diskBytes'])})" if thing.get("diskBytes") is not None else ""
    kind = thing["kind"]
    if kind == LEFT_CLAIM:
        return f"its claim on task {thing['taskId']} on {thing['remote']}"
    if kind == LEFT_AGENTS:
        return f"agents alive in group {thing['group']}: pid(s) {', '.join(map(str, thing['pids']))}"
    what = {LEFT_WORKSPACE: "workspace", LEFT_GATES: "the gates' checkout",
            LEFT_INTEGRATION: "the integration worktree, mid-operation"}[kind]
    return f"{what} {thing['path']}{size}"


def _lease_left(repo: Repo, left: lease.Left) -> Finding:
    """A dead runner's lease whose record is not running: settling goes over
    what it left and drops the lease; with no record there is nothing to settle."""
    wid = left.workflow_id
    subject = {"path": str(left.path), "workflowId": wid}
    if wid is not None and repo.ref_oid(record.workflow_ref(wid)) is not None:
        return Finding(WORKFLOW, "runner-lease-left", f"workflow {wid}",
                       f"the lease of its dead runner is left ({left.path.name}); settling goes over what the "
                       "run left and drops it", settle_command(wid), fixable=True, subject=subject)
    return Finding(WORKFLOW, "runner-lease-left", str(left.path),
                   "the lease of a dead runner that never wrote a record: nothing was made, nothing to settle",
                   remove_command(left.path), fixable=True, subject=subject)


def check_task_branches(repo: Repo, live: list[RunRecord], dead_runs: set[str]) -> list[Finding]:
    """``roadmap-*`` branches a run left: survivors the next ``workflow run
    --resume-partial-branches`` assesses first. A branch a live run works on
    is none; one a dead run left is its settling's."""
    busy = {r.branch_ref for r in live if r.runId in dead_runs or run_busy(repo, r.runId)}
    found = []
    integrated = dict(repo.refs_under(INTEGRATED_PREFIX))
    checked_out = {ref for _, ref in checked_out_branches(repo)}
    for name, tip in sorted(repo.refs_under("refs/heads/roadmap-")):
        parsed = parse_task_branch(name)
        if parsed is None or name in busy:
            continue
        task_id, addendum = parsed
        branch = name.removeprefix("refs/heads/")
        if _landed(repo, integrated, task_id, addendum, tip):
            if name not in checked_out:
                found.append(_landed_branch(branch, tip))
            continue
        found.append(Finding(
            WORKFLOW, "task-branch-survivor", branch,
            f"a task branch a run left (at {str(tip)[:12]}); 'git harn assess {branch}' says what recovery "
            "would do with it, 'git harn workflow run --resume-partial-branches' resumes it, and discard retires "
            f"it, its commits kept under harnery/salvage/ ({SALVAGE_LOG})",
            f"git harn workflow discard {task_id} --yes" if addendum is None else None,
            ageSeconds=max(0, int(time.time() - repo.commit_info(tip).time)),
            subject={"branch": branch, "taskId": task_id}))
    return found


def _landed(repo: Repo, integrated: dict[str, Oid], task_id: str, addendum: int | None, tip: Oid) -> bool:
    """The branch's tip is kept under ``refs/harnery/integrated/<key>[-<n>]``:
    the task landed, and the branch holds nothing that is not kept."""
    key = work_key(task_id, addendum)
    return any(repo.contains(oid, tip) for name, oid in integrated.items()
               if name == INTEGRATED_PREFIX + key or re.fullmatch(re.escape(INTEGRATED_PREFIX + key) + r"-\d+", name))


def _landed_branch(branch: str, tip: Oid) -> Finding:
    return Finding(WORKFLOW, "task-branch-landed", branch,
                   "the branch of a task that landed: its tip is kept under refs/harnery/integrated/, so deleting "
                   "it loses nothing (a run would have; a clean-up that failed after the push leaves it)",
                   command("git update-ref -d", f"refs/heads/{branch}", str(tip)), fixable=True,
                   subject={"ref": f"refs/heads/{branch}", "oid": str(tip)})
