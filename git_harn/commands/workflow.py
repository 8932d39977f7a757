"""``git harn workflow run|show|watch|report|list|init|check|claims|discard``: drive roadmap tasks through
stage agents, gates, dual review and integration [R1], and show what a run did."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from git_harn.commands.common import confirm, json_option, repository
from git_harn.commands.render import show, table, terminal_width, wrapped_table
from git_harn.errors import BadInput
from git_harn.notices import interactive, warn
from git_harn.proc import exit_status
from git_harn.store.record import RELEASED
from git_harn.tasks.config import LandMode, ResumeMode
from git_harn.tasks.roadmap import work_key
from git_harn.text import clip, one_line
from git_harn.workflow.after import proposals as proposed
from git_harn.workflow.after.settle import SettleResult, settle
from git_harn.workflow.agents import spend
from git_harn.workflow.agents.adapters.starter import AGENT_CHOICES
from git_harn.workflow.ledger import record
from git_harn.workflow.ledger.claims import Claim, ClaimsResult, claim_settings, list_claims, release_claim
from git_harn.workflow.ledger.claims import take_over as take_over_claim
from git_harn.workflow.model.config import Options
from git_harn.workflow.model.result import InitResult, StoredWorkflow, WorkflowList, WorkflowResult
from git_harn.workflow.model.state import State
from git_harn.workflow.run.launch import run_workflow

if TYPE_CHECKING:  # a command that does not run a workflow loads its module when asked
    from git_harn.workflow.after.discard import DiscardResult
    from git_harn.workflow.agents.check import WorkflowCheck
    from git_harn.workflow.page.write import ReportWritten

DETAIL_LIMIT = 2000  # a detail is one line of at most this many characters, whole in the table


@click.group()
def workflow() -> None:
    """Run roadmap tasks unattended: plan, implement, gates, dual review, integrate."""


@workflow.command()
@click.option("--base", metavar="BRANCH", help="Branch on the remote tasks land on (default: workflow.base, "
              "harn.base, main).")
@click.option("--remote", metavar="NAME", help="Remote that is the source of truth (default: origin).")
@click.option("--max-tasks", type=int, metavar="N", help="Start at most N tasks.")
@click.option("--parallel", type=int, metavar="N", help="Run up to N tasks at once.")
@click.option("--dry-run", is_flag=True, help="Show what would run; create nothing, run no agent.")
@click.option("--claims/--no-claims", "claims", default=None,
              help="Claim each task on the remote first, for several machines on one roadmap "
              "(default: workflow.claims, off).")
@click.option("--claim-heartbeat", type=float, metavar="SECONDS",
              help="Refresh a running task's claim this often (default: workflow.claimHeartbeat, 60).")
@click.option("--claim-stale-after", type=float, metavar="SECONDS",
              help="A claim with an older heartbeat is stale (default: workflow.claimStaleAfter, 900).")
@click.option("--resume-partial-branches/--no-resume-partial-branches", default=None,
              help="Recover roadmap-* branches an earlier run left (default: workflow.resumePartialBranches, off).")
@click.option("--resume-mode", type=click.Choice([mode.value for mode in ResumeMode]), default=None,
              help="How far recovery may go: assess (report only), review, continue (default: assess).")
@click.option("--max-recovery-candidates", type=int, metavar="N", help="Recover at most N branches (default 20).")
@click.option("--idle-timeout", type=float, metavar="SECONDS",
              help="Seconds a claude or codex agent may print no event before it counts as hung (default 600).")
@click.option("--stage-attempts", type=int, metavar="N", help="Attempts of a stage in place after infra faults "
              "(default: workflow.stageAttempts, 3).")
@click.option("--schema-retries", type=int, metavar="N", help="Reruns of a stage agent whose report is invalid, "
              "with the error (default: workflow.schemaRetries, 2).")
@click.option("--assess-partial-branches/--no-assess-partial-branches", default=None,
              help="Assess the surviving branch of a failed task and salvage its ExecPlans (default: on).")
@click.option("--wait-for-provider", "wait_for_provider", is_flag=False, flag_value="", default=None,
              metavar="[=MAX]", help="When a provider fault names a reset time, wait for it (at most MAX: "
              "seconds, or 30m, 5h; default 6h), then go on, instead of skipping the tasks left.")
@click.option("--sandbox", type=click.Choice(["auto", "bwrap", "off"]), default=None,
              help="What agents and gates run in (default: harn.sandbox in your global config, else "
              "workflow.sandbox, else auto: bubblewrap where it runs).")
@click.option("--max-cost-usd", type=float, metavar="DOLLARS",
              help="Start no agent stage once the stages that ended cost this much (default: "
              "workflow.maxCostUsd, none).")
@click.option("--hard-limit", is_flag=True, help="At the spending limit, stop the agent stages still running too.")
@click.option("--notify", metavar="COMMAND", help="Run COMMAND with a JSON event on stdin when the run needs a "
              "person, halts or finishes (default: harn.notify in your global config; \"\": none).")
@click.option("--land", type=click.Choice([m.value for m in LandMode]), default=None,
              help="Push each judged squash onto the base, or propose it as a pull request from "
              "harnery/land/<id> (default: workflow.land, else push).")
@click.option("--auto-merge/--no-auto-merge", "auto_merge", default=None,
              help="With --land pull-request: ask the forge to merge each request once its checks pass, where "
              "the repository allows it (default: workflow.autoMerge, off).")
@click.option("--forge", metavar="NAME", help="With --land pull-request: github, gitlab or gitea (forgejo) "
              "(default: workflow.forge, else what the remote's URL says; none: the landing branch alone).")
@click.option("--forge-url", metavar="URL", help="With --land pull-request: where the forge's API is, when the "
              "remote's URL does not say (default: workflow.forgeUrl).")
@json_option
def run(base: str | None, remote: str | None, max_tasks: int | None, parallel: int | None,
        dry_run: bool, claims: bool | None, claim_heartbeat: float | None, claim_stale_after: float | None,
        resume_partial_branches: bool | None, resume_mode: str | None,
        max_recovery_candidates: int | None, idle_timeout: float | None, stage_attempts: int | None,
        schema_retries: int | None, assess_partial_branches: bool | None, wait_for_provider: str | None,
        sandbox: str | None, max_cost_usd: float | None, hard_limit: bool, notify: str | None, land: str | None,
        auto_merge: bool | None, forge: str | None, forge_url: str | None,
        as_json: bool) -> int:
    """Select unblocked roadmap tasks on REMOTE/BASE and drive each to integration."""
    result = run_workflow(repository(), Options(base, remote, max_tasks, parallel, dry_run, as_json,
                                                claims=claims, claim_heartbeat=claim_heartbeat,
                                                claim_stale_after=claim_stale_after,
                                                resume_partial_branches=resume_partial_branches,
                                                resume_mode=resume_mode,
                                                max_recovery_candidates=max_recovery_candidates,
                                                idle_timeout=idle_timeout,
                                                stage_attempts=stage_attempts, schema_retries=schema_retries,
                                                assess_partial_branches=assess_partial_branches,
                                                wait_for_provider=wait_for_provider, sandbox=sandbox,
                                                max_cost_usd=max_cost_usd, hard_limit=hard_limit,
                                                notify=notify, land=land, auto_merge=auto_merge,
                                                forge=forge, forge_url=forge_url))
    return show(result, as_json, _view)


def _task_lines(tasks: list[dict[str, Any]], costs: bool) -> list[str]:
    """One row a task; DETAIL whole, wrapped to the terminal (whole lines when piped);
    COST when an agent reported usage or the run had a spending limit."""
    rows = []
    for t in tasks:
        landed = State.of(t).landed
        cost = [spend.cost_text(t.get("usage"))] if costs else []
        rows.append([t["taskId"], t["status"], "" if landed else t.get("stage") or "", t["branch"], *cost,
                     one_line(t.get("detail") or "", DETAIL_LIMIT)])
    if not rows:
        return []
    head = ["TASK", "STATUS", "STAGE", "BRANCH", *(["COST"] if costs else []), "DETAIL"]
    return wrapped_table(head, rows, terminal_width()).splitlines()


def _cost_lines(doc: dict[str, Any]) -> list[str]:
    """Cost by stage of each task that has usage, and the run's spending (measured, marked where unknown)."""
    lines = [f"cost of {t['taskId']}: {spend.stage_costs(t['usage'])}" for t in doc.get("tasks", [])
             if spend.stage_costs(t.get("usage"))]
    if doc.get("usage"):
        lines.append(f"cost of the run: {spend.cost_text(doc['usage'])}")
    limit = spend.spending_text((doc.get("breakers") or {}).get("spending"))
    return lines + ([limit] if limit else [])


