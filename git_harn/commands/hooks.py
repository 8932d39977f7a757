"""hooks install, uninstall, status, and the hidden run the scripts call [H1]-[H3]."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

from git_harn.commands.common import json_option, repository
from git_harn.commands.render import show, table
from git_harn.hooks import files as hook_files
from git_harn.hooks.actions import run_hook
from git_harn.text import printable_path


@click.group()
def hooks() -> None:
    """Install, remove and inspect git-harn's git hooks."""


@hooks.command()
@click.option("--force", is_flag=True,
              help="Set aside (never delete) a file that blocks chaining, then install.")
@click.option("--manual", is_flag=True, help="Print what to install by hand; change nothing.")
def install(force: bool, manual: bool) -> int:
    """Install the hooks; an existing hook is chained and still runs first."""
    repo = repository()
    if manual:
        click.echo(hook_files.manual_instructions(repo))
        return 0
    return show(hook_files.install(repo, force), False, _change_lines)


@hooks.command()
def uninstall() -> int:
    """Remove git-harn's hooks and put chained hooks back as they were."""
    return show(hook_files.uninstall(repository()), False, _change_lines)


@hooks.command("status")
@json_option
def status_(as_json: bool) -> int:
    """Say, per hook, whether it is ours, chained, foreign or missing."""
    return show(hook_files.status(repository()), as_json, _status_lines)


def _state_text(s: hook_files.HookStatus) -> str:
    outdated = "" if s.current or s.state == hook_files.FOREIGN or s.state == hook_files.MISSING else " (outdated)"
    if s.state == hook_files.UNDER_PRE_COMMIT:
        return f"ours, run by pre-commit from {Path(s.ours or '').name}{outdated}"
    if s.state == hook_files.FOREIGN and s.manager:
        return f"foreign ({s.manager})"
    return s.state + outdated


def _chained_text(s: hook_files.HookStatus) -> str:
    if not s.chained:
        return "-"
    shown = printable_path(s.chained)
    return f"{s.manager}: {shown}" if s.manager and s.state == hook_files.CHAINED else shown


def _status_lines(result: hook_files.HooksStatus) -> Iterator[str]:
    yield f"hooks folder: {printable_path(result.hooksDir)}"
    rows = [[s.name, _state_text(s), _chained_text(s)] for s in result.hooks]
    yield table(["HOOK", "STATE", "CHAINED"], rows)
    for s in result.hooks:
        for backup in s.backups:
            yield f"set aside by --force: {printable_path(backup)}"
        if s.state == hook_files.FOREIGN:
            yield (f"{s.name}: not git-harn's; 'git harn hooks install' chains it"
                   + (" (git-lfs: after 'git lfs install --force')" if s.manager == "git-lfs" else ""))
        elif not s.current and s.state != hook_files.MISSING:
            yield f"{s.name}: run 'git harn hooks install' to update it"
    yield from result.advice


@hooks.command("run", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("hook_name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_(hook_name: str, args: tuple[str, ...]) -> int:
    """Called by the hook scripts: do the hook's work (internal)."""
    stdin_text = sys.stdin.read() if hook_name == "reference-transaction" else ""
    return run_hook(hook_name, list(args), stdin_text)


def _change_lines(result: hook_files.HooksChanged) -> Iterator[str]:
    yield f"hooks folder: {printable_path(result.hooksDir)}"
    rows = []
    for change in result.changes:
        note = f"runs {Path(change.chained).name} first" if change.chained else ""
        if change.action == hook_files.LEFT_ALONE:
            note = "not git-harn's hook"
        rows.append([change.name, change.action, note or "-"])
    yield table(["HOOK", "ACTION", "NOTE"], rows)
    for change in result.changes:
        if change.setAside:
            yield f"set aside (not deleted): {printable_path(change.setAside)}"
