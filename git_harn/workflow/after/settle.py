"""Settling what a dead run left: record closed, workspaces settled, groups
ended, git's lock files cleared [L3] [P6].

A run that dies (SIGKILL, power, the OOM killer) leaves its runner lease,
its record at ``workflow-running``, its tasks' workspaces ``active`` (some
on a detached HEAD, mid-integration), the run locks of a dead process, maybe
agents still running, and the lock files of the gits that died with it.
Before the next ``workflow run`` in the clone selects anything, and when an
operator runs ``git harn workflow settle <id>``, every such run whose runner
is provably dead is settled, in this order:

1. every process group its agents and gates led that is still alive is
   ended (SIGTERM, a grace period, SIGKILL; a reused pid is never signalled);
2. the lock files git leaves (``packed-refs.lock``, ``HEAD.lock``,
   ``index.lock``, the ``.lock`` of each ref the run writes) are removed with
   a warning, once those groups are dead and no git works in the repository;
3. each task's workspace: a task that landed (its squash on the base, or its
   tip in the base or kept under ``refs/harnery/integrated/<id>``) has its
   tip kept there and its workspace released, never salvaged; one that did
   not is put back on its branch (restored at the HEAD it had, if the
   branch is gone) and left to cleanup, which makes it an ordinary survivor
   (or releases it, when it holds no work). For the builtin integrator
   git-harn inspects the remote itself, so an interrupted integration that
   pushed nothing is not held for an operator;
4. the record gets a closing event (never a rewrite): ``interrupted``, the
   tasks it left listed, each with what settling found [L3];
5. the checkouts of committed content it kept: the gates' scratch checkouts
   in the temp folder whose owner is dead (``git-harn-gates-*/tree``,
   registered as worktrees), and the integration worktree when a killed
   integration left it mid-operation (under the merge lock, never while a
   live integration holds it; a clean one stays for the next integration).

Nothing here salvages, discards or resets: cleanup decides, as always [P2].
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from git_harn.assess.gates import sweep_abandoned_checkouts
from git_harn.clock import epoch_of, now_iso, precise_iso
from git_harn.errors import BadInput, Busy, HarnError, RaceLost, Refused
from git_harn.git import Oid, Repo
from git_harn.git.branches import ahead, fetch_branch, keep_ref, reattach
from git_harn.git.checkout import leftovers
from git_harn.git.identity import host_name
from git_harn.git.worktrees import (
    ADMIN_LOCKS,
    admin_dir,
    admin_locks,
    checked_out_branches,
    discard_scratch,
    head_of,
    registered_here,
)
from git_harn.integrate.crash import marker_for
from git_harn.integrate.land import squash_of
from git_harn.integrate.propose import proposal_of
from git_harn.integrate.target import slug
from git_harn.integrate.worktree import integration_worktree
from git_harn.notices import info, warn
from git_harn.results import Result
from git_harn.store import lease as leases
from git_harn.store import proposals, runs
from git_harn.store.bookkeeping import INTEGRATED_ROOT, history_tips
from git_harn.store.clone import this_clone
from git_harn.store.locks import (
    agents_of,
    git_processes_in,
    hold,
    hold_merge,
    hold_run,
    hold_worktrees,
    locks_dir,
    read_owner,
    run_lock_path,
)
from git_harn.store.procs import Group, end_groups, judgeable, pid_dead
from git_harn.store.record import PRESERVED_DIRTY
from git_harn.tasks.config import Stage
from git_harn.tasks.roadmap import Task, task_branch, work_key
from git_harn.text import jsonable, one_line
from git_harn.workflow.after import proposals as proposed
from git_harn.workflow.after import remediation
from git_harn.workflow.ledger import claims as claiming
from git_harn.workflow.ledger import record
from git_harn.workflow.ledger.journal import Journal
from git_harn.workflow.model import state
from git_harn.workflow.model.result import TaskResult
from git_harn.workflow.model.state import State
from git_harn.workspace.cleanup import cleanup_locked
from git_harn.workspace.reconcile import pin_detached_head, refuse_out_of_reach

SETTLE_WAIT = 120.0  # seconds to wait for another settle of this clone
FRESH_LOCK = 2.0  # a lock file younger than this may be a live git's, whatever else is true

# what settling did with a workspace
RELEASED_LANDED = "released-landed"
SURVIVOR = "survivor"
NOTHING = "nothing"
KEPT = "kept"
BUSY = "busy"


@dataclass
class SettledWorkspace:
    """What settling found and did of one task's workspace (the schema's ``settledWorkspace``)."""

    taskId: str
    runId: str
    branch: str | None
    landed: str | None = None  # the commit that shows the task landed
    action: str = NOTHING
    state: str | None = None  # its workspace's state after settling (store/record.py)
    reason: str = ""
    stage: str | None = None  # where the task stood when its runner died
    branchTip: str | None = None  # where its branch is after settling (a survivor)
    ahead: bool | None = None  # its branch holds committed work beyond the base

    def document(self) -> dict[str, Any]:
        """As the schema names it: what settling did not learn is left out."""
        body: dict[str, Any] = jsonable(self)
        return {key: value for key, value in body.items() if value is not None or key in _ALWAYS_SAID}


_ALWAYS_SAID = ("branch", "landed", "state")  # null when not known, never left out


@dataclass
class SettleResult(Result):
    """``git harn workflow settle``: what was settled of one dead run."""

    SCHEMA: ClassVar[str] = "workflow-settle"

    workflowId: str
    runner: dict[str, Any] | None
    closed: bool = False
    groupsEnded: list[dict[str, Any]] = field(default_factory=list)
    locksRemoved: list[str] = field(default_factory=list)
    workspaces: list[SettledWorkspace] = field(default_factory=list)
    claimsReleased: list[str] = field(default_factory=list)
    checkoutsRemoved: list[str] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)  # its remote's proposals, reconciled [F2]
    summary: str = ""

    @property
    def outcome(self) -> str:
        return "settled" if all(w.action not in (BUSY, KEPT) for w in self.workspaces) else "needs-operator"

    def document(self) -> dict[str, Any]:
        return {**super().document(), "workspaces": [w.document() for w in self.workspaces], "outcome": self.outcome}


# --- which runs may be settled ------------------------------------------------------


def settle_dead(repo: Repo, closer: str) -> list[dict[str, Any]]:
    """Every run of this clone whose runner died without ending it (its lease
    left behind), settled; a run does this before it selects anything."""
    dead = [left for left in leases.leases(repo) if left.dead()]
    if not dead:
        return []
    settled = []
    with hold(locks_dir(repo) / "settle.lock", "settle", f"settle dead runs for {closer}", SETTLE_WAIT):
        for left in dead:
            if left.workflow_id is None:
                left.drop()  # unreadable: names no run, so nothing can be settled
                continue
            try:
                stored = record.read(repo, left.workflow_id)
            except BadInput:
                left.drop()  # killed before its first record: nothing was made
                continue
            try:
                settled.append(_brief(_settle(repo, stored, [left], closer)))
            except HarnError as exc:  # never a reason for this run not to start; the next one tries again
                warn(f"could not settle workflow {left.workflow_id}, whose runner died: {exc.message}")
    return settled


def _brief(done: SettleResult) -> dict[str, Any]:
    return {"workflowId": done.workflowId, "closed": done.closed, "outcome": done.outcome,
            "summary": done.summary, "workspaces": [w.document() for w in done.workspaces]}


def settle(repo: Repo, workflow_id: str) -> SettleResult:
    """``git harn workflow settle <id>``: refused while its runner may be alive."""
    stored = record.read(repo, workflow_id)
    left = leases.of_workflow(repo, workflow_id)
    live = [lease for lease in left if not lease.dead()]
    if live:
        raise Refused(leases.busy_line(live[0].owner).replace("; nothing was started", "; nothing was settled"))
    if not left:
        _refuse_unless_dead(repo, record.RecordedRun.of(stored))
    with hold(locks_dir(repo) / "settle.lock", "settle", f"settle {workflow_id}", SETTLE_WAIT):
        done = _settle(repo, record.read(repo, workflow_id), left, "git harn workflow settle")
    # what its tasks proposed: a killed run may have left one half made, which this finishes [F2]
    body = stored.body
    if any(proposed.live(repo, str(body.get("remote")), str(body.get("base")))):
        try:
            tip = fetch_branch(repo, str(body["remote"]), str(body["base"]))
            done.proposals = [seen.document() for seen in
                              proposed.reconcile(repo, str(body["remote"]), str(body["base"]), tip)]
        except HarnError as exc:
            warn(f"the proposals of {body.get('remote')}/{body.get('base')} were not reconciled: {exc.message}")
    return done


def _refuse_unless_dead(repo: Repo, run: record.RecordedRun) -> None:
    """Only a run that ended, or whose runner is provably dead here and of this
    clone, is settled; anything else is refused, naming what to do."""
    if not run.in_progress:
        return  # ended: settling only goes over what it left, which is safe
    runner = run.runner
    wid = run.workflow_id
    if runner is None:
        raise Refused(f"workflow {wid} was recorded before records named their runner: git-harn cannot tell "
                      "whether it still runs; 'git harn status' lists its workspaces, which reclaim and "
                      "cleanup settle; nothing was changed")
    if runner.clone != this_clone(repo)["id"]:
        raise Refused(f"workflow {wid} ran in another clone ({runner.common_dir or '?'} on "
                      f"{runner.host or '?'}): settle it there; nothing was changed")
    here = host_name(repo)
    if not pid_dead(runner.pid, runner.start, runner.host, here):
        if judgeable(runner.host, here):
            raise Refused(f"workflow {wid} is still running (pid {runner.pid}); stop it with "
                          f"'kill -TERM {runner.pid}' first; nothing was changed")
        raise Refused(f"workflow {wid} ran on host {runner.host}; git-harn cannot tell from here "
                      "whether it still runs: settle it there; nothing was changed")


# --- settling one run -------------------------------------------------------------------


def _settle(repo: Repo, stored: record.Stored, left: list[leases.Left], closer: str) -> SettleResult:
    run = record.RecordedRun.of(stored)
    shown = stored.body.get("runner")  # the runner as its record words it, for the result
    result = SettleResult(run.workflow_id, shown if run.runner is not None else None)
    result.groupsEnded = [g.shown() for g in end_groups(_groups(repo, left, run.tasks))]
    base = _base_now(repo, run)
    result.locksRemoved = _clear_git_locks(repo, run)
    for task in run.tasks:
        result.workspaces.append(_settle_workspace(repo, run, task, base))
    result.claimsReleased = _release_claims(repo, run)
    result.checkoutsRemoved = _remove_checkouts(repo)
    if run.in_progress:
        _close(repo, stored, result, base, closer)
        result.closed = True
    if result.outcome == "settled":
        for lease in left:
            lease.drop()
    result.summary = _summary(result)
    return result


def _remove_checkouts(repo: Repo) -> list[str]:
    """The scratch checkouts dead processes kept (committed content only):
    the gates', and the integration worktree a killed integration left
    mid-operation, which the next integration would make afresh anyway."""
    removed = sweep_abandoned_checkouts(repo)
    path = integration_worktree(repo)
    if not registered_here(repo, path) or not leftovers(path):
        return removed
    try:
        with hold_merge(repo, "workflow settle: the integration worktree a killed integration left", 0), \
                hold_worktrees(repo):
            discard_scratch(repo, path)
    except Busy:
        return removed  # a live integration holds it: it is that one's
    return [*removed, str(path)]


def _release_claims(repo: Repo, run: record.RecordedRun) -> list[str]:
    """The claims the dead run held on its remote, released (it ran with claims)."""
    remote = run.remote
    if not run.with_claims or remote is None:
        return []
    try:
        return claiming.release_dead_run(repo, remote, run.workflow_id)
    except HarnError as exc:
        warn(f"cannot release the claims workflow {run.workflow_id} left on {remote}: {exc.message}; "
             "they go stale ('git harn workflow claims' lists them)")
        return []


def _groups(repo: Repo, left: list[leases.Left], tasks: tuple[record.RecordedTask, ...]) -> list[Group]:
    """The groups the dead run's agents and gates led: from its lease, and
    from the run lock of each task (where each agent was named)."""
    groups = {g.pgid: g for lease in left for g in lease.groups()}
    for task in tasks:
        owner = read_owner(run_lock_path(repo, task.run_id)) or {}
        for agent in agents_of(owner):
            pid, start = agent.get("pid"), agent.get("start")
            if isinstance(pid, int) and agent.get("group", pid) == pid:
                groups.setdefault(pid, Group(pid, start if isinstance(start, str) else None))
    return list(groups.values())


def _base_now(repo: Repo, run: record.RecordedRun) -> Oid | None:
    """The dead run's base as the remote has it now (None: it cannot be read,
    so nothing counts as landed and no interrupted integration is released)."""
    remote, base = run.remote, run.base
    if remote is None or base is None:
        return None
    try:
        return fetch_branch(repo, remote, base)
    except HarnError as exc:
        warn(f"cannot read {remote}/{base} to see what workflow {run.workflow_id} landed: {exc.message}")
        return None


# --- lock files of dead gits -------------------------------------------------------------


def _lock_candidates(repo: Repo, run: record.RecordedRun) -> list[Path]:
    """The lock files the dead run's gits could have left in the common dir:
    the packed refs, HEAD, config, and the ``.lock`` of each ref it writes."""
    common = repo.common_dir
    refs = [f"refs/harnery/workflows/{run.workflow_id}", "refs/harnery/notes",
            f"refs/remotes/{run.remote}/{run.base}"]
    for task in run.tasks:
        refs += [f"refs/heads/{task.branch}"] if task.branch is not None else []
        refs += [f"refs/heads/integrate-{slug(task.task_id, task.addendum)}", f"{INTEGRATED_ROOT}{task.key}",
                 f"refs/harnery/runs/{task.run_id}", f"refs/harnery/detached/{task.run_id}"]
    found = [common / "packed-refs.lock", common / "HEAD.lock", common / "config.lock"]
    found += [common / f"{ref}.lock" for ref in refs]
    admin = admin_dir(repo, integration_worktree(repo))
    if admin is not None:
        found += [admin / name for name in ADMIN_LOCKS]
    return found


def _git_at_work(repo: Repo, extra: list[Path]) -> list[int]:
    folders = [repo.common_dir, integration_worktree(repo), *extra]
    top = repo.workdir
    if top is not None:
        folders.append(top)
    return sorted({pid for folder in folders if folder.exists() for pid in git_processes_in(folder)})


def _age(path: Path) -> float | None:
    try:
        return time.time() - path.lstat().st_mtime
    except FileNotFoundError:
        return None


def _remove_stale(paths: list[Path], busy_now: Callable[[], list[int]], why: str) -> list[str]:
    """Remove the lock files no live git holds. One made a moment ago may be
    a live process's (libgit2 starts no git): it is given until it is
    FRESH_LOCK old, which a next run started right after the kill needs, and
    is then judged again with whoever works in the repository then."""
    busy = busy_now()
    ages = [age for age in map(_age, paths) if age is not None]
    if not busy and ages and min(ages) < FRESH_LOCK:
        time.sleep(FRESH_LOCK - min(ages))
        busy = busy_now()
    removed = []
    for path in paths:
        age = _age(path)
        if age is None:
            continue  # its holder finished: nothing was left
        if busy or age < FRESH_LOCK:
            warn(f"left {path} in place: " + (f"git process(es) {', '.join(map(str, busy[:5]))} work in the "
                                               "repository" if busy else "it was made a moment ago"))
            continue
        with suppress(FileNotFoundError):
            path.unlink()
        warn(f"removed {path}: {why}")
        removed.append(str(path))
    return removed


def _clear_git_locks(repo: Repo, run: record.RecordedRun) -> list[str]:
    wid = run.workflow_id
    paths = [p for p in _lock_candidates(repo, run) if os.path.lexists(p)]
    if not paths:
        return []
    return _remove_stale(paths, lambda: _git_at_work(repo, []),
                         f"left by a git of workflow {wid}, whose runner and agents are dead")


def _clear_workspace_locks(repo: Repo, wid: str, path: Path) -> list[str]:
    admin = admin_dir(repo, path)
    if admin is None:
        return []
    found = admin_locks(admin)
    if not found:
        return []
    return _remove_stale(found, lambda: _git_at_work(repo, [path]),
                         f"left by a git in a workspace of workflow {wid}, whose runner and agents are dead")


# --- one task's workspace -----------------------------------------------------------------


def _settle_workspace(repo: Repo, run: record.RecordedRun, task: record.RecordedTask,
                      base: Oid | None) -> SettledWorkspace:
    entry = SettledWorkspace(task.task_id, task.run_id, task.branch)
    stage = (read_owner(run_lock_path(repo, task.run_id)) or {}).get("stage")
    if isinstance(stage, str):
        entry.stage = stage
    stored = runs.read(repo, task.run_id)
    if stored is None:
        entry.reason = "no workspace was made"
        return entry
    entry.state = stored.record.state
    if stored.record.terminal:  # cleanup ran: only whether it landed is left to say
        entry.landed = _landed(repo, base, task, repo.ref_oid(stored.record.branch_ref))
        entry.reason = f"its workspace is {stored.record.state}"
        return entry
    try:
        with hold_run(repo, task.run_id, f"workflow settle {run.workflow_id}"):
            _settle_held(repo, run, task, base, entry)
    except Busy as exc:
        entry.action, entry.reason = BUSY, one_line(exc.message, 500)
    except HarnError as exc:  # another clone's, another host's, or git refused: kept as it is
        entry.action, entry.reason = KEPT, one_line(exc.message, 500)
    return entry


def _settle_held(repo: Repo, run: record.RecordedRun, task: record.RecordedTask, base: Oid | None,
                 entry: SettledWorkspace) -> None:
    """Under the run lock: land-or-survive, then cleanup's verdict."""
    stored = runs.read(repo, task.run_id)
    assert stored is not None
    rec = stored.record
    refuse_out_of_reach(repo, rec)
    path = Path(rec.path)
    here = path.is_dir()
    if here:
        _clear_workspace_locks(repo, run.workflow_id, path)
    tip = repo.ref_oid(rec.branch_ref)
    head = head_of(path) if here else None
    landed = _landed(repo, base, task, tip or head)
    entry.landed = landed
    if landed is not None:
        _keep_landed(repo, run, task, tip or head)
    elif base is not None:
        marker_for(repo, task.task_id, task.addendum).unlink(missing_ok=True)  # the remote was read: nothing landed
    if tip is None and head is not None:
        tip = _restore_branch(repo, rec, head)
    if here and tip is not None:
        if head is not None and not repo.contains(tip, head):
            # a rebase moved the branch: what only HEAD holds stays [P1]
            pin_detached_head(repo, rec, history_tips(repo))
        reattach(path, rec.branch)
    done = cleanup_locked(repo, task.run_id)
    after = repo.ref_oid(rec.branch_ref)
    entry.state, entry.reason = done.state, one_line(done.reason, 300)
    entry.action = RELEASED_LANDED if landed is not None else (SURVIVOR if after is not None else NOTHING)
    if after is not None:
        entry.branchTip = str(after)
        entry.ahead = base is not None and ahead(repo, after, base) > 0