def _workspace_lines(tasks: list[dict[str, Any]]) -> list[str]:
    """Which workspaces cleanup released and which it kept, and why [P2]."""
    released = [work_key(t["taskId"], t.get("addendum"))
                for t in tasks if (t.get("workspace") or {}).get("state") == RELEASED]
    lines = [f"workspaces released: {', '.join(released)}"] if released else []
    for t in tasks:
        ws = t.get("workspace") or {}
        if ws.get("state") not in (None, RELEASED):
            lines.append(f"workspace of {t['branch']} {ws['state']}: {ws.get('reason') or ''}".rstrip(": "))
    return lines


def _common(doc: dict[str, Any]) -> list[str]:
    lines = [f"workflow {doc['workflowId']} on {doc['remote']}/{doc['base']} ({doc['baseOid'][:12]})"
             + (" — dry run" if doc.get("dryRun") else "")]
    costs = any(t.get("usage") for t in doc.get("tasks", [])) or bool((doc.get("breakers") or {}).get("spending"))
    lines += _task_lines(doc.get("tasks", []), costs)
    lines += _cost_lines(doc) if costs else []
    lines += _workspace_lines(doc.get("tasks", []))
    for t in doc.get("tasks", []):
        if t.get("proposal"):
            p = t["proposal"]
            lines.append(f"proposal {t['taskId']}: {p.get('url') or p['branch']} ({p.get('state') or 'open'}, "
                         f"{p['head'][:12]})")
    for p in doc.get("proposals") or []:
        lines.append(f"reconciled {p['key']}: {p['state']} → {p['became']}" + (f" ({p['how']})" if p["how"] else ""))
    for s in doc.get("skipped", []):
        lines.append(f"skipped {s['taskId']}: {s['reason']}" + (f" ({s['detail']})" if s.get("detail") else ""))
    lines += [f"unparsed line {u['line']}: {u['text']} ({u['reason']})" for u in doc.get("unparsed", [])]
    if doc.get("dryRun"):
        for stage, agent in doc.get("agents", {}).items():
            command = agent["command"] if agent["command"] == "builtin" else " ".join(agent["command"])
            lines.append(f"agent {stage}: {command}")
    claims = doc.get("claims")
    if claims:
        lines.append(f"claims on {claims['remote']}: {len(claims['made'])} made, {len(claims['lost'])} lost, "
                     f"{len(claims['released'])} released, {sum(claims['refreshed'].values())} refreshed"
                     + (f", {len(claims['kept'])} kept" if claims["kept"] else ""))
        lines += [f"claim kept on {k['taskId']}: {k['reason']}" for k in claims["kept"]]
    lines += _recovery_lines(doc.get("recovery"))
    lines += [f"settled {dead['summary']}" for dead in doc.get("settled") or []]
    if doc.get("halted"):
        lines.append(f"halted: {doc['halted']}")
    if (doc.get("next") or {}).get("command"):
        lines.append(f"next: {doc['next']['command']}")
        lines.append(f"  ({doc['next']['why']})")
    remediation = doc.get("remediation") or {}
    if remediation.get("state") not in (None, "nothing-to-flush", "dry-run"):
        lines.append(f"remediation {remediation['state']}: {one_line(remediation.get('detail') or '', 200)}")
    lines.append(doc.get("summary", ""))
    for t in doc.get("tasks", []):
        if t.get("assessment"):
            lines.append(f"assessed {t['branch']}: {t['assessment']['classification']} "
                         f"({', '.join(t['assessment']['reasons'])})")
        if t.get("salvage") and t["salvage"].get("committed"):
            lines.append(f"salvaged ExecPlans on {t['branch']} at {str(t['salvage']['sha'])[:12]}")
        lines += _failed_gate_lines(t)
        step = t.get("next") or {}
        if step.get("command"):  # state.advice: from the facts at the task's end, runs as printed
            lines.append(f"next for {t['branch']}: {step['command']}")
            lines.append(f"  ({step['why']})")
        elif t.get("recordedNext"):  # workflow show: the recorded step is done
            lines.append(f"next for {t['branch']}: nothing: {step['why']}")
    return lines


