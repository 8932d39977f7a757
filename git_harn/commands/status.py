"""status and log: looking at workspaces and runs [W4] [W6]."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from git_harn.commands.common import RunIdCommand, json_option, repository
from git_harn.commands.render import show, table, terminal_width
from git_harn.store.record import ACTIVE, TERMINAL
from git_harn.text import cells, clip, printable_path
from git_harn.workspace.status import DEFAULT_LIMIT, StatusReport, collect_status

if TYPE_CHECKING:  # the log command's own module is loaded when it runs
    from git_harn.workspace.log import LogResult

# Locations whose row says where the workspace is instead of what it holds.
AWAY = ("foreign", "unavailable", "missing")


@click.command(cls=RunIdCommand)
@click.argument("run_id", required=False)
@click.option("--all", "include_terminal", is_flag=True, help="Include released and gone workspaces.")
@click.option("--last", type=int, metavar="N",
              help="Of the ended workspaces, only the N newest (every live one is listed); implies --all.")
@click.option("--limit", default=DEFAULT_LIMIT, show_default=True, type=int,
              help="Dirty paths to list per workspace.")
@json_option
def status(run_id: str | None, include_terminal: bool, last: int | None, limit: int, as_json: bool) -> int:
    """List workspaces, their state and their uncommitted paths."""
    report = collect_status(repository(), run_id, include_terminal, limit, last)
    code = show(report, as_json, _status_lines)
    for bad in report.errors:
        click.echo(f"git harn: error: {bad.error}", err=True)
    return code


def _fit(headers: list[str], rows: list[list[str]], width: int | None) -> list[str]:
    """An aligned table (widths in terminal cells, CJK counted twice) that fits
    ``width``: the WORKSPACE column goes first (status <run-id> --json has it),
    then PATH (its start), BRANCH and RUN are cut with an ellipsis. Each cell
    is measured once (and again only when cut): ``status --all`` lists every run."""
    table = [list(headers), *(list(row) for row in rows)]
    widths = [[cells(c) for c in row] for row in table]
    if width is not None and _table_width(widths) > width and "WORKSPACE" in headers:
        drop = headers.index("WORKSPACE")
        for row in table:
            del row[drop]
        for measured in widths:
            del measured[drop]
    if width is not None:
        for name, floor in (("PATH", 12), ("BRANCH", 12), ("RUN", 10)):
            over = _table_width(widths) - width
            if over <= 0:
                break
            _cut_column(table, widths, table[0].index(name), floor, over, keep_end=name == "PATH")
    sizes = [max(column) for column in zip(*widths, strict=True)]
    return ["  ".join(c + " " * (sizes[i] - w[i]) if i < len(row) - 1 else c
                      for i, c in enumerate(row)).rstrip() for row, w in zip(table, widths, strict=True)]


def _cut_column(table: list[list[str]], widths: list[list[int]], i: int, floor: int, over: int,
                keep_end: bool) -> None:
    """Cut the cells of column ``i`` (not its header) so the column is ``over`` cells narrower, or ``floor`` wide."""
    room = max(floor, max(w[i] for w in widths) - over)
    for row, w in zip(table[1:], widths[1:], strict=True):
        if w[i] > room:
            row[i] = clip(row[i], room, keep_end=keep_end)
            w[i] = cells(row[i])


def _table_width(widths: list[list[int]]) -> int:
    columns: int = sum(max(column) for column in zip(*widths, strict=True))
    return columns + 2 * (len(widths[0]) - 1)


def _wrapped(text: str, width: int | None, indent: str = "    ") -> Iterator[str]:
    if width is None:
        yield indent + text
        return
    import textwrap  # only on a terminal

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
        dirty = ("-" if ws.state in TERMINAL or ws.dirtyCount is None
                 or ws.location not in ("here", "none") else str(ws.dirtyCount))
        where = f"remote ({ws.host})" if ws.location == "remote" else printable_path(ws.path)
        if ws.location in AWAY:
            where = f"{ws.location}: {where}"
        state = f"{ws.state} (busy: {ws.busy})" if ws.busy else ws.state
        rows.append([ws.runId, ws.workspaceId, state, str(ws.attempts), ws.branch, dirty, where])
    # KEPT: the cleanups that kept the workspace (attempts); a workflow stage's tries are the run's, not these
    lines = _fit(["RUN", "WORKSPACE", "STATE", "KEPT", "BRANCH", "DIRTY", "PATH"], rows, width)
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
        if ws.reason and ("kept" in ws.reason or "vanished" in ws.reason) and ws.state in TERMINAL:
            yield from _wrapped(ws.reason, width)
        if ws.next and ws.state != ACTIVE:
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
    from git_harn.workspace.log import run_log

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