def _landed(repo: Repo, base: Oid | None, task: record.RecordedTask, tip: Oid | None) -> str | None:
    """The commit that shows the task landed, or None: its squash on the base,
    its tip in the base, or its tip kept as landed by the run itself."""
    if base is None:
        return None
    squash = squash_of(repo, base, task.task_id, task.addendum)
    if squash is not None:
        return squash
    if tip is None:
        return None
    if repo.contains(base, tip):
        return str(tip)
    return str(tip) if tip in _kept(repo, task.key) else None


def _kept(repo: Repo, key: str) -> list[Oid]:
    """What ``refs/harnery/integrated/<key>`` and its ``-<n>`` siblings hold
    (keep_ref makes them in that order and never moves one)."""
    found = []
    for n in range(100):
        oid = repo.ref_oid(INTEGRATED_ROOT + key + (f"-{n}" if n else ""))
        if oid is None:
            break
        found.append(oid)
    return found


def _keep_landed(repo: Repo, run: record.RecordedRun, task: record.RecordedTask, tip: Oid | None) -> None:
    """The agent's own commits stay reachable after the squash landed [P1],
    as the runner would have kept them; the crash marker goes (it landed)."""
    marker_for(repo, task.task_id, task.addendum).unlink(missing_ok=True)
    if tip is None:
        return
    key = task.key
    if not any(repo.contains(oid, tip) for oid in _kept(repo, key)):
        keep_ref(repo, INTEGRATED_ROOT + key, tip,
                           f"git-harn: settle of workflow {run.workflow_id}: task {key} had landed")


