"""sync: run records, workflow records and notes shared through a remote."""

from __future__ import annotations

from collections.abc import Iterator

import click

from git_harn.commands.common import json_option, repository
from git_harn.commands.render import show, table
from git_harn.sync.engine import SyncResult, configure
from git_harn.sync.engine import sync as run_sync

_SHOWN = 50


@click.command()
@click.argument("remote", required=False)
@click.option("--salvage", is_flag=True, help="Also share harnery/salvage/* branches (fast-forward only).")
@click.option("--dry-run", is_flag=True, help="Fetch and say what would be merged and pushed; change nothing else.")
@click.option("--full", is_flag=True, help="List every ref even when the summaries say nothing changed.")
@click.option("--configure", "configure_only", is_flag=True,
              help="Add the tracking refspec to remote.<remote>.fetch and stop.")
@json_option
def sync(remote: str | None, salvage: bool, dry_run: bool, full: bool, configure_only: bool,
         as_json: bool) -> int:
    """Fetch, merge and push run records, workflow records and notes."""
    repo = repository()
    if configure_only:
        return show(configure(repo, remote), as_json, _view)
    return show(run_sync(repo, remote, salvage=salvage, dry_run=dry_run, full=full), as_json, _view)


def _view(result: SyncResult) -> Iterator[str]:
    yield result.summary
    changed = [entry for entry in result.refs if entry.action != "same" or entry.pushed]
    if changed:
        rows = []
        for entry in changed[:_SHOWN]:
            action = entry.action
            if entry.pushed:
                action = "pushed" if entry.action == "ahead" else f"{entry.action}, pushed"
            detail = f"  ({entry.detail})" if entry.detail else ""
            rows.append([action, f"{entry.ref}{detail}"])
        yield from table(["ACTION", "REF"], rows).split("\n")
        if len(changed) > _SHOWN:
            yield f"… and {len(changed) - _SHOWN} more (--json lists every ref)"
    if result.refused:
        yield f"refused: {result.refused}"
        for line in result.remoteSaid:
            yield f"  remote: {line}"