def _failed_gate_lines(task: dict[str, Any]) -> list[str]:
    """Each failed gate of the task: its command, its exit, the end of its output."""
    lines = []
    for gate in (task.get("gates") or {}).get("commands", []):
        if gate.get("exitCode") != 0 and "outputTail" in gate:
            lines.append(f"gate of {task['taskId']} failed: {clip(shlex.join(gate['argv']), 120)} "
                         f"({exit_status(gate['exitCode'])})")
            lines += [f"  | {line}" for line in gate["outputTail"].splitlines()]
    return lines


def _recovery_lines(rec: dict[str, Any] | None) -> list[str]:
    if not rec:
        return []
    lines = [f"recovery ({rec['mode']}): {len(rec['candidates'])} candidate(s), {len(rec['assessed'])} assessed, "
             f"{len(rec['resumed'])} resumed" + (f"; blocked: {rec['blocked']}" if rec.get("blocked") else "")]
    for r in rec["results"]:
        why = f" ({r['reason']})" if r.get("reason") else ""
        lines.append(f"  {r['branch']}: {r['classification'] or '-'} -> {r['action']}{why}"
                     + (f", {r['status']}" if r.get("status") else ""))
    for s in rec["skipped"]:
        if not any(r["branch"] == s["branch"] for r in rec["results"]):
            lines.append(f"  {s['branch']}: skipped, {s['reason']}")
    for u in rec.get("unresolved") or []:
        step = u.get("next") or {}
        if step.get("command"):
            lines.append(f"next for {u['branch']}: {step['command']}")
            lines.append(f"  ({step['why']})")
    return lines


