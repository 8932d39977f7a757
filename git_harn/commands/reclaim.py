"""``git harn reclaim``: salvage or discard a preserved workspace, then release it [W5]."""

from __future__ import annotations

from collections.abc import Iterator

import click

from git_harn.commands.common import RunIdCommand, confirm, json_option, repository, run_id_arg
from git_harn.commands.render import show
from git_harn.errors import BadInput
from git_harn.git import Repo
from git_harn.notices import interactive
from git_harn.store.record import ALREADY_GONE, TERMINAL
from git_harn.text import printable_path
from git_harn.workflow.after.reclaim import reclaim as reclaim_workspace
from git_harn.workspace.cleanup import preview
from git_harn.workspace.reclaim import DISCARD, SALVAGE, ReclaimResult
from git_harn.workspace.salvage import SALVAGE_LOG

SHOWN_PATHS = 10


@click.command(cls=RunIdCommand)
@click.argument("run_id")
@click.option("--discard", is_flag=True,
              help="Throw the uncommitted changes away (reset --hard, clean -fd) instead of salvaging them.")
@click.option("--yes", is_flag=True, help="Confirm --discard without asking.")
@json_option
def reclaim(run_id: str, discard: bool, yes: bool, as_json: bool) -> int:
    """Salvage a workspace's work to harnery/salvage/<run-id> (or discard it), then release it."""
    repo = repository()
    run_id = run_id_arg(run_id)
    if discard and not yes:
        _confirm_discard(repo, run_id)
    return show(reclaim_workspace(repo, run_id, DISCARD if discard else SALVAGE), as_json, _lines)


def _confirm_discard(repo: Repo, run_id: str) -> None:
    """Discard destroys work: ask on a terminal, else insist on --yes [P7]."""
    if not interactive():
        raise BadInput("reclaim --discard throws away uncommitted work; add --yes to confirm "
                       "(nothing was changed)")
    seen = preview(repo, run_id)
    for entry in seen.dirtyPaths[:SHOWN_PATHS]:
        click.echo(f"    {entry.status} {printable_path(entry.path)}", err=True)
    if len(seen.dirtyPaths) > SHOWN_PATHS:
        click.echo(f"    … and {len(seen.dirtyPaths) - SHOWN_PATHS} more", err=True)
    if not confirm(f"Discard {len(seen.dirtyPaths)} uncommitted path(s) of run {run_id}?"):
        raise BadInput("reclaim --discard not confirmed; nothing was changed")


def _lines(result: ReclaimResult) -> Iterator[str]:
    salvage = result.salvage
    if salvage is not None:
        branch = salvage["ref"].removeprefix("refs/heads/")
        count = salvage.get("pathCount", len(salvage["paths"]))
        yield f"salvaged {count} path(s) of run {result.runId} to {branch} at {salvage['oid'][:12]}"
        for path in salvage["paths"][:SHOWN_PATHS]:
            yield f"    {printable_path(path)}"
        if count > SHOWN_PATHS:
            yield f"    … and {count - SHOWN_PATHS} more"
        yield f"  see: git log {branch}"
        yield f"  all salvaged work: {SALVAGE_LOG}"
    elif result.mode == DISCARD and result.outcome != ALREADY_GONE:
        if result.state in TERMINAL:
            yield f"discarded the uncommitted changes of run {result.runId}"
        else:  # git clean -fd leaves nested repositories: never claim those
            yield (f"discarded what git could remove of run {result.runId}; what it left is kept "
                   f"(state {result.state}, see the reason)")
    elif result.outcome != ALREADY_GONE:
        yield f"nothing to salvage in run {result.runId}: no uncommitted work, no commit at risk"
    yield f"workspace reclaim {result.outcome}: {result.workspaceId} (run {result.runId}, state {result.state})"
    yield f"reason: {result.reason}"