def _restore_branch(repo: Repo, rec: Any, head: Oid) -> Oid | None:
    """A workspace branch gone while its worktree lives on (detached at the
    task's tip): put it back there, so the survivor keeps its name."""
    try:
        repo.create_ref(rec.branch_ref, head, f"git-harn: settle restores {rec.branch} at the workspace's HEAD")
    except HarnError:
        return repo.ref_oid(rec.branch_ref)
    warn(f"{rec.branch} was missing; restored at {str(head)[:12]}, where workspace {rec.path} stood")
    return head


# --- the closing event ----------------------------------------------------------------------


def _close(repo: Repo, stored: record.Stored, settled: SettleResult, base: Oid | None, closer: str) -> None:
    """Append the closing event to the dead runner's record (never a rewrite):
    the run ends ``interrupted``, each task it left says what became of it."""
    result = record.load_result(stored.body)
    found = {w.runId: w for w in settled.workspaces}
    left = [t for t in result.tasks if not State.of(t).terminal]
    _fold_stage_times(repo, result.workflowId, left)
    flags = ("--remote", result.remote, "--base", result.base)
    kept = result.settings or {}  # how the dead run landed: an integrate it advises lands the same way [L4] [F1]
    said = {k: v if isinstance(v, str) else None for k, v in kept.items()}  # read back from git: strings only
    landing = state.landing_flags(said.get("land"), said.get("forge"), said.get("forgeUrl"),
                                  kept.get("autoMerge") is True)
    where = state.Where(result.remote, result.base, flags + landing)
    for task in left:
        waiting = proposals.read(repo, task.key)  # a proposal it made holds it: proposed, not interrupted [F1]
        if waiting is not None and waiting["state"] in proposals.LIVE_STATES and \
                waiting.get("runId") == task.runId:
            task.proposal = proposal_of(waiting)
            state.end(task, state.Ending(State.PROPOSED, Stage.INTEGRATE, (
                f"the runner died after it proposed {task.branch} as {waiting.get('url') or waiting['landingBranch']}"
                "; the next run reconciles it (settled)")),
                state.Facts(task.taskId, task.key, task.branch, False, False, False, run_id=task.runId), where)
            task.finishedAt = task.finishedAt or now_iso()
            continue
        ended_by_death(task, found.get(task.runId or ""), where)
    now = now_iso()
    runner = result.runner or {}
    result.closed = {"by": closer, "at": now, "host": host_name(repo),
                     "tasksLeft": [t.key for t in left], "groupsEnded": settled.groupsEnded,
                     "locksRemoved": settled.locksRemoved}
    result.interrupted = True
    result.finished = True
    result.finishedAt = now
    result.halted = (f"interrupted (runner gone): runner pid {runner.get('pid', '?')} on {runner.get('host', '?')} "
                     f"died without ending the run; closed by {closer}")
    result.remediation = result.remediation or remediation.interrupted_end(repo, base, result.workflowId)
    if result.baseOidAfter is None and base is not None:
        result.baseOidAfter = str(base)  # the base as settling read it: the tip after the dead run
    result.summary = result.make_summary()
    try:
        Journal(repo, result.workflowId, stored.tip).closed(
            result, f"runner gone; closed by {closer}: {len(left)} task(s) left")
    except RaceLost:  # a sync brought the record on meanwhile: close what it holds now
        fresh = record.read(repo, stored.workflowId)
        if not record.RecordedRun.of(fresh).in_progress or fresh.tip == stored.tip:
            return
        _close(repo, fresh, settled, base, closer)


