"""Shared pieces of the issue-11 tests: git-harn should behave like git where
people expect git. Real repositories, real tools, real file layouts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

from tests.kit.harn import git, harn, record

MARKER = b"# git-harn hook: "  # the second line of every hook script git-harn writes


def ws_path(repo: Path, run_id: str) -> Path:
    return Path(record(repo, run_id)["path"])


def start(repo: Path, run_id: str, *args: str, env: dict[str, str] | None = None) -> Path:
    result = harn(repo, "start", run_id, *args, env=env)
    assert result.code == 0, result.err
    return ws_path(repo, run_id)


def has_record(repo: Path, run_id: str) -> bool:
    done = subprocess.run(["git", "rev-parse", "-q", "--verify", f"refs/harnery/runs/{run_id}"],
                          cwd=repo, capture_output=True, text=True, check=False)
    return done.returncode == 0


def git_harn_logger(folder: Path, log: Path) -> dict[str, str]:
    """An environment whose `git-harn` only logs each call (one line per
    call): to count how often git's hooks run git-harn."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "git-harn"
    script.write_text(f'#!/bin/sh\necho "git-harn $*" >> "{log}"\n')
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def files_with_our_marker(folder: Path) -> list[str]:
    """Every file under ``folder`` that is one of git-harn's hook scripts."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            head = path.read_bytes()[:512]
            if any(line.startswith(MARKER) for line in head.splitlines()[:4]):
                found.append(str(path.relative_to(folder)))
    return found


def display_width(text: str) -> int:
    """Terminal cells ``text`` takes: East Asian wide and full-width characters take two."""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def harn_on_terminal(cwd: Path, *args: str, columns: int = 80) -> tuple[int, str]:
    """`git harn <args>` with its stdout on a terminal ``columns`` wide (a
    pseudo-terminal; COLUMNS says the same). Returns the exit code and what
    the terminal showed."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    child = subprocess.Popen(["git", "harn", *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=slave,
                             stderr=subprocess.PIPE, env=dict(os.environ, COLUMNS=str(columns)))
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    code = child.wait(timeout=120)
    assert child.stderr is not None
    child.stderr.close()
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def bash_git_completion() -> Path | None:
    """git's own bash completion script, where this machine keeps it."""
    candidates = [
        Path("/usr/share/bash-completion/completions/git"),
        Path("/etc/bash_completion.d/git"),
        Path("/usr/share/git/completion/git-completion.bash"),
        Path("/usr/share/git-core/contrib/completion/git-completion.bash"),
        Path("/usr/local/etc/bash_completion.d/git-completion.bash"),
        Path("/opt/homebrew/etc/bash_completion.d/git-completion.bash"),
    ]
    return next((p for p in candidates if p.is_file()), None)


# --- husky v9 -------------------------------------------------------------------
# What `husky` (9.1.7, index.js) writes when `npm install` runs its `prepare`
# script: `git config core.hooksPath .husky/_`, then in .husky/_ a .gitignore of
# `*`, the dispatcher `h` (the package's `husky` file), one two-line stub per
# hook that sources `h`, and a deprecated husky.sh. `h` runs the user's
# committed `.husky/$(basename $0)` with `sh -e`, and exits 0 when there is none.

HUSKY_H = """#!/usr/bin/env sh
[ "$HUSKY" = "2" ] && set -x
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n

[ ! -f "$s" ] && exit 0

if [ -f "$HOME/.huskyrc" ]; then
\techo "husky - '~/.huskyrc' is DEPRECATED, please move your code to ~/.config/husky/init.sh"
fi
i="${XDG_CONFIG_HOME:-$HOME/.config}/husky/init.sh"
[ -f "$i" ] && . "$i"

[ "${HUSKY-}" = "0" ] && exit 0

export PATH="node_modules/.bin:$PATH"
sh -e "$s" "$@"
c=$?

[ $c != 0 ] && echo "husky - $n script failed (code $c)"
[ $c = 127 ] && echo "husky - command not found in PATH=$PATH"
exit $c
"""

HUSKY_HOOKS = ("pre-commit", "pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-commit",
               "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-rebase", "post-rewrite",
               "post-checkout", "post-merge", "pre-push", "pre-auto-gc")

HUSKY_STUB = '#!/usr/bin/env sh\n. "$(dirname "$0")/h"'

HUSKY_SH = ('echo "husky - DEPRECATED\n\nPlease remove the following two lines from $0:\n\n'
            '#!/usr/bin/env sh\n. \\"\\$(dirname -- \\"\\$0\\")/_/husky.sh\\"\n\n'
            'They WILL FAIL in v10.0.0\n"')


def husky_prepare(top: Path) -> Path:
    """Run husky 9's install step, as `npm install` does through `prepare`, in
    the checkout at ``top``: the same config and the same files."""
    git(top, "config", "core.hooksPath", ".husky/_")
    folder = top / ".husky" / "_"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".gitignore").write_text("*")
    (folder / "h").write_text(HUSKY_H)
    (folder / "h").chmod(0o644)  # copyFileSync of a 0644 file: h is sourced, not run
    for name in HUSKY_HOOKS:
        (folder / name).write_text(HUSKY_STUB)
        (folder / name).chmod(0o755)
    (folder / "husky.sh").write_text(HUSKY_SH)
    return folder


def husky_user_hook(top: Path, name: str, body: str) -> None:
    """A hook the user commits as `.husky/<name>` (husky runs it with `sh -e`)."""
    path = top / ".husky" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body + "\n")


# --- pre-commit ---------------------------------------------------------------

def pre_commit_exe() -> str | None:
    """pre-commit on PATH, or beside the Python running the tests (a virtualenv not activated)."""
    beside = Path(sys.executable).parent / "pre-commit"
    return shutil.which("pre-commit") or (str(beside) if os.access(beside, os.X_OK) else None)


def pre_commit_config(marker: Path) -> str:
    """A .pre-commit-config.yaml whose only hook, at post-checkout, appends a
    line to ``marker``: proof that pre-commit ran. It needs no download."""
    return (
        "repos:\n"
        "- repo: local\n"
        "  hooks:\n"
        "  - id: mark\n"
        "    name: mark\n"
        f"    entry: sh -c 'echo pre-commit-ran >> \"{marker}\"'\n"
        "    language: system\n"
        "    always_run: true\n"
        "    pass_filenames: false\n"
        "    stages: [post-checkout]\n"
    )
