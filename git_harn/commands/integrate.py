"""``git harn integrate``: land task branches, each as one squash commit [I1] [I2]."""

from __future__ import annotations

from collections.abc import Iterator

import click

from git_harn.commands.common import json_option, repository
from git_harn.commands.render import show
from git_harn.integrate.batch import BatchResult, integrate_branches
from git_harn.integrate.report import IntegrationReport
from git_harn.integrate.target import DEFAULT_MAX_ATTEMPTS, Request
from git_harn.tasks.config import LandMode
from git_harn.text import printable_path


@click.command()
@click.argument("task_branches", nargs=-1, required=True, metavar="TASK_BRANCH...")
@click.option("--base", metavar="BRANCH",
              help="Branch on the remote to land on (default: harn.base, else main).")
@click.option("--remote", metavar="NAME",
              help="Remote to fetch from and push to (default: harn.remote, else origin).")
@click.option("--task", "task_id", metavar="ID", help="Roadmap task id (default: from roadmap-<id>).")
@click.option("--max-attempts", default=DEFAULT_MAX_ATTEMPTS, show_default=True, type=int,
              help="Pushes to try while the base keeps moving.")
@click.option("--resume-after-crash", is_flag=True,
              help="Go on after an interrupted integrate of this task, once you have inspected the base.")
@click.option("--land", type=click.Choice([m.value for m in LandMode]), default=LandMode.PUSH.value,
              show_default=True,
              help="Push the squash onto the base, or propose it as a pull request from harnery/land/<id>.")
@click.option("--forge", metavar="NAME", help="With --land pull-request: github, gitlab or gitea (forgejo) "
              "(default: what the remote's URL says; none: the landing branch alone).")
@click.option("--forge-url", metavar="URL", help="With --land pull-request: where the forge's API is, when the "
              "remote's URL does not say.")
@click.option("--auto-merge", is_flag=True, help="With --land pull-request: ask the forge to merge the request "
              "once its checks pass, where the repository allows it.")
@json_option
def integrate(task_branches: tuple[str, ...], base: str | None, remote: str | None, task_id: str | None,
              max_attempts: int, resume_after_crash: bool, land: str, forge: str | None, forge_url: str | None,
              auto_merge: bool, as_json: bool) -> int:
    """Squash each TASK_BRANCH onto REMOTE/BASE in turn, tick its roadmap task, push.

    Several branches land in the order given; the first that does not land
    stops the rest."""
    requests = [Request(branch, base, remote, task_id, max_attempts, resume_after_crash, land=LandMode(land),
                        forge=forge, forge_url=forge_url, auto_merge=auto_merge)
                for branch in task_branches]
    result = integrate_branches(repository(), requests)
    if isinstance(result, BatchResult):
        code = show(result, as_json, _batch_lines)
        if result.error is not None:
            click.echo(f"git harn: error: {result.error.branch}: {result.error.message}", err=True)
        return code
    return show(result, as_json, _report_lines)


def _batch_lines(result: BatchResult) -> Iterator[str]:
    for report in result.reports:
        yield f"== {report.branch} (task {report.taskId})"
        yield from _report_lines(report)
    if result.notAttempted:
        yield "not attempted: " + " ".join(result.notAttempted)


def _report_lines(report: IntegrationReport) -> Iterator[str]:
    yield f"{report.outcome}: {report.summary}"
    if report.conflicts:
        yield report.conflicts
    for path in report.conflictPaths:
        yield f"    {printable_path(path)}"
    if report.commit:
        yield f"commit {report.commit}"
    if report.proposal is not None:
        yield f"proposal {report.proposal['url'] or report.proposal['branch']} ({report.proposal['state']})"
