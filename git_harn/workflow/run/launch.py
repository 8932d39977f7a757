"""``git harn workflow run``: every check, the lease, the seal, then the loop.

Before it selects anything a run takes the runner lease of its clone,
remote and base (a second live run there is refused) and settles what dead
runs of the clone left [L2] [L3]; a failing auth preflight stops it before
anything is created; then, under the seal of the repository [T2], the
scheduler (``run/runner.py``) starts and collects the tasks. A dry run lists
what a run would start and creates nothing.
"""

from __future__ import annotations

from git_harn import schemas
from git_harn.clock import now_iso
from git_harn.git import Repo
from git_harn.git.pins import pinned, remote_url
from git_harn.notices import warn
from git_harn.proc import become_subreaper, end_adopted
from git_harn.store import lease as leases
from git_harn.store.live import live_workspace_branches
from git_harn.store.notes import show_notes_in_log
from git_harn.store.procs import this_process
from git_harn.store.seal import Seal
from git_harn.tasks.roadmap import Roadmap, Task, roadmap_at
from git_harn.text import one_line
from git_harn.workflow.after import proposals as proposed
from git_harn.workflow.after import recovery, remediation, settle
from git_harn.workflow.agents import auth as preflight
from git_harn.workflow.agents import spend
from git_harn.workflow.ledger import claims as claiming
from git_harn.workflow.ledger import record
from git_harn.workflow.model import config, state
from git_harn.workflow.model.result import WorkflowResult
from git_harn.workflow.model.state import State
from git_harn.workflow.run import breakers, notify, select
from git_harn.workflow.run.progress import Progress
from git_harn.workflow.run.runner import Scheduler
from git_harn.workflow.run.starts import task_result
from git_harn.workflow.task import addenda
from git_harn.workspace.here import refuse_in_workspace


def _result(eff: config.Effective, workflow_id: str, dry_run: bool) -> WorkflowResult:
    return WorkflowResult(
        workflowId=workflow_id, base=eff.base, remote=eff.remote, baseOid=str(eff.base_oid),
        dryRun=dry_run, startedAt=now_iso(),
        agents={stage: agent.shown() for stage, agent in eff.agents.items()}, settings=eff.shown(),
        remoteUrl=remote_url(eff.remote))


def run_workflow(repo: Repo, options: config.Options) -> WorkflowResult:
    refuse_in_workspace(repo, "workflow run")  # its tasks would nest in this one's
    with pinned(repo.cli_cwd):  # what names a program or a place: as it is now, before any agent ran [T1]
        notifier = None if options.dry_run else notify.Notifier.of(repo, options.notify)
        result = _run_workflow(repo, options, notifier)
    if notifier is not None:
        notifier.run_ended(result)  # started, never waited for
    return result


def _run_workflow(repo: Repo, options: config.Options, notifier: notify.Notifier | None = None) -> WorkflowResult:
    wait_for_provider = breakers.parse_wait(options.wait_for_provider)
    eff = config.load(repo, options)  # every check before anything is created [P7]
    workflow_id = record.new_workflow_id()
    result = _result(eff, workflow_id, options.dry_run)
    if notifier is not None:
        notifier.bind(repo, workflow_id)
    if options.dry_run:
        tasks, held_ids, found = _select(repo, eff, result)
        return _dry_run(repo, result, eff, tasks, held_ids)  # lists the candidates, never resumes
    unconfined = eff.sandbox.warning()
    if unconfined is not None:
        warn(unconfined)  # every run that starts agents says so, once [T3]
    blind = spend.limit_warning(eff)
    if blind is not None:
        warn(blind)  # a limit that cannot count every stage says so before it is trusted
    lease = leases.take(repo, eff.remote, eff.base, workflow_id, this_process())  # [L2]: Refused while live
    try:
        schemas.preload()  # the first stage report is validated soon; load meanwhile
        result.runner = record.runner_fields(repo, lease.owner)
        result.settled = settle.settle_dead(repo, workflow_id)  # [L3]: what dead runs left, first
        return _launch(repo, eff, options, result, lease, wait_for_provider, notifier)
    finally:
        lease.release()


def _select(repo: Repo, eff: config.Effective,
            result: WorkflowResult) -> tuple[list[Task], set[str], recovery.Recovery | None]:
    """The roadmap at the base, and what is held out of normal selection:
    survivors, branches a live run works on, and recovery's candidates."""
    roadmap = roadmap_at(repo, eff.base_oid) or Roadmap()
    tasks = roadmap.tasks
    result.unparsed = roadmap.unparsed
    live = live_workspace_branches(repo)
    waiting = proposed.held(proposed.live(repo, eff.remote, eff.base))  # open requests: held, never failed [F2]
    keys = {s.key for s in waiting}
    held = waiting + [s for s in select.survivors(repo, tasks, live) + addenda.held(repo, eff, tasks, live)
                      if s.key not in keys]
    result.skipped.extend(held)
    held_ids = {s.key for s in held}
    found = recovery.discover(repo, eff, tasks, set(live)) if eff.resumePartialBranches else None
    if found is not None:
        held_ids |= found.held
        result.recovery = found.document()
    return tasks, held_ids, found


