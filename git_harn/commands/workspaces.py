"""start, run, cleanup: the workspace lifecycle [W1]-[W3]."""

from __future__ import annotations

from collections.abc import Iterator

import click

from git_harn.commands.common import RunIdCommand, confirm, json_option, repository, run_id_arg
from git_harn.commands.render import show
from git_harn.errors import BadInput
from git_harn.store.record import PRESERVED_DIRTY, PRESERVED_UNMERGED, TERMINAL
from git_harn.workspace.cleanup import BLOCKED, DRY_RUN, CleanupResult, cleanup, preview
from git_harn.workspace.run import RunOptions, RunResult, run_in_workspace
from git_harn.workspace.start import StartResult
from git_harn.workspace.start import start as start_workspace
from git_harn.workspace.status import out_of_reach


@click.command(cls=RunIdCommand)
@click.argument("run_id", required=False)
@click.option("--base", metavar="REV", help="Start the branch here (default: HEAD).")
@click.option("--branch", metavar="NAME", help="Branch to use (default: harnery/ws/<run-id>).")
@click.option("--path", metavar="DIR", help="Worktree folder (default: under harn.worktreeRoot).")
@json_option
def start(run_id: str | None, base: str | None, branch: str | None, path: str | None,
          as_json: bool) -> int:
    """Create a workspace: a branch at the base, a worktree and a record."""
    return show(start_workspace(repository(), run_id, base, branch, path), as_json, _start_lines)


def _start_lines(result: StartResult) -> Iterator[str]:
    record = result.record
    yield f"started {record.runId} ({record.workspaceId})"
    yield f"  branch  {record.branch} at {record.base['oid'][:12]} ({record.base['ref']})"
    yield f"  path    {record.path}"


class _RunCommand(RunIdCommand):
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

    With --json, stdout holds only the result document; the command's
    stdout goes to stderr, with its stderr.
    """
    argv: list[str] = ctx.meta["harn_command"]
    if not argv:
        raise BadInput("no command after '--'")
    options = RunOptions(base, branch, path, keep, stdout_to_stderr=as_json)
    result = run_in_workspace(repository(), run_id, argv, options)
    return show(result, as_json, _run_lines)


def _run_lines(result: RunResult) -> Iterator[str]:
    yield f"run {result.runId}: command exited {result.commandExit}"
    if result.cleanup:
        yield from cleanup_lines(result.cleanup)
    else:
        yield f"kept {result.path} (--keep)"


@click.command("cleanup", cls=RunIdCommand)
@click.argument("run_id")
@click.option("--yes", is_flag=True, help="Act; without it, only say what would happen.")
@json_option
def cleanup_command(run_id: str, yes: bool, as_json: bool) -> int:
    """Release a workspace if that loses nothing; otherwise preserve it."""
    repo = repository()
    run_id = run_id_arg(run_id)
    if not yes:
        seen = preview(repo, run_id)
        code = show(seen, as_json, cleanup_lines)
        if as_json or seen.state in TERMINAL or not confirm("Proceed?"):
            return code
    return show(cleanup(repo, run_id), as_json, cleanup_lines)


def cleanup_lines(result: CleanupResult) -> Iterator[str]:
    if result.outcome == DRY_RUN:
        yield f"dry run: cleanup of {result.runId} would end {result.wouldBe} (add --yes to act)"
    else:
        yield (f"workspace cleanup {result.outcome}: {result.workspaceId} "
               f"(run {result.runId}, attempts {result.attempts})")
    yield f"reason: {result.reason}"
    if result.outcome == PRESERVED_DIRTY and out_of_reach(result.reason):
        yield f"resolve: by hand as the reason says, then: git harn cleanup {result.runId} --yes"
    elif result.outcome in (PRESERVED_DIRTY, PRESERVED_UNMERGED, BLOCKED):
        yield f"resolve: git harn reclaim {result.runId}   (salvage to harnery/salvage/{result.runId})"
        if result.outcome != PRESERVED_UNMERGED:  # --discard cannot throw commits away
            yield f"     or: git harn reclaim {result.runId} --discard --yes   (throw it away)"
