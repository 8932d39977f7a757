"""``git harn report check <kind> <file|->``: validate a report [P5]."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import click

from git_harn.assess.assessor import check_assessment
from git_harn.commands.common import json_option
from git_harn.commands.render import show
from git_harn.files import read_json_input
from git_harn.integrate.report import check_integration
from git_harn.results import CheckResult

# kind -> the domain check that decides whether such a report is to be believed.
CHECKS: dict[str, Callable[[Any], CheckResult]] = {
    "assessment": check_assessment,
    "integration": check_integration,
}


@click.group()
def report() -> None:
    """Validate reports written by agents or by git-harn."""


@report.command()
@click.argument("kind", type=click.Choice(sorted(CHECKS)))
@click.argument("source", metavar="FILE|-")
@json_option
def check(kind: str, source: str, as_json: bool) -> int:
    """Check a report of KIND; exit 3 when it is not to be believed."""
    return show(CHECKS[kind](read_json_input(source)), as_json, lambda result: _check_lines(kind, result))


def _check_lines(kind: str, result: CheckResult) -> Iterator[str]:
    if result.ok:
        yield f"{kind} report ok"
    else:
        yield f"halted at stage: {result.stage}"
        yield f"detail: {result.detail}"
