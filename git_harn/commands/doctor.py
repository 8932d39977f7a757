"""doctor: what git-harn could have left behind, what it costs, and the
safe fixes [L3] [P1] [P6]."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import click

from git_harn.commands.common import confirm, json_option, repository
from git_harn.commands.render import show
from git_harn.doctor.check import DEFAULT_OLDER_THAN
from git_harn.doctor.disk import shown_age, shown_size
from git_harn.doctor.findings import DoctorReport, Finding, grouped
from git_harn.errors import BadInput
from git_harn.notices import interactive

WIDTH = 80  # the report fits 80 columns, whatever the terminal


@click.command()
@click.option("--fix", is_flag=True, help="Apply the safe fixes (asks on a terminal; else needs --yes).")
@click.option("--yes", is_flag=True, help="With --fix: apply without asking.")
@click.option("--older-than", default=DEFAULT_OLDER_THAN, show_default=True, metavar="AGE",
              help="Report salvage branches older than this (30d, 12h, 2w, or seconds).")
@click.option("--remote", metavar="NAME", help="Also list the claims this clone holds on NAME for runs that "
              "ended (the only network call doctor makes).")
@json_option
def doctor(fix: bool, yes: bool, older_than: str, remote: str | None, as_json: bool) -> int:
    """Find what git-harn could have left behind; say what it costs and how to fix it."""
    from git_harn.doctor.fix import doctor_run

    if yes and not fix:
        raise BadInput("--yes goes with --fix")
    if fix and not yes and not interactive():
        raise BadInput("--fix needs --yes when not on a terminal (nothing was changed)")
    report = doctor_run(repository(), older_than, fix, yes or _ask, remote)
    return show(report, as_json, _lines)


def _ask(fixes: list[Finding]) -> bool:
    for finding in fixes:
        click.echo(f"  {finding.fix}", err=True)
    return confirm(f"apply these {len(fixes)} fix(es)?")


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [indent]


def _lines(report: DoctorReport) -> Iterator[str]:
    if report.fixed is not None:
        yield from _fixed_lines(report)
    summary = report.summary
    disk = shown_size(summary["workspaceDiskBytes"]) if summary["workspaceDiskBytes"] else "none"
    yield (f"{summary['findings']} finding(s), {summary['fixable']} fixable with --fix; "
           f"workspace disk use: {disk}")
    yield (f"run records: {report.records.get('live', 0)} live, {report.records.get('ended', 0)} ended"
           + (f", {report.records['unreadable']} unreadable" if report.records.get("unreadable") else "")
           + f"; git {report.gitVersion}")
    for note in report.notes:
        yield from _wrap(note, "note: ")
    for kind, findings in grouped(report.findings):
        yield ""
        yield f"{kind} ({len(findings)})"
        for finding in findings:
            yield from _finding_lines(finding)


def _finding_lines(finding: Finding) -> Iterator[str]:
    facts = [f for f in (shown_size(finding.diskBytes), shown_age(finding.ageSeconds) and
                         f"{shown_age(finding.ageSeconds)} old") if f]
    head = f"  {finding.code}: {finding.what}" + (f" ({', '.join(facts)})" if facts else "")
    yield from _wrap(head, "")
    yield from _wrap(finding.why, "      ")
    if finding.fix:
        # The command is printed whole, never wrapped: it is meant to be copied.
        yield f"    {'fix (--fix)' if finding.fixable else 'fix'}: {finding.fix}"


def _fixed_lines(report: DoctorReport) -> Iterator[str]:
    for applied in report.fixed or []:
        yield from _wrap(f"{'fixed' if applied.ok else 'not fixed'}: {applied.code}: {applied.what}: "
                         f"{applied.detail}", "")
    if report.fixed:
        yield ""
