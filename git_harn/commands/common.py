"""Pieces every command shares: opening the repository, the run id argument."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from git_harn.git import Repo, open_repo
from git_harn.notices import interactive
from git_harn.store.ids import validate_run_id


def repository() -> Repo:
    return open_repo(Path.cwd())


def run_id_arg(value: str) -> str:
    return validate_run_id(value)


def confirm(question: str) -> bool:
    """Ask on a terminal; anything but yes is no."""
    if not interactive():
        return False
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
