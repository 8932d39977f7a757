"""``git harn demo``."""

from __future__ import annotations

from pathlib import Path

import click

from git_harn.demo.basic import Say, harn, run_demo
from git_harn.git.run import run_git


def reclaim_step(project: Path, say: Say, run_id: str) -> None:
    """Salvage the preserved workspace, show the salvage branch with its note."""
    say("\nreclaim salvages the work to its own branch, then cleanup releases the workspace.")
    harn(project, say, "reclaim", run_id)
    say(f"\n$ git log harnery/salvage/{run_id}")
    shown = run_git(["log", f"harnery/salvage/{run_id}"], project, check=False)
    say((shown.stdout or shown.stderr).decode("utf-8", "replace").rstrip("\n"))
    harn(project, say, "status", "--all")


@click.command()
def demo() -> int:
    """Show git-harn on a throwaway repository it makes itself."""
    run_demo(click.echo, steps=[reclaim_step])
    return 0
