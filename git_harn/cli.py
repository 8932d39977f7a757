"""The command line: parse, call a plain function, render. No logic here.

Errors map to exit codes in one place [C1] [C2]: 1 error, 2 bad input,
3 refused or needs an operator; one line on stderr, a traceback only with
HARN_DEBUG=1.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import sys

import click

from git_harn import __version__, notices
from git_harn.commands import COMMANDS
from git_harn.errors import EXIT_ERROR, EXIT_USAGE, HarnError


class _LazyGroup(click.Group):
    """Loads a command's module only when that command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute = COMMANDS[cmd_name]
        loaded = importlib.import_module(f"git_harn.commands.{module}")
        # Start-up is over: the command runs with the collector on (__main__.py turned it off),
        # and what start-up made, which lives as long as the process, moved out of its sight.
        gc.freeze()
        gc.enable()
        command: click.Command = getattr(loaded, attribute)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                          list[str]]:
        # click suggests from self.commands, which a lazy group leaves empty.
        name = args[0]
        if name not in COMMANDS and not name.startswith("-") and not ctx.resilient_parsing:
            raise click.exceptions.NoSuchCommand(name, possibilities=list(COMMANDS), ctx=ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="git-harn")
def cli() -> None:
    """Isolated git worktrees for unattended runs that never lose work.

    See 'man git-harn' (or 'git help harn') for the whole manual.
    """


def _wants_json(argv: list[str]) -> bool:
    """``--json`` among git-harn's own words (not the command after ``--``)."""
    words = argv[:argv.index("--")] if "--" in argv else argv
    return "--json" in words


_JSON_ERRORS = False


def _fail(message: str, code: int) -> None:
    """One line on stderr; under --json also one error document on stdout."""
    click.echo(f"git harn: error: {message}", err=True)
    if _JSON_ERRORS:
        document = {"schemaVersion": 1, "error": {"message": message, "exitCode": code}}
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    sys.exit(code)


def _usage(exc: click.exceptions.NoArgsIsHelpError) -> None:
    """A group without its subcommand: the usage and the list of commands,
    as many lines as click wrote (exit 2, as click does)."""
    click.echo(exc.format_message(), err=True)
    if _JSON_ERRORS:
        _fail(f"missing command (see '{exc.ctx.command_path} --help')", EXIT_USAGE)
    sys.exit(EXIT_USAGE)


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    # As an exception, so that cleanups run: locks released, scratch checkouts removed.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    global _JSON_ERRORS
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    notices.configure()
    _JSON_ERRORS = _wants_json(sys.argv[1:] if argv is None else argv)
    try:
        code = cli.main(args=argv, prog_name="git harn", standalone_mode=False)
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except click.exceptions.NoArgsIsHelpError as exc:
        _usage(exc)
    except click.exceptions.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        name = ctx.command_path if ctx is not None else "git harn"
        hint = f" (see '{name} --help')"
        text = exc.format_message().replace("\n", " ")
        _fail(f"{text}{hint}" if exc.exit_code == EXIT_USAGE else text, exc.exit_code)
    except HarnError as exc:
        if os.environ.get("HARN_DEBUG") == "1":
            raise
        _fail(exc.message.replace("\n", " "), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:
        if os.environ.get("HARN_DEBUG") == "1":
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (HARN_DEBUG=1 shows a traceback)",
              EXIT_ERROR)
    sys.exit(code if isinstance(code, int) else 0)
