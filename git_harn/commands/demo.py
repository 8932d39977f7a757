"""``git harn demo``."""

from __future__ import annotations

from pathlib import Path

import click

from git_harn.demo.basic import Say, harn, run_demo
from git_harn.git.scratch import log_text


def reclaim_step(project: Path, say: Say, run_id: str) -> None:
    """Salvage the preserved workspace, show the salvage branch with its note."""
    say("\nreclaim salvages the work to its own branch, then cleanup releases the workspace.")
    harn(project, say, "reclaim", run_id)
    say(f"\n$ git log harnery/salvage/{run_id}")
    say(log_text(project, f"harnery/salvage/{run_id}"))
    harn(project, say, "status", "--all")


@click.command()
def demo() -> int:
    """Show git-harn on a throwaway repository it makes itself."""
    run_demo(click.echo, steps=[reclaim_step])
    return 0