def _view(result: WorkflowResult) -> Iterable[str]:
    return _common(result.document())


_STALE_AFTER = click.option("--stale-after", type=float, metavar="SECONDS",
                            help="Another host's running record without a heartbeat for this long is stale "
                            "(default: harn.workflowStaleAfter, 1800).")


@workflow.command(name="show")
@click.argument("workflow_id", required=False)
@_STALE_AFTER
@json_option
def show_cmd(workflow_id: str | None, stale_after: float | None, as_json: bool) -> int:
    """Show a workflow's result (default: the newest)."""
    found = proposed.show_record(repository(), workflow_id, stale_after)

    def view(item: StoredWorkflow) -> Iterable[str]:
        body = item.body
        lines = _common(body) + _state_lines(body)
        lines += _settled_lines(body)
        lines.append("events (newest first):")
        lines += [f"  {e['subject']}" for e in item.events]
        return lines

    return show(found, as_json, view)


def _state_lines(body: dict[str, Any]) -> list[str]:
    """What became of a record's runner, and the step that settles a dead one."""
    runner = body.get("runner") or {}
    if body.get("runnerState") is None:
        return []
    state = record.outcome_text(body.get("outcome"), body["runnerState"], runner.get("heartbeatAt"))
    lines = [f"state: {state}" + (f" (runner pid {runner.get('pid')} on {runner.get('host')})" if runner else "")]
    step = record.settle_step(body)
    if step is not None:
        lines.append(f"next: {step}")
    return lines


def _settled_lines(body: dict[str, Any]) -> list[str]:
    lines = []
    closed = body.get("closed")
    if closed:
        lines.append(f"closed by {closed['by']} at {closed['at']}: {len(closed.get('tasksLeft') or [])} task(s) "
                     "left by a dead runner")
    for dead in body.get("settled") or []:
        lines.append(f"settled {dead['summary']}")
    return lines


