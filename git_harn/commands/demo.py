"""``git harn demo``."""

from __future__ import annotations

import click

from git_harn.demo import run_demo


@click.command()
def demo() -> int:
    """Show git-harn on a throwaway repository it makes itself."""
    run_demo(click.echo, steps=[])
    return 0
