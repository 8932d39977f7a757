"""start, run, status, cleanup, log: the workspace lifecycle [W1]-[W4] [W6]."""

from __future__ import annotations

import click

from git_harn.commands.common import confirm, json_option, repository, run_id_arg
from git_harn.commands.render import emit_json
from git_harn.errors import BadInput
from git_harn.store.ids import new_run_id
from git_harn.store.locks import hold_run
from git_harn.store.record import TERMINAL
from git_harn.workspace.cleanup import CleanupResult, cleanup_locked, preview, read_known
from git_harn.workspace.run import RunOptions, run_in_workspace
from git_harn.workspace.start import check_start, start_locked


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
    run_id = run_id_arg(run_id) if run_id is not None else new_run_id()
    check_start(repo, run_id, base, branch, path)  # bad input fails before any lock is made
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
            if any(a in ("-h", "--help") for a in args):
                return super().parse_args(ctx, args)
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
    read_known(repo, run_id)  # an unknown run is bad input before any lock is made
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