@workflow.command(name="watch")
@click.argument("workflow_id", required=False)
@click.option("--plain", is_flag=True, help="Print the lines that changed, one after another, even on a terminal.")
@click.option("--sync", "sync_every", type=float, metavar="SECONDS",
              help="Run git harn sync this often (and first), to watch a run on another machine.")
@_STALE_AFTER
def watch_cmd(workflow_id: str | None, plain: bool, sync_every: float | None, stale_after: float | None) -> int:
    """Watch a run as it goes (default: the newest running one); q or Ctrl-C leaves, the run goes on."""
    from git_harn.commands.screen import screen_for
    from git_harn.workflow.page.watch import Watched, watch

    repo = repository()
    sync = None
    if sync_every is not None:
        from git_harn.sync.engine import sync as run_sync

        def sync() -> str:
            return run_sync(repo, None).summary

    with screen_for(plain) as screen:
        result = watch(repo, workflow_id, screen, stale_after, sync, sync_every)

    def view(item: Watched) -> Iterable[str]:
        if item.left:
            return [f"left the watch of {item.workflowId}; the run goes on "
                    f"(git harn workflow watch {item.workflowId} looks again)"]
        return _common(item.body) + _state_lines(item.body)

    return show(result, False, view)


@workflow.command(name="report")
@click.argument("workflow_id", required=False)
@click.option("--output", "-o", type=click.Path(path_type=Path), metavar="FILE.html",
              help="Write the page here (default: report.html beside the run's stage files).")
@click.option("--open", "open_page", is_flag=True, help="Open the page in a browser (BROWSER, else the desktop's).")
@json_option
def report_cmd(workflow_id: str | None, output: Path | None, open_page: bool, as_json: bool) -> int:
    """Write a workflow run (default: the newest) as one HTML page: timeline, tasks, totals."""
    from git_harn.workflow.page.write import write_report

    result = write_report(repository(), workflow_id, output, open_page)

    def view(item: ReportWritten) -> Iterable[str]:
        yield shown_path(Path(item.path))
        if item.opened is False:
            warn(item.openDetail)

    return show(result, as_json, view)


