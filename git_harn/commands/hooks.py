"""hooks install, uninstall, status, and the hidden run the scripts call [H1]-[H3]."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from git_harn.commands.common import json_option, repository
from git_harn.commands.render import emit_json, table
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
    directory, changes = hook_files.install(repo, force)
    _show_changes(directory, changes)
    return 0


@hooks.command()
def uninstall() -> int:
    """Remove git-harn's hooks and put chained hooks back as they were."""
    directory, changes = hook_files.uninstall(repository())
    _show_changes(directory, changes)
    return 0


@hooks.command("status")
@json_option
def status_(as_json: bool) -> int:
    """Say, per hook, whether it is ours, chained, foreign or missing."""
    directory, states = hook_files.status(repository())
    if as_json:
        emit_json({"schemaVersion": 1, "hooksDir": str(directory), "hooks": states})
        return 0
    click.echo(f"hooks folder: {printable_path(str(directory))}")
    rows = [[s.name, s.state + ("" if s.current or s.state not in ("ours", "chained") else " (outdated)"),
             printable_path(s.chained) if s.chained else "-"] for s in states]
    click.echo(table(["HOOK", "STATE", "CHAINED"], rows))
    for s in states:
        for backup in s.backups:
            click.echo(f"set aside by --force: {printable_path(backup)}")
    return 0


@hooks.command("run", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("hook_name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_(hook_name: str, args: tuple[str, ...]) -> int:
    """Called by the hook scripts: do the hook's work (internal)."""
    stdin_text = sys.stdin.read() if hook_name == "reference-transaction" else ""
    return run_hook(hook_name, list(args), stdin_text)


def _show_changes(directory: Path, changes: list[hook_files.HookChange]) -> None:
    click.echo(f"hooks folder: {printable_path(str(directory))}")
    rows = []
    for change in changes:
        note = f"runs {Path(change.chained).name} first" if change.chained else ""
        if change.action == hook_files.LEFT_ALONE:
            note = "not git-harn's hook"
        rows.append([change.name, change.action, note or "-"])
    click.echo(table(["HOOK", "ACTION", "NOTE"], rows))
    for change in changes:
        if change.setAside:
            click.echo(f"set aside (not deleted): {printable_path(change.setAside)}")
