"""status and log: looking at workspaces and runs [W4] [W6]."""

from __future__ import annotations

import time
from collections.abc import Iterator

import click

from git_harn.commands.common import RunIdCommand, json_option, repository
from git_harn.commands.render import show, table
from git_harn.text import printable_path
from git_harn.workspace.log import LogResult, run_log
from git_harn.workspace.status import DEFAULT_LIMIT, StatusReport, collect_status


@click.command(cls=RunIdCommand)
@click.argument("run_id", required=False)
@click.option("--all", "include_terminal", is_flag=True, help="Include released and gone workspaces.")
@click.option("--limit", default=DEFAULT_LIMIT, show_default=True, type=int,
              help="Dirty paths to list per workspace.")
@json_option
def status(run_id: str | None, include_terminal: bool, limit: int, as_json: bool) -> int:
    """List workspaces, their state and their uncommitted paths."""
    report = collect_status(repository(), run_id, include_terminal, limit)
    code = show(report, as_json, _status_lines)
    for bad in report.errors:
        click.echo(f"git harn: error: {bad.error}", err=True)
    return code


def _status_lines(report: StatusReport) -> Iterator[str]:
    if not report.workspaces:
        yield "no workspaces" if not report.errors else "no readable workspaces"
        return
    rows = []
    for ws in report.workspaces:
        dirty = "-" if ws.state in ("released", "already_gone") else str(ws.dirtyCount)
        where = f"remote ({ws.host})" if ws.location == "remote" else printable_path(ws.path)
        rows.append([ws.runId, ws.workspaceId, ws.state, str(ws.attempts), ws.branch, dirty, where])
    lines = table(["RUN", "WORKSPACE", "STATE", "TRIES", "BRANCH", "DIRTY", "PATH"], rows).split("\n")
    yield lines[0]
    for ws, line in zip(report.workspaces, lines[1:], strict=False):
        yield line
        for entry in ws.dirtyPaths:
            yield f"    {entry.status} {printable_path(entry.path)}"
        if ws.dirtyMore:
            yield f"    … and {ws.dirtyMore} more"
        if ws.error:
            yield f"    error: {ws.error}"
        if ws.next and ws.state != "active":
            yield f"    resolve: {'  or  '.join(ws.next)}"


@click.command(cls=RunIdCommand)
@click.argument("run_id")
@json_option
def log(run_id: str, as_json: bool) -> int:
    """Show a run's event history, newest first."""
    return show(run_log(repository(), run_id), as_json, _log_lines)


def _log_lines(result: LogResult) -> Iterator[str]:
    rows = [[e.commit[:12], time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time)),
             e.state, f"{e.event}: {e.summary}"] for e in result.events]
    yield table(["COMMIT", "TIME", "STATE", "EVENT"], rows)
