"""``git harn report check <kind> <file|->``: validate a report [P5]."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from git_harn.assess.assessor import check_assessment
from git_harn.commands.common import json_option
from git_harn.commands.render import emit_json
from git_harn.errors import BadInput
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


MAX_REPORT_BYTES = 16 * 1024 * 1024


def read_json_input(source: str) -> Any:
    """The JSON document in file ``source`` (``-``: stdin); BadInput if it is
    not one, is larger than 16 MiB, nests without end or repeats a key [P5]."""
    try:
        if source == "-":
            raw = sys.stdin.buffer.read(MAX_REPORT_BYTES + 1)
        else:
            with open(source, "rb") as handle:
                raw = handle.read(MAX_REPORT_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {source}: {exc.strerror}") from exc
    if len(raw) > MAX_REPORT_BYTES:
        raise BadInput(f"{source} is larger than {MAX_REPORT_BYTES // (1024 * 1024)} MiB")
    try:
        return json.loads(raw, object_pairs_hook=_no_duplicate_keys)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"{source} is not JSON: {exc}") from exc
    except RecursionError:
        raise BadInput(f"{source} nests too deeply to be a report") from None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A key given twice could say one thing to one reader and another to the next."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


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
