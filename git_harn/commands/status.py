"""status and log: looking at workspaces and runs [W4] [W6]."""

from __future__ import annotations

import time
from typing import Any

import click

from git_harn.commands.common import json_option, repository, run_id_arg
from git_harn.commands.render import emit_json, table
from git_harn.errors import BadInput
from git_harn.store import runs as store
from git_harn.text import jsonable, printable_path
from git_harn.workspace.status import DEFAULT_LIMIT, StatusReport, collect_status


@click.command()
@click.argument("run_id", required=False)
@click.option("--all", "include_terminal", is_flag=True, help="Include released and gone workspaces.")
@click.option("--limit", default=DEFAULT_LIMIT, show_default=True, type=int,
              help="Dirty paths to list per workspace.")
@json_option
def status(run_id: str | None, include_terminal: bool, limit: int, as_json: bool) -> int:
    """List workspaces, their state and their uncommitted paths."""
    report = collect_status(repository(), run_id, include_terminal, limit)
    if as_json:
        emit_json(_status_document(report))
    else:
        _show_status(report)
    for bad in report.errors:
        click.echo(f"git harn: error: {bad.error}", err=True)
    return 1 if report.errors else 0


def _status_document(report: StatusReport) -> dict[str, Any]:
    document: dict[str, Any] = {"schemaVersion": 1, "workspaces": jsonable(report.workspaces)}
    if report.errors:
        document["errors"] = [{"ref": e.ref, "error": e.error} for e in report.errors]
    return document


def _show_status(report: StatusReport) -> None:
    if not report.workspaces:
        click.echo("no workspaces" if not report.errors else "no readable workspaces")
        return
    rows = []
    for ws in report.workspaces:
        dirty = "-" if ws.state in ("released", "already_gone") else str(ws.dirtyCount)
        where = f"remote ({ws.host})" if ws.location == "remote" else printable_path(ws.path)
        rows.append([ws.runId, ws.workspaceId, ws.state, str(ws.attempts), ws.branch, dirty, where])
    lines = table(["RUN", "WORKSPACE", "STATE", "TRIES", "BRANCH", "DIRTY", "PATH"], rows).split("\n")
    click.echo(lines[0])
    for ws, line in zip(report.workspaces, lines[1:], strict=False):
        click.echo(line)
        for entry in ws.dirtyPaths:
            click.echo(f"    {entry.status} {printable_path(entry.path)}")
        if ws.dirtyMore:
            click.echo(f"    … and {ws.dirtyMore} more")
        if ws.error:
            click.echo(f"    error: {ws.error}")
        if ws.diverged:
            click.echo(f"    {diverged_line(ws.diverged)}")
        if ws.next and ws.state != "active":
            click.echo(f"    resolve: {'  or  '.join(ws.next)}")


@click.command()
@click.argument("run_id")
@json_option
def log(run_id: str, as_json: bool) -> int:
    """Show a run's event history, newest first."""
    repo = repository()
    run_id = run_id_arg(run_id)
    if store.read(repo, run_id) is None:
        raise BadInput(f"unknown run id: {run_id}")
    events = store.history(repo, run_id)
    stored = store.read(repo, run_id)
    diverged = stored.record.extra.get("diverged") if stored else None
    if as_json:
        document: dict[str, Any] = {"schemaVersion": 1, "runId": run_id, "events": [
            {"commit": str(e.oid), "time": e.time, "event": e.event,
             "summary": e.summary, "state": e.state} for e in events]}
        if diverged:
            document["diverged"] = diverged
        emit_json(document)
        return 0
    if diverged:
        click.echo(diverged_line(diverged))
    rows = [[str(e.oid)[:12], time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time)),
             e.state, f"{e.event}: {e.summary}"] for e in events]
    click.echo(table(["COMMIT", "TIME", "STATE", "EVENT"], rows))
    return 0


def diverged_line(diverged: Any) -> str:
    """One line on a chain that sync merged after it diverged."""
    if not isinstance(diverged, dict):
        return "diverged: the chain was merged by sync"
    hosts = ", ".join(str(h) for h in diverged.get("hosts") or []) or "?"
    fields = ", ".join(str(f) for f in diverged.get("fields") or []) or "none"
    return (f"diverged: written on {hosts}, merged by sync from {str(diverged.get('base', '?'))[:12]}; "
            f"conflicting fields ({fields}) decided by {diverged.get('decidedBy', '?')}")