def _fold_stage_times(repo: Repo, workflow_id: str, left: list[TaskResult]) -> None:
    """The stages the dead runner kept in its run folder but never recorded
    go into the closing event (which travels), the one it was in ended when
    the runner was last alive, as ``interrupted``."""
    kept, alive_at = record.stage_times(record.run_folder(repo, workflow_id))
    for task in left:
        spans = kept.get(str(task.runId))
        if spans is not None and len(spans) > len(task.timeline):
            task.timeline = spans
        for span in task.timeline:
            if span.get("kind") == "stage" and span.get("finishedAt") is None and alive_at is not None:
                begun = epoch_of(span.get("startedAt"))
                span.update(finishedAt=precise_iso(max(alive_at, begun or alive_at)), outcome="interrupted")


def ended_by_death(task: TaskResult, settled: SettledWorkspace | None, where: state.Where) -> None:
    """The end of a task its runner left running: done if it had landed, else
    interrupted where it stood, with the next step the facts now give."""
    found = settled or SettledWorkspace(task.taskId, task.runId or "", task.branch)  # nothing was settled
    stage = found.stage or task.stage
    landed = found.landed
    if landed:
        ending = state.Ending(State.DONE, Stage.DONE, f"landed on {where.remote}/{where.base} as {str(landed)[:12]}; "
                              "the runner died before it recorded it (settled)")
    else:
        ending = state.Ending(State.INTERRUPTED, stage, f"the runner died during {stage or 'its start'}; "
                              + (found.reason or "nothing was settled"), state.INTERRUPTED_FAULT)
    if settled is not None:
        task.workspace = {"state": settled.state, "reason": settled.reason, "settled": True}
    task.finishedAt = task.finishedAt or now_iso()
    state.end(task, ending, _facts(task, found), where)


