"""``git harn report check <kind> <file|->``: validate a report [P5]."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from git_harn.commands.common import json_option
from git_harn.errors import BadInput
from git_harn.render import emit_json
from git_harn.report_checks import CHECKS


@click.group()
def report() -> None:
    """Validate reports written by agents or by git-harn."""


def read_json_input(source: str) -> Any:
    """The JSON document in file ``source`` (``-``: stdin); BadInput if not JSON."""
    try:
        raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {source}: {exc.strerror}") from exc
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"{source} is not JSON: {exc}") from exc


@report.command()
@click.argument("kind", type=click.Choice(sorted(CHECKS)) if CHECKS else click.STRING)
@click.argument("source", metavar="FILE|-")
@json_option
def check(kind: str, source: str, as_json: bool) -> int:
    """Check a report of KIND; exit 3 when it is not to be believed."""
    if kind not in CHECKS:
        raise BadInput(f"unknown report kind {kind!r}")
    document = read_json_input(source)
    result = CHECKS[kind](document)
    if as_json:
        emit_json(result)
    elif result.ok:
        click.echo(f"{kind} report ok")
    else:
        click.echo(f"halted at stage: {result.stage}")
        click.echo(f"detail: {result.detail}")
    return 0 if result.ok else 3
