"""Run the git CLI as an argv list (never through a shell) [P5]."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from git_harn.errors import GitFailure
from git_harn.git.env import git_env


def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    check: bool = True,
    input_bytes: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd``, sealed (``sealed_argv``); raise GitFailure with git's own first line."""
    retryable = subcommand(args) in ENUMERATING_COMMANDS
    after = _guarded(args, cwd)
    argv = sealed_argv(args)  # after the guard: what it found may have added to the pins
    code = -1
    try:
        for pause in (*HALF_WRITTEN_PAUSES, None):
            done = _run_once(argv, cwd, input_bytes, env)
            code = done.returncode
            if pause is None or not retryable or not saw_half_written_worktree(done):
                break
            time.sleep(pause)
    finally:
        if after is not None:
            after(code)
    if check and done.returncode != 0:
        raise GitFailure(f"git {subcommand(args)} failed: {error_line(done.stderr or done.stdout)}")
    return done


# --- the guard ------------------------------------------------------------------------

# What a layer above installs for as long as agents may run beside the host
# (a workflow run): called before each git the host runs, with its argv and
# cwd, it checks that nothing git would obey changed since it was sealed [T2],
# and may raise to stop this git; what it returns, if anything, is called with
# git's exit code once git ended (-1: it could not run). Not called for the
# gits the guard itself runs.
Guard = Callable[[Sequence[str], Path], "Callable[[int], None] | None"]
_GUARD: list[Guard] = []
_IN_GUARD = threading.local()


def install_guard(guard: Guard | None) -> None:
    """Install ``guard`` (None: remove it) for every git run from now on, in every thread."""
    _GUARD[:] = [guard] if guard is not None else []


def _guarded(args: Sequence[str], cwd: Path) -> Callable[[int], None] | None:
    if not _GUARD or getattr(_IN_GUARD, "on", False):
        return None
    _IN_GUARD.on = True
    try:
        after = _GUARD[0](args, cwd)
    finally:
        _IN_GUARD.on = False
    if after is None:
        return None

    def unguarded(code: int) -> None:
        _IN_GUARD.on = True
        try:
            after(code)
        finally:
            _IN_GUARD.on = False
    return unguarded


NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
# What no git of git-harn's obeys, whatever a config file says [T1]: an
# fsmonitor is a program git runs on every look at the index (status,
# checkout, rebase, worktree add ...), and ``ext::`` a transport that is a
# command line. Both are an agent's to write in the shared config.
SEALED = ("-c", "core.fsmonitor=false", "-c", "protocol.ext.allow=never")
# Commands that make a diff: an external diff program or a textconv filter
# named in a config file would run as the host; git-harn reads diffs as git
# makes them.
_DIFFS = frozenset({"diff", "log", "show", "format-patch", "range-diff"})
_NO_DIFF_PROGRAMS = ("--no-ext-diff", "--no-textconv")
# The run's pinned settings (``git.pins``): ``-c`` pairs read at its start.
_PINS: list[tuple[str, ...]] = []


def install_pins(args: Sequence[str]) -> None:
    """Pass ``args`` (``-c k=v`` pairs) to every git run from now on (empty: none)."""
    _PINS[:] = [tuple(args)] if args else []


def sealed_argv(args: Sequence[str]) -> list[str]:
    """``git`` with hooks off, the sealed settings, a run's pinned settings
    (``git.pins``), then ``args``; a diff without external programs.
    ``git config`` is left as it is: it runs nothing, and ``-c`` pairs
    would show among what it lists, as if the operator had set them."""
    if subcommand(args) in _REPORT_HOOKS_SETTING:
        return ["git", *hooks_off(args), *args]
    pins = _PINS[0] if _PINS else ()
    head, command, tail = split_command(args)
    if command in _DIFFS:
        tail = [*_NO_DIFF_PROGRAMS, *tail]
    return ["git", *NO_HOOKS, *SEALED, *pins, *head, *([command] if command else []), *tail]


