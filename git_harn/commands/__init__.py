"""Click commands: one module per area, each a thin shell over the domain."""

from __future__ import annotations

import click

from git_harn.commands.demo import demo
from git_harn.commands.reclaim import reclaim
from git_harn.commands.report import report
from git_harn.commands.workspaces import cleanup, log, run, start, status

COMMANDS: list[click.Command] = [start, run, status, cleanup, log, demo, report, reclaim]
