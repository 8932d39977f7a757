"""``git harn workflow run|show|list|init``: drive roadmap tasks through stage
agents, gates, dual review and integration (SPEC §7)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import click

from git_harn.commands.common import json_option, repository
from git_harn.commands.render import show, table
from git_harn.text import one_line
from git_harn.workflow import record
from git_harn.workflow.config import Options
from git_harn.workflow.result import InitResult, StoredWorkflow, WorkflowList, WorkflowResult
from git_harn.workflow.runner import run_workflow
from git_harn.workflow.scaffold import init as init_workflow


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
@json_option
def run(base: str | None, remote: str | None, max_tasks: int | None, parallel: int | None,
        dry_run: bool, as_json: bool) -> int:
    """Select unblocked roadmap tasks on REMOTE/BASE and drive each to integration."""
    result = run_workflow(repository(), Options(base, remote, max_tasks, parallel, dry_run, as_json))
    return show(result, as_json, _view)


def _task_lines(tasks: Iterable[dict[str, Any]]) -> list[str]:
    rows = []
    for t in tasks:
        where = t.get("stage") or ""
        rows.append([t["taskId"], t["status"], where if t["status"] != "done" else "", t["branch"],
                     one_line(t.get("detail") or "", 100)])
    return table(["TASK", "STATUS", "STAGE", "BRANCH", "DETAIL"], rows).splitlines() if rows else []


def _common(doc: dict[str, Any]) -> list[str]:
    lines = [f"workflow {doc['workflowId']} on {doc['remote']}/{doc['base']} ({doc['baseOid'][:12]})"
             + (" — dry run" if doc.get("dryRun") else "")]
    lines += _task_lines(doc.get("tasks", []))
    for s in doc.get("skipped", []):
        lines.append(f"skipped {s['taskId']}: {s['reason']}" + (f" ({s['detail']})" if s.get("detail") else ""))
    if doc.get("dryRun"):
        for stage, agent in doc.get("agents", {}).items():
            command = agent["command"] if agent["command"] == "builtin" else " ".join(agent["command"])
            lines.append(f"agent {stage}: {command}")
    if doc.get("halted"):
        lines.append(f"halted: {doc['halted']}")
    remediation = doc.get("remediation") or {}
    if remediation.get("state") not in (None, "nothing-to-flush", "dry-run"):
        lines.append(f"remediation {remediation['state']}: {one_line(remediation.get('detail') or '', 200)}")
    lines.append(doc.get("summary", ""))
    for t in doc.get("tasks", []):
        if t["status"] in ("failed", "blocked", "halted") and t.get("runId"):
            lines.append(f"next for {t['branch']}: git harn assess {t['branch']} --task {t['taskId']}; "
                         f"then git harn reclaim {t['runId']} or git harn cleanup {t['runId']}")
    return lines


def _view(result: WorkflowResult) -> Iterable[str]:
    return _common(result.document())


@workflow.command(name="show")
@click.argument("workflow_id", required=False)
@json_option
def show_cmd(workflow_id: str | None, as_json: bool) -> int:
    """Show a workflow's result (default: the newest)."""
    repo = repository()
    stored = record.read(repo, workflow_id) if workflow_id else record.latest(repo)
    found = StoredWorkflow(stored.body, record.events(repo, stored.workflowId))

    def view(item: StoredWorkflow) -> Iterable[str]:
        lines = _common(item.body)
        lines.append("events (newest first):")
        lines += [f"  {e['subject']}" for e in item.events]
        return lines

    return show(found, as_json, view)


@workflow.command(name="list")
@json_option
def list_cmd(as_json: bool) -> int:
    """List the workflow records in this repository (fetched ones too)."""
    result = WorkflowList()
    for item in record.list_all(repository()):
        if isinstance(item, record.Stored):
            body = item.body
            result.workflows.append({
                "workflowId": item.workflowId, "startedAt": str(body.get("startedAt", "")),
                "finishedAt": body.get("finishedAt"), "base": str(body.get("base", "")),
                "remote": str(body.get("remote", "")), "outcome": str(body.get("outcome", "")),
                "summary": str(body.get("summary", ""))})
        else:
            result.unreadable.append({"ref": item[0], "error": item[1]})
    result.workflows.sort(key=lambda w: (w["startedAt"], w["workflowId"]))

    def view(item: WorkflowList) -> Iterable[str]:
        rows = [[w["workflowId"], w["startedAt"], w["outcome"], w["summary"]] for w in item.workflows]
        lines = table(["WORKFLOW", "STARTED", "OUTCOME", "SUMMARY"], rows).splitlines() if rows else [
            "no workflow records"]
        lines += [f"unreadable {u['ref']}: {u['error']}" for u in item.unreadable]
        return lines

    return show(result, as_json, view)


@workflow.command(name="init")
@json_option
def init_cmd(as_json: bool) -> int:
    """Write a starter .harn/workflow.toml and .harn/prompts/ (nothing is overwritten)."""
    result = init_workflow(repository())

    def view(item: InitResult) -> Iterable[str]:
        lines = [f"wrote {name}" for name in item.written] + [f"kept {name} (exists)" for name in item.kept]
        if item.written:
            lines.append("edit them, then commit and push: the workflow reads them from <remote>/<base>")
        return lines

    return show(result, as_json, view)