def _facts(task: TaskResult, settled: SettledWorkspace) -> state.Facts:
    """What is true of a settled task's branch now, for its next step."""
    return state.Facts(task_id=task.taskId, key=task.key, branch=task.branch,
                       branch_exists=bool(settled.branchTip), ahead=bool(settled.ahead),
                       landed=bool(settled.landed), workspace=settled.state, run_id=task.runId,
                       dirty=settled.state == PRESERVED_DIRTY)


def _summary(result: SettleResult) -> str:
    counts: dict[str, int] = {}
    for ws in result.workspaces:
        counts[ws.action] = counts.get(ws.action, 0) + 1
    parts = [f"{n} {action}" for action, n in sorted(counts.items())]
    head = f"workflow {result.workflowId}: " + ("record closed" if result.closed else "record already ended")
    return (f"{head}; {len(result.workspaces)} workspace(s)" + (f" ({', '.join(parts)})" if parts else "")
            + (f"; ended {len(result.groupsEnded)} process group(s)" if result.groupsEnded else "")
            + (f"; removed {len(result.locksRemoved)} lock file(s)" if result.locksRemoved else "")
            + (f"; released the claim(s) on {', '.join(result.claimsReleased)}" if result.claimsReleased else "")
            + (f"; removed {len(result.checkoutsRemoved)} checkout(s) it kept: {', '.join(result.checkoutsRemoved)}"
               if result.checkoutsRemoved else ""))