def _age_text(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds // 60}m" if seconds < 3600 else f"{seconds / 3600:.1f}h" if seconds < 86400 else \
        f"{seconds / 86400:.1f}d"


def shown_path(path: Path) -> str:
    """A path as git prints one: relative to the current folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@workflow.command(name="list")
@_STALE_AFTER
@click.option("--all", "every", is_flag=True, help="Name the proposals that ended (merged, closed) too, "
              "not only the live ones.")
@json_option
def list_cmd(stale_after: float | None, every: bool, as_json: bool) -> int:
    """List the workflow records in this repository (fetched ones too)."""
    result = proposed.listing(repository(), stale_after, every)

    def view(item: WorkflowList) -> Iterable[str]:
        rows = [[w["workflowId"], w["startedAt"], record.outcome_text(w["outcome"], w["runnerState"], w["heartbeatAt"]),
                 spend.cost_text(w.get("usage")), w["summary"]] for w in item.workflows]
        lines = table(["WORKFLOW", "STARTED", "OUTCOME", "COST", "SUMMARY"], rows).splitlines() if rows else [
            "no workflow records"]
        lines += [f"unreadable {u['ref']}: {u['error']}" for u in item.unreadable]
        if item.proposals:
            lines += ["proposals:"] + table(["TASK", "STATE", "REQUEST", "OPEN FOR"], [
                [p["key"], p["state"], p["url"] or f"{p['branch']} on {p['remote']}",
                 _age_text(p["ageSeconds"])] for p in item.proposals]).splitlines()
        return lines

    return show(result, as_json, view)


@workflow.command(name="init")
@click.option("--agent", type=click.Choice(AGENT_CHOICES), help="Stage agents through the Claude Code or "
              "Codex CLI adapter (default: a placeholder command).")
@json_option
def init_cmd(agent: str | None, as_json: bool) -> int:
    """Write a starter .harn/workflow.toml and .harn/prompts/ (nothing is overwritten)."""
    from git_harn.workflow.agents.scaffold import init as init_workflow

    result = init_workflow(repository(), agent)

    def view(item: InitResult) -> Iterable[str]:
        lines = [f"wrote {name}" for name in item.written] + [f"kept {name} (exists)" for name in item.kept]
        if item.written:
            lines.append("edit them, then commit and push: the workflow reads them from <remote>/<base>")
        return lines

    return show(result, as_json, view)


@workflow.command(name="check")
@click.option("--base", metavar="BRANCH", help="Branch whose configuration to check (as for run).")
@click.option("--remote", metavar="NAME", help="Remote that is the source of truth (default: origin).")
@click.option("--live", is_flag=True, help="Also send each claude/codex agent a tiny no-op prompt (costs tokens).")
@json_option
def check_cmd(base: str | None, remote: str | None, live: bool, as_json: bool) -> int:
    """Check that every configured stage agent can run; say what is missing."""
    from git_harn.workflow.agents.check import check as check_agents

    result = check_agents(repository(), Options(base, remote), live)

    def view(item: WorkflowCheck) -> Iterable[str]:
        rows = []
        for a in item.agents:
            command = a["command"] if a["command"] == "builtin" else " ".join(a["command"])
            state = "ok" if a["ok"] else "MISSING" if a["found"] is None and a["command"] != "builtin" else "FAILED"
            rows.append([a["stage"], a["adapter"], command, a["version"] or "", state])
        lines = table(["STAGE", "ADAPTER", "COMMAND", "VERSION", "CHECK"], rows).splitlines()
        lines += [f"{a['stage']}: {problem}" for a in item.agents for problem in a["problems"]]
        lines += [f"warning: {i['key']} is set in the repository's own config ({i['scope']}): a run ignores "
                  "it (an agent can write there); set it in your global config or .harn/workflow.toml"
                  for i in item.ignored]
        lines.append(f"sandbox: {item.sandbox['words']}")
        lines.append(f"configuration at {item.remote}/{item.base}: "
                     + ("every agent can run" if item.ok else "some agents cannot run")
                     + (" (live)" if item.live else ""))
        return lines

    return show(result, as_json, view)


@workflow.command(name="claims")
@click.option("--remote", metavar="NAME", help="Remote that holds the claims (default: workflow.remote, origin).")
@click.option("--base", metavar="BRANCH", help="Branch whose .harn/workflow.toml says claimStaleAfter "
              "(default: harn.base, main).")
@click.option("--stale-after", type=float, metavar="SECONDS",
              help="A claim with an older heartbeat is stale (default: workflow.claimStaleAfter, 900).")
@click.option("--take-over", "take_over", metavar="TASK-ID",
              help="Replace TASK-ID's stale claim with this clone's (asks on a terminal, else --yes).")
@click.option("--release", metavar="TASK-ID",
              help="Delete TASK-ID's claim held by this clone (after a take-over, once its branch is settled).")
@click.option("--yes", is_flag=True, help="Confirm --take-over or --release without asking.")
@json_option
def claims_cmd(remote: str | None, base: str | None, stale_after: float | None, take_over: str | None,
               release: str | None, yes: bool, as_json: bool) -> int:
    """List the task claims on the remote (host, age, stale), or take a stale one over."""
    repo = repository()
    where = claim_settings(repo, remote, base, stale_after)

    def ask(claim: Claim) -> bool:
        return yes or confirm(f"Take over the claim on task {claim.claimId} held by {claim.holder()} "
                              f"(heartbeat {claim.text('heartbeatAt') or '?'})?")

    if take_over is not None and release is not None:
        raise BadInput("--take-over and --release: one at a time")
    if release is not None:
        result = release_claim(repo, where.remote, release, where.stale_after,
                               lambda claim: yes or confirm(f"Release the claim on task {claim.claimId}?"))
    elif take_over is not None:
        result = take_over_claim(repo, where.remote, take_over, where.stale_after, ask)
    else:
        result = list_claims(repo, where.remote, where.stale_after, where.base)
    return show(result, as_json, _claim_lines)


def _claim_lines(result: ClaimsResult) -> Iterable[str]:
    rows = []
    for c in result.claims:
        age = "?" if c["ageSeconds"] is None else f"{c['ageSeconds']:.0f}s"
        state = "unreadable" if c["error"] else "stale" if c["stale"] else "live"
        rows.append([c["taskId"], state, c["host"] or "?", "this clone" if c["thisClone"] else (c["clone"] or "?"),
                     c["workflowId"] or "(taken over)", age])
    lines = [f"dropped the claim on task {d['taskId']} ({d['oid'][:12]}, {d['holder']}): the task has landed, "
             "it guarded nothing" for d in result.dropped]
    lines += table(["TASK", "STATE", "HOST", "CLONE", "WORKFLOW", "HEARTBEAT AGE"], rows).splitlines() if rows \
        else [f"no claims on {result.remote}"]
    stale = [c["taskId"] for c in result.claims if c["stale"] and not c["thisClone"]]
    if stale and result.takenOver is None:
        lines.append(f"stale (no heartbeat for {result.staleAfter:g}s): {', '.join(stale)}; if that machine is "
                     "dead: git harn workflow claims --take-over <task-id>")
    if result.takenOver is not None:
        took = result.takenOver
        lines.append(f"took over the claim on task {took['taskId']} from {took['from']['host'] or '?'} "
                     f"({took['from']['workflowId'] or 'a take-over'})")
        lines.append(took["next"])
    if result.released is not None:
        lines.append(f"released the claim on task {result.released['taskId']} ({result.released['oid'][:12]})")
    return lines


@workflow.command(name="discard")
@click.argument("task_id")
@click.option("--yes", is_flag=True, help="Confirm without asking.")
@json_option
def discard_cmd(task_id: str, yes: bool, as_json: bool) -> int:
    """Retire the surviving roadmap-TASK_ID branch: its work salvaged first, then the branch removed."""
    from git_harn.workflow.after.discard import discard, surviving

    repo = repository()
    branch, tip, records = surviving(repo, task_id)
    if not yes:
        if not interactive():
            raise BadInput(f"workflow discard removes {branch} (its work is salvaged first); add --yes to "
                           "confirm (nothing was changed)")
        runs = ", ".join(r.runId for r in records) or "none"
        if not confirm(f"Salvage the workspaces of {branch} (runs: {runs}) and delete {branch}"
                       f"{' at ' + str(tip)[:12] if tip else ''}?"):
            raise BadInput("workflow discard not confirmed; nothing was changed")

    def view(item: DiscardResult) -> Iterable[str]:
        for ws in item.workspaces:
            salvage = ws.get("salvage") or {}
            where = f"; work kept on {salvage['ref'].removeprefix('refs/heads/')} at {salvage['oid'][:12]}" \
                if salvage.get("ref") else ""
            yield f"reclaimed run {ws['runId']}: {ws['state']}{where}"
        if item.keptAt:
            kept = item.keptAt.removeprefix("refs/heads/")
            yield f"kept {item.branch} at {item.tip[:12] if item.tip else '?'} as {kept}"
        yield f"discard {item.outcome}: {item.reason}"

    return show(discard(repo, task_id), as_json, view)


@workflow.command(name="settle")
@click.argument("workflow_id")
@json_option
def settle_cmd(workflow_id: str, as_json: bool) -> int:
    """Settle what a dead run left: close its record, settle its workspaces, end its agents."""
    result = settle(repository(), workflow_id)

    def view(item: SettleResult) -> Iterable[str]:
        for ws in item.workspaces:
            landed = f", landed as {ws.landed[:12]}" if ws.landed else ""
            yield f"task {ws.taskId} (run {ws.runId}): {ws.action}{landed}; {ws.state or '-'}" + (
                f": {one_line(ws.reason, 200)}" if ws.reason else "")
        for group in item.groupsEnded:
            yield f"ended process group {group['pgid']}"
        for lock in item.locksRemoved:
            yield f"removed {lock}"
        yield item.summary

    return show(result, as_json, view)
