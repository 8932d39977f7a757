"""``git harn demo``."""

from __future__ import annotations

from pathlib import Path

import click

from git_harn.demo.basic import Say, harn, run_demo
from git_harn.demo.workflow import run_workflow_demo
from git_harn.git.scratch import log_text


def reclaim_step(project: Path, say: Say, run_id: str) -> None:
    """Salvage the preserved workspace, show the salvage branch with its note."""
    say("\nreclaim salvages the work to its own branch, then cleanup releases the workspace.")
    harn(project, say, "reclaim", run_id)
    say(f"\n$ git log harnery/salvage/{run_id}")
    say(log_text(project, f"harnery/salvage/{run_id}"))
    harn(project, say, "status", "--all")


@click.command()
@click.option("--workflow", "workflow", is_flag=True,
              help="Drive a four-task roadmap through 'git harn workflow run' with scripted agents.")
def demo(workflow: bool) -> int:
    """Show git-harn on a throwaway repository it makes itself."""
    if workflow:
        run_workflow_demo(click.echo)
    else:
        run_demo(click.echo, steps=[reclaim_step])
    return 0