# --- what a landed task left behind -----------------------------------------------------------


def sweep_landed(repo: Repo, tasks: list[Task], base: Oid) -> list[str]:
    """The branches a landed task can leave when a clean-up after its push
    failed (a lock file a killed git left): ``integrate-<slug>`` once the base
    holds its tip, ``roadmap-<id>`` once ``refs/harnery/integrated/<id>``
    does, and neither while a worktree has it checked out. Each is deleted
    with a compare-and-swap; what is deleted is said [P1] [P3]."""
    checked_out = {branch for _, branch in checked_out_branches(repo)}
    gone = []
    for task in tasks:
        for key, number, done in _landed_keys(task):
            if not done:
                continue
            integration_ref = f"refs/heads/integrate-{slug(task.id, number)}"
            for ref, holder in ((integration_ref, [base]),
                                (f"refs/heads/{task_branch(task.id, number)}", _kept(repo, key))):
                tip = repo.ref_oid(ref)
                if tip is None or ref in checked_out or not any(repo.contains(h, tip) for h in holder):
                    continue
                try:
                    repo.delete_ref(ref, tip)
                except HarnError as exc:
                    warn(f"{ref.removeprefix('refs/heads/')} of landed task {key} is left: {exc.message}")
                    continue
                info(f"deleted {ref.removeprefix('refs/heads/')}, left when task {key} landed "
                     f"(its tip {str(tip)[:12]} is kept elsewhere)")
                gone.append(ref)
    return gone