def split_command(args: Sequence[str]) -> tuple[list[str], str | None, list[str]]:
    """(global options, the subcommand, its arguments) of ``args``."""
    rest = list(args)
    head: list[str] = []
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        head.append(option)
        if option in _GLOBAL_WITH_VALUE and rest:
            head.append(rest.pop(0))
    if not rest:
        return head, None, []
    return head, rest[0], rest[1:]


_GLOBAL_WITH_VALUE = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                                "--config-env", "--super-prefix"})
# Commands that run no hook and report the hooks setting itself (``config
# --get core.hooksPath``, ``rev-parse --git-path hooks``): left as they are.
_REPORT_HOOKS_SETTING = frozenset({"config", "rev-parse"})


def hooks_off(args: Sequence[str]) -> tuple[str, ...]:
    """``-c core.hooksPath=/dev/null`` for every git git-harn runs [P5]. A
    relative core.hooksPath (``.githooks``, husky's ``.husky/_``) is read
    from the worktree git runs in, which an agent can write and commit to:
    a hook it committed would run as the operator in the host's own switch,
    commit or worktree add. git-harn's own hooks stand aside for its
    commands anyway (HARN_INTERNAL), so no hook is lost that should run."""
    return () if subcommand(args) in _REPORT_HOOKS_SETTING else NO_HOOKS


# git dies ("failed to read <gitdir>/worktrees/<name>/commondir: Success",
# or "bad object worktrees/<name>/HEAD" when it walks every worktree's HEAD)
# when it lists worktrees while another git is between creating those files
# and writing them (``worktree add``), or removing the folder (``worktree
# remove``, ``prune``): a window of microseconds that parallel tasks do hit. These
# commands read the list before they change anything, so running them again is
# safe; others (rebase, commit, merge) are left to fail as they would.
ENUMERATING_COMMANDS = frozenset({"fetch", "worktree", "branch", "checkout", "switch"})
HALF_WRITTEN_PAUSES = (0.01, 0.03, 0.1, 0.3, 1.0)
# Compiled on first use (re caches it): only a failed git is searched.
_HALF_WRITTEN = (rb"fatal: (?:failed to read (?:[^\n]*/)?worktrees/[^/\n]+/commondir"
                 rb"|bad object (?:[^\n]*/)?worktrees/[^/\n]+/HEAD)")


def saw_half_written_worktree(done: subprocess.CompletedProcess[bytes]) -> bool:
    return done.returncode != 0 and re.search(_HALF_WRITTEN, done.stderr or b"") is not None


def _run_once(argv: list[str], cwd: Path, input_bytes: bytes | None,
              env: Mapping[str, str] | None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, cwd=cwd, input=input_bytes, capture_output=True, env=git_env(env),
                              check=False)
    except OSError as exc:
        raise GitFailure(f"cannot run git: {exc}") from exc


def subcommand(args: Sequence[str]) -> str:
    """The git subcommand in ``args``, past global options such as ``-c k=v``."""
    return split_command(args)[1] or "(no command)"


def error_line(raw: bytes) -> str:
    """The line of git's output that says what went wrong: its last
    ``fatal:``/``error:`` line, else its first line (not a progress line)."""
    lines = [line.strip() for line in raw.decode("utf-8", "replace").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("fatal: ", "error: "))]
    if errors:
        return errors[-1].removeprefix("fatal: ").removeprefix("error: ")
    return lines[0] if lines else "(no message)"


def git_version(cwd: Path) -> tuple[str, tuple[int, ...]]:
    """git's version as it prints it, and its leading numbers (2.39.5 -> (2, 39, 5))."""
    done = run_git(["--version"], cwd, check=False)
    text = done.stdout.decode("utf-8", "replace").strip().removeprefix("git version ")
    numbers = re.match(r"(\d+(?:\.\d+)*)", text)
    return text, tuple(int(n) for n in numbers.group(1).split(".")) if numbers else ()
