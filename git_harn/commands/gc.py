"""gc: old ended run records folded into the archive (issue 25)."""

from __future__ import annotations

from collections.abc import Iterator

import click

from git_harn.commands.common import json_option, repository
from git_harn.commands.render import show
from git_harn.workspace.gc import AFTER_SETTING, GcResult
from git_harn.workspace.gc import gc as run_gc


@click.command("gc")
@click.option("--older-than", metavar="DURATION",
              help=f"Archive ended runs last written this long ago (90m, 12h, 30d, 2w; 0: every ended run). "
                   f"Default: {AFTER_SETTING}, else 30d.")
@click.option("--dry-run", is_flag=True, help="Only say what would be archived and pruned.")
@json_option
def gc(older_than: str | None, dry_run: bool, as_json: bool) -> int:
    """Fold old ended run records into the archive and prune stale salvage notes."""
    return show(run_gc(repository(), older_than, dry_run), as_json, _gc_lines)


def _gc_lines(result: GcResult) -> Iterator[str]:
    verb = "would archive" if result.dryRun else "archived"
    yield f"{verb} {len(result.archived)} ended run(s) older than {result.olderThan}" + (
        f" in {result.batches} batch(es)" if result.batches else "")
    for why, count in sorted(result.skipped.items()):
        yield f"  left {count} ended run(s): {why}"
    if result.kept:
        yield f"  kept {len(result.kept)} as refs: written again since they were read ({', '.join(result.kept[:5])})"
    pruned = "would prune" if result.dryRun else "pruned"
    yield f"{pruned} {result.notesPruned} salvage note(s) whose branch is gone"
