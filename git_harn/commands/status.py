"""status and log: looking at workspaces and runs [W4] [W6]."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterator
from typing import Any

import click

from git_harn.commands.common import RunIdCommand, json_option, repository
from git_harn.commands.render import show, table, terminal_width
from git_harn.text import cells, clip, printable_path
from git_harn.workspace.log import LogResult, run_log
from git_harn.workspace.status import DEFAULT_LIMIT, StatusReport, collect_status

# Locations whose row says where the workspace is instead of what it holds.
AWAY = ("foreign", "unavailable", "missing")


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


def _fit(headers: list[str], rows: list[list[str]], width: int | None) -> list[str]:
    """An aligned table (widths in terminal cells, CJK counted twice) that fits
    ``width``: the WORKSPACE column goes first (status <run-id> --json has it),
    then PATH (its start), BRANCH and RUN are cut with an ellipsis."""
    if width is not None and _table_width(headers, rows) > width and "WORKSPACE" in headers:
        drop = headers.index("WORKSPACE")
        headers = headers[:drop] + headers[drop + 1:]
        rows = [row[:drop] + row[drop + 1:] for row in rows]
    if width is not None:
        for name, floor in (("PATH", 12), ("BRANCH", 12), ("RUN", 10)):
            over = _table_width(headers, rows) - width
            if over <= 0:
                break
            i = headers.index(name)
            widest = max(cells(row[i]) for row in [headers, *rows])
            room = max(floor, widest - over)
            rows = [[clip(c, room, keep_end=name == "PATH") if j == i else c for j, c in enumerate(row)]
                    for row in rows]
    sizes = [max(cells(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    return ["  ".join(c + " " * (sizes[i] - cells(c)) if i < len(row) - 1 else c
                      for i, c in enumerate(row)).rstrip() for row in [headers, *rows]]


def _table_width(headers: list[str], rows: list[list[str]]) -> int:
    return sum(max(cells(row[i]) for row in [headers, *rows]) for i in range(len(headers))) + 2 * (len(headers) - 1)


def _wrapped(text: str, width: int | None, indent: str = "    ") -> Iterator[str]:
    if width is None:
        yield indent + text
        return
    for line in textwrap.wrap(text, max(20, width - len(indent)), break_long_words=False,
                              break_on_hyphens=False) or [""]:
        yield clip(indent + line, width)


def _status_lines(report: StatusReport) -> Iterator[str]:
    if not report.workspaces:
        yield "no workspaces" if not report.errors else "no readable workspaces"
        yield from _doctor_line(report)
        return
    width = terminal_width()
    rows = []
    for ws in report.workspaces:
        dirty = ("-" if ws.state in ("released", "already_gone") or ws.dirtyCount is None
                 or ws.location not in ("here", "none") else str(ws.dirtyCount))
        where = f"remote ({ws.host})" if ws.location == "remote" else printable_path(ws.path)
        if ws.location in AWAY:
            where = f"{ws.location}: {where}"
        state = f"{ws.state} (busy: {ws.busy})" if ws.busy else ws.state
        rows.append([ws.runId, ws.workspaceId, state, str(ws.attempts), ws.branch, dirty, where])
    lines = _fit(["RUN", "WORKSPACE", "STATE", "TRIES", "BRANCH", "DIRTY", "PATH"], rows, width)
    yield lines[0]
    for ws, line in zip(report.workspaces, lines[1:], strict=False):
        yield line
        for entry in ws.dirtyPaths:
            shown = f"    {entry.status} {printable_path(entry.path)}"
            yield shown if width is None else clip(shown, width)
        if ws.dirtyMore:
            yield f"    … and {ws.dirtyMore} more"
        if ws.error:
            yield from _wrapped(f"error: {ws.error}", width)
        if ws.diverged:
            yield from _wrapped(diverged_line(ws.diverged), width)
        if ws.location in AWAY:
            yield from _wrapped(f"{ws.location}: {ws.reason}", width)
        if ws.reason and "kept" in ws.reason and ws.state in ("released", "already_gone"):
            yield from _wrapped(ws.reason, width)
        if ws.next and ws.state != "active":
            yield from _wrapped(f"resolve: {'  or  '.join(ws.next)}", width)
    yield from _doctor_line(report)


def _doctor_line(report: StatusReport) -> Iterator[str]:
    if report.noticed:
        yield f"{report.noticed} thing(s) to look at: 'git harn doctor' shows all that is left and its cost"


@click.command(cls=RunIdCommand)
@click.argument("run_id")
@json_option
def log(run_id: str, as_json: bool) -> int:
    """Show a run's event history, newest first."""
    return show(run_log(repository(), run_id), as_json, _log_lines)


def _log_lines(result: LogResult) -> Iterator[str]:
    if result.diverged:
        yield diverged_line(result.diverged)
    rows = [[e.commit[:12], time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time)),
             e.state, f"{e.event}: {e.summary}"] for e in result.events]
    yield table(["COMMIT", "TIME", "STATE", "EVENT"], rows)


def diverged_line(diverged: Any) -> str:
    """One line on a chain that sync merged after it diverged."""
    if not isinstance(diverged, dict):
        return "diverged: the chain was merged by sync"
    hosts = ", ".join(str(h) for h in diverged.get("hosts") or []) or "?"
    fields = ", ".join(str(f) for f in diverged.get("fields") or []) or "none"
    return (f"diverged: written on {hosts}, merged by sync from {str(diverged.get('base', '?'))[:12]}; "
            f"conflicting fields ({fields}) decided by {diverged.get('decidedBy', '?')}")