def _landed_keys(task: Task) -> list[tuple[str, int | None, bool]]:
    """(key, addendum number, ticked) of the task and each of its addenda."""
    found: list[tuple[str, int | None, bool]] = [(task.id, None, task.done)]
    found += [(work_key(task.id, a.number), a.number, a.done) for a in task.addenda]
    return found


# --- reclaim of a task's workspace ------------------------------------------------------------


def keep_if_landed(repo: Repo, run_id: str) -> str | None:
    """Before ``git harn reclaim`` of a workflow task's workspace: a task that
    landed (judged as settling judges it) has its tip kept under
    ``refs/harnery/integrated/<key>``, so reclaim finds no commit at risk and
    releases the workspace instead of salvaging work the base holds already
    (issue 45) [P1]. Uncommitted work is still salvaged. The caller holds
    the run lock. A sentence for the reason, or None (not a task's, or not
    landed, or the remote cannot be read: reclaim salvages as ever)."""
    found = _task_of_run(repo, run_id)
    stored = runs.read(repo, run_id)
    if found is None or stored is None:
        return None
    run, task = found
    rec = stored.record
    path = Path(rec.path)
    tip = repo.ref_oid(rec.branch_ref) or (head_of(path) if path.is_dir() else None)
    if tip is None:
        return None
    key = task.key
    if any(repo.contains(oid, tip) for oid in _kept(repo, key)):
        return None  # kept as landed already: nothing is at risk, reclaim says so itself
    base = _base_now(repo, run)
    landed = _landed(repo, base, task, tip)
    if landed is None:
        return None
    _keep_landed(repo, run, task, tip)
    return (f"task {key} had landed on {run.remote}/{run.base} as {landed[:12]}; "
            f"its tip {str(tip)[:12]} is kept on {INTEGRATED_ROOT}{key}, not salvaged")


def _task_of_run(repo: Repo, run_id: str) -> tuple[record.RecordedRun, record.RecordedTask] | None:
    """The workflow record (read back as a RecordedRun) and the task whose workspace is
    ``run_id`` (``<workflow-id>-<task key>``), if a record names it."""
    for cut in (i for i, c in enumerate(run_id) if c == "-"):
        if repo.ref_oid(record.workflow_ref(run_id[:cut])) is None:
            continue
        try:
            run = record.RecordedRun.of(record.read(repo, run_id[:cut]))
        except HarnError:
            continue
        for task in run.tasks:
            if task.run_id == run_id:
                return run, task
    return None
