"""start, run, status, cleanup, log: the workspace lifecycle [W1]-[W4] [W6]."""

from __future__ import annotations

import time
from typing import Any

import click

from git_harn import store
from git_harn.cleanup import CleanupResult, cleanup_locked, preview
from git_harn.commands.common import json_option, repository, run_id_arg
from git_harn.errors import BadInput
from git_harn.ids import new_run_id
from git_harn.locks import hold_run
from git_harn.record import TERMINAL
from git_harn.render import emit_json, jsonable, printable_path, table
from git_harn.runner import RunOptions, run_in_workspace
from git_harn.start import start_locked
from git_harn.status import DEFAULT_LIMIT, StatusReport, collect_status
from git_harn.ui import confirm


@click.command()
@click.argument("run_id", required=False)
@click.option("--base", metavar="REV", help="Start the branch here (default: HEAD).")
@click.option("--branch", metavar="NAME", help="Branch to use (default: harnery/ws/<run-id>).")
@click.option("--path", metavar="DIR", help="Worktree folder (default: under harn.worktreeRoot).")
@json_option
def start(run_id: str | None, base: str | None, branch: str | None, path: str | None,
          as_json: bool) -> int:
    """Create a workspace: a branch at the base, a worktree and a record."""
    repo = repository()
    run_id = run_id_arg(run_id) if run_id else new_run_id()
    with hold_run(repo, run_id, "start"):
        record = start_locked(repo, run_id, base, branch, path)
    if as_json:
        emit_json(record.as_dict())
    else:
        click.echo(f"started {record.runId} ({record.workspaceId})")
        click.echo(f"  branch  {record.branch} at {record.base['oid'][:12]} ({record.base['ref']})")
        click.echo(f"  path    {record.path}")
    return 0


class _RunCommand(click.Command):
    """Everything after ``--`` is the command, untouched by option parsing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args:
            raise click.UsageError("give the command after '--', e.g. git harn run -- make test", ctx)
        cut = args.index("--")
        ctx.meta["harn_command"] = args[cut + 1:]
        return super().parse_args(ctx, args[:cut])


@click.command(cls=_RunCommand)
@click.argument("run_id", required=False)
@click.option("--base", metavar="REV", help="Start a new workspace here (default: HEAD).")
@click.option("--branch", metavar="NAME", help="Branch for a new workspace.")
@click.option("--path", metavar="DIR", help="Worktree folder for a new workspace.")
@click.option("--keep", is_flag=True, help="Leave the workspace as it is; do not clean up.")
@json_option
@click.pass_context
def run(ctx: click.Context, run_id: str | None, base: str | None, branch: str | None,
        path: str | None, keep: bool, as_json: bool) -> int:
    """Run a command in a workspace, record its exit code, then clean up.

    Usage: git harn run [RUN_ID] [OPTIONS] -- COMMAND [ARGS]...
    """
    argv: list[str] = ctx.meta["harn_command"]
    if not argv:
        raise BadInput("no command after '--'")
    repo = repository()
    result = run_in_workspace(repo, run_id, argv, RunOptions(base, branch, path, keep))
    if as_json:
        emit_json(result)
    else:
        click.echo(f"run {result.runId}: command exited {result.commandExit}")
        if result.cleanup:
            _show_cleanup(result.cleanup)
        else:
            click.echo(f"kept {result.path} (--keep)")
    return result.exit_code


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
        if ws.next and ws.state != "active":
            click.echo(f"    resolve: {'  or  '.join(ws.next)}")


@click.command()
@click.argument("run_id")
@click.option("--yes", is_flag=True, help="Act; without it, only say what would happen.")
@json_option
def cleanup(run_id: str, yes: bool, as_json: bool) -> int:
    """Release a workspace if that loses nothing; otherwise preserve it."""
    repo = repository()
    run_id = run_id_arg(run_id)
    if not yes:
        result = preview(repo, run_id)
        _emit_cleanup(result, as_json)
        if as_json or result.state in TERMINAL or not confirm("Proceed?"):
            return 0
    with hold_run(repo, run_id, "cleanup"):
        result = cleanup_locked(repo, run_id)
    _emit_cleanup(result, as_json)
    return result.exit_code


def _emit_cleanup(result: CleanupResult, as_json: bool) -> None:
    if as_json:
        emit_json(result)
    else:
        _show_cleanup(result)


def _show_cleanup(result: CleanupResult) -> None:
    if result.outcome == "dry_run":
        click.echo(f"dry run: cleanup of {result.runId} would end {result.wouldBe} "
                   f"(add --yes to act)")
    else:
        click.echo(f"workspace cleanup {result.outcome}: {result.workspaceId} "
                   f"(run {result.runId}, attempts {result.attempts})")
    click.echo(f"reason: {result.reason}")
    if result.outcome in ("preserved_dirty", "preserved_unmerged", "blocked"):
        click.echo(f"resolve: git harn reclaim {result.runId}   (salvage to harnery/salvage/"
                   f"{result.runId})")
        click.echo(f"     or: git harn reclaim {result.runId} --discard --yes   (throw it away)")


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
    if as_json:
        emit_json({"schemaVersion": 1, "runId": run_id, "events": [
            {"commit": str(e.oid), "time": e.time, "event": e.event,
             "summary": e.summary, "state": e.state} for e in events]})
        return 0
    rows = [[str(e.oid)[:12], time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time)),
             e.state, f"{e.event}: {e.summary}"] for e in events]
    click.echo(table(["COMMIT", "TIME", "STATE", "EVENT"], rows))
    return 0


__all__ = ["start", "run", "status", "cleanup", "log", "new_run_id"]
