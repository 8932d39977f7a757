"""``git harn integrate``: land a task branch as one squash commit [I1] [I2]."""

from __future__ import annotations

import click

from git_harn.commands.common import json_option, repository
from git_harn.integrate import DEFAULT_MAX_ATTEMPTS, DEFAULT_REMOTE, Request
from git_harn.integrate import integrate as integrate_branch
from git_harn.integration_report import IntegrationReport
from git_harn.render import emit_json, printable_path


@click.command()
@click.argument("task_branch")
@click.option("--base", metavar="BRANCH",
              help="Branch on the remote to land on (default: harn.base, else main).")
@click.option("--remote", default=DEFAULT_REMOTE, show_default=True, metavar="NAME",
              help="Remote to fetch from and push to.")
@click.option("--task", "task_id", metavar="ID", help="Roadmap task id (default: from roadmap-<id>).")
@click.option("--max-attempts", default=DEFAULT_MAX_ATTEMPTS, show_default=True, type=int,
              help="Pushes to try while the base keeps moving.")
@click.option("--resume-after-crash", is_flag=True,
              help="Go on after an interrupted integrate of this task, once you have inspected the base.")
@json_option
def integrate(task_branch: str, base: str | None, remote: str, task_id: str | None, max_attempts: int,
              resume_after_crash: bool, as_json: bool) -> int:
    """Squash TASK_BRANCH onto REMOTE/BASE, tick its roadmap task, push."""
    request = Request(task_branch, base, remote, task_id, max_attempts, resume_after_crash)
    report = integrate_branch(repository(), request)
    if as_json:
        emit_json(report)
    else:
        _show(report)
    return report.exit_code


def _show(report: IntegrationReport) -> None:
    click.echo(f"{report.outcome}: {report.summary}")
    if report.conflicts:
        click.echo(report.conflicts)
    for path in report.conflictPaths:
        click.echo(f"    {printable_path(path)}")
    if report.commit:
        click.echo(f"commit {report.commit}")