def _launch(repo: Repo, eff: config.Effective, options: config.Options, result: WorkflowResult,
            lease: leases.Lease, wait_for_provider: float | None,
            notifier: notify.Notifier | None = None) -> WorkflowResult:
    result.proposals = [seen.document() for seen in proposed.reconcile(repo, eff.remote, eff.base, eff.base_oid)]
    tasks, held_ids, found = _select(repo, eff, result)
    settle.sweep_landed(repo, tasks, eff.base_oid)  # what a clean-up after a push could not delete, last time
    workflow_id = result.workflowId
    if _preflight_blocks(repo, eff, result, where_of(eff, options)):
        if found is not None:  # a fatal auth preflight blocks recovery entirely
            recovery.recover(repo, eff, found, workflow_id, tasks, blocked=recovery.AUTH_PREFLIGHT_FAILED)
            recovery.settle(repo, found, result, where_of(eff, options))  # read only: every survivor stays unresolved
            result.summary += recovery.summary_suffix(result)
        return result
    # git-harn's own config write, made before the seal is taken: one made while agents
    # run would seal the file as it then is, with whatever an agent wrote a moment before [T2]
    show_notes_in_log(repo)
    seal = Seal(repo, workflow_id, record.run_folder(repo, workflow_id) / "tamper")
    become_subreaper()  # a daemon an agent leaves is adopted by this process, and ended (proc.end_adopted)
    try:
        with seal.installed():  # from here on, every stage is checked against it [T2]
            return _sealed(repo, eff, options, result, lease, wait_for_provider, tasks, held_ids, found, seal,
                           notifier)
    finally:
        end_adopted()



def _sealed(repo: Repo, eff: config.Effective, options: config.Options, result: WorkflowResult,
            lease: leases.Lease, wait_for_provider: float | None, tasks: list[Task], held_ids: set[str],
            found: recovery.Recovery | None, seal: Seal, notifier: notify.Notifier | None = None) -> WorkflowResult:
    workflow_id = result.workflowId
    claims = None
    if eff.claims:
        claims = claiming.Claims(repo, eff.remote, eff.base, workflow_id, eff.claimHeartbeat)
        claims.preflight()  # a remote that refuses claims stops the run before anything is made
        claims.drop_landed(eff.base_oid)  # a killed run's claims of tasks it landed guard nothing
    if found is not None:
        recovery.recover(repo, eff, found, workflow_id, tasks)
        result.recovery = found.document()
    scheduler = Scheduler(repo, eff, result, tasks, held_ids, Progress(options.quiet), claims, lease,
                          wait_for_provider, seal, found, where_of(eff, options))
    if notifier is not None:
        scheduler.notifier = notifier
        notifier.watch(scheduler.breakers, result)
    return scheduler.run()


def where_of(eff: config.Effective, options: config.Options) -> state.Where:
    """The remote and base of this run, and the flags that chose them, for advice that runs as printed."""
    remote = ("--remote", options.remote) if options.remote else ()
    flags = remote + (("--base", options.base) if options.base else ())
    given = flags
    # a relaunch printed for a pull-request run must not push onto the base, nor open no request [F1]
    flags += ("--land", options.land) if options.land else ()
    flags += ("--forge", options.forge) if options.forge else ()
    flags += ("--forge-url", options.forge_url) if options.forge_url else ()
    if options.auto_merge is not None:
        flags += ("--auto-merge" if options.auto_merge else "--no-auto-merge",)
    # integrate reads no workflow.toml: what the file said of landing is given to it by flag [L4]
    landing = state.landing_flags(eff.land.value, eff.forge, eff.forgeUrl, eff.autoMerge)
    return state.Where(eff.remote, eff.base, flags, given + landing)


def _preflight_blocks(repo: Repo, eff: config.Effective, result: WorkflowResult, where: state.Where) -> bool:
    """A failing auth preflight is fatal: nothing is created, no agent runs."""
    result.preflight = preflight.run_preflight(repo, eff, result.workflowId)
    if result.preflight is None or result.preflight["ok"]:
        return False
    result.blocked = preflight.AUTH_PREFLIGHT_FAILED
    result.halted = one_line(str(result.preflight["detail"]), 500)
    result.finished = True
    result.finishedAt = now_iso()
    result.summary = f"0 tasks: blocked: {preflight.AUTH_PREFLIGHT_FAILED}"
    result.next = state.Next(where.workflow_run(), "nothing was started: once the credential the preflight "
                             "checks works again, a relaunch starts the run").document()
    return True


def _dry_run(repo: Repo, result: WorkflowResult, eff: config.Effective, tasks: list[Task],
             held: set[str]) -> WorkflowResult:
    """What a run would start now; creates no ref, branch, worktree or record, runs no agent."""
    if eff.claims:  # read only: which selectable tasks another machine holds
        claimed = claiming.claimed_elsewhere(repo, eff.remote, [t.id for t in tasks if t.id not in held])
        result.skipped.extend(claimed)
        held |= {s.taskId for s in claimed}
    chosen = select.selectable(tasks, set(), held)
    if eff.maxTasks is not None:
        chosen = chosen[: eff.maxTasks]
    for task in chosen:
        planned = task_result(result.workflowId, task)
        state.track(planned, State.PLANNED, None)
        planned.detail = f"would start {planned.branch} at {eff.upstream} ({str(eff.base_oid)[:12]})"
        result.tasks.append(planned)
        result.selected.append(task.id)
    limited = eff.maxTasks is not None and len(select.selectable(tasks, set(), held)) > len(chosen)
    result.skipped.extend(select.left_out(tasks, set(result.selected), held, limited))
    result.remediation = remediation.dry_run()
    result.finished = True
    result.finishedAt = now_iso()
    result.summary = result.make_summary() + " (dry run)"
    return result
