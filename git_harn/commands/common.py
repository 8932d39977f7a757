"""Pieces every command shares: opening the repository, the run id argument."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from git_harn.git import Repo, open_repo
from git_harn.notices import interactive
from git_harn.store.ids import validate_run_id


class RunIdCommand(click.Command):
    """A command whose first argument is a run id: ``start -bad`` is an
    invalid run id (a run id never starts with '-'), not an unknown option -b."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # the parser consumes its list
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            words = given[:given.index("--")] if "--" in given else given
            for word in words:
                if (word.startswith("-") and not word.startswith("--") and len(word) > 2
                        and word.startswith(exc.option_name)):
                    validate_run_id(word)  # raises: a run id starts with a letter or digit
            raise


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
