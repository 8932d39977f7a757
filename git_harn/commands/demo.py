"""``git harn demo``."""

from __future__ import annotations

from pathlib import Path

import click

from git_harn.demo.basic import Say, Screen, harn, run_demo, screen_width
from git_harn.demo.landing import run_landing_demo
from git_harn.demo.workflow import run_workflow_demo
from git_harn.errors import BadInput
from git_harn.git.scratch import log_text
from git_harn.tasks.config import LandMode


def reclaim_step(project: Path, say: Say, run_id: str) -> None:
    """Salvage the preserved workspace, show the salvage branch with its note."""
    say.say("\nreclaim salvages the work to its own branch, then cleanup releases the workspace.")
    harn(project, say, "reclaim", run_id)
    say.say("")
    say.command(f"git log harnery/salvage/{run_id}")
    say.show(log_text(project, f"harnery/salvage/{run_id}"))
    harn(project, say, "status", "--all")


@click.command()
@click.option("--workflow", "workflow", is_flag=True,
              help="Drive a four-task roadmap through 'git harn workflow run' with scripted agents.")
@click.option("--land", type=click.Choice([m.value for m in LandMode]), default=LandMode.PUSH.value,
              show_default=True, help="With --workflow: land by pushing, or by merge request on a local forge.")
def demo(workflow: bool, land: str) -> int:
    """Show git-harn on a throwaway repository it makes itself."""
    screen = Screen(click.echo, screen_width())
    if land != LandMode.PUSH.value and not workflow:
        raise BadInput("--land pull-request shows the workflow runner: give --workflow too")
    if workflow and land == LandMode.PULL_REQUEST.value:
        run_landing_demo(screen)
    elif workflow:
        run_workflow_demo(screen)
    else:
        run_demo(screen, steps=[reclaim_step])
    return 0
