"""``git harn demo``: the main job, end to end, on a throwaway repository."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from git_harn.git.scratch import init_repository

AGENT = textwrap.dedent('''\
    """A scripted stand-in for a coding agent: edits, adds, never commits, fails."""
    import pathlib, sys
    app = pathlib.Path("app.py")
    app.write_text(app.read_text() + "\\ndef greet(name):\\n    return f'hello {name}'\\n")
    pathlib.Path("notes").mkdir(exist_ok=True)
    pathlib.Path("notes/plan.md").write_text("# Plan\\n- add greet()\\n- write tests\\n")
    pathlib.Path("test_app.py").write_text("from app import greet\\n")
    print("agent: edited app.py, wrote notes/plan.md and test_app.py; giving up (exit 1)")
    sys.exit(1)
''')

MIN_WIDTH = 40  # narrower than this, lines are printed whole


def screen_width() -> int | None:
    """The terminal's width (``COLUMNS`` first, as usual); None when printing
    to a file or a pipe, which get whole lines."""
    if not sys.stdout.isatty():
        return None
    columns = shutil.get_terminal_size().columns
    return columns if columns >= MIN_WIDTH else None


@dataclass
class Screen:
    """What a demo prints, fitted to ``width`` (None: whole lines): its own
    prose wrapped at spaces; a command continued with a backslash, as a shell
    reads it back; a command's output folded, each continuation indented."""

    echo: Callable[[str], None]
    width: int | None = None

    def say(self, text: str) -> None:
        """Prose: each line of ``text`` is a paragraph, wrapped to the width."""
        for line in text.split("\n"):
            self._out(textwrap.wrap(line, self.width, break_on_hyphens=False) or [""] if self.width else [line])

    def command(self, line: str) -> None:
        """``$ <line>``, continued with `` \\`` where it would pass the width."""
        self._out(self._continued(f"$ {line}"))

    def show(self, text: str) -> None:
        """A command's output as it printed it, each line folded to the width."""
        for line in text.split("\n"):
            if self.width is None or len(line) <= self.width:
                self._out([line])
                continue
            indent = " " * (len(line) - len(line.lstrip()) + 4)
            self._out(textwrap.wrap(line, self.width, subsequent_indent=indent, break_on_hyphens=False,
                                    drop_whitespace=True) or [line[: self.width]])

    def _continued(self, line: str) -> list[str]:
        if self.width is None or len(line) <= self.width:
            return [line]
        room = self.width - 2  # the " \\" that ends a continued line
        out: list[str] = []
        current = ""
        for word in line.split(" "):
            candidate = f"{current} {word}" if current else word
            if len(candidate) <= room or not current:
                current = candidate
            else:
                out.append(current)
                current = "    " + word
            while len(current) > room:  # a word wider than the screen: a backslash-newline joins it again
                out.append(current[:room + 1] + "\\")
                current = current[room + 1:]
        out.append(current)
        return [part + " \\" if n < len(out) - 1 and not part.endswith("\\") else part
                for n, part in enumerate(out)]

    def _out(self, lines: list[str]) -> None:
        for line in lines:
            self.echo(line)


Say = Screen


def make_repository(root: Path) -> Path:
    project = init_repository(root / "project", {
        "app.py": "def main():\n    print('hi')\n",
        "README.md": "# demo project\n",
        ".gitignore": "__pycache__/\n",
    }, {"user.name": "Demo Operator", "user.email": "operator@example.com",
        "harn.worktreeRoot": str(root / "worktrees")})
    (root / "agent.py").write_text(AGENT)
    return project


def harn(project: Path, say: Say, *args: str, env: Mapping[str, str] | None = None) -> int:
    """Run git-harn as the operator would, showing the command (with ``env``,
    the variables it adds to this environment) and its output, stderr and
    stdout together as a terminal shows them."""
    shown_env = "".join(f"{key}={value} " for key, value in (env or {}).items())
    say.say("")
    say.command(f"{shown_env}git harn {shlex.join(args)}")
    argv = [sys.executable, "-m", "git_harn", *args]
    full_env = {**os.environ, **(env or {})}
    if say.width is None:
        done = subprocess.run(argv, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              check=False, env=full_env)
        code, output = done.returncode, done.stdout
    else:
        code, output = _on_a_terminal(argv, project, full_env, say.width)
    if output.strip():
        say.show(output.rstrip("\n"))
    say.show(f"(exit {code})")
    return code


def _on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str], width: int) -> tuple[int, str]:
    """Run ``argv`` with its output on a pseudo-terminal ``width`` columns
    wide, as on the operator's own screen, so what fits itself to a terminal
    (status) does; stdin is no terminal, so nothing asks or redraws. Returns
    (exit code, stdout and stderr as the terminal showed them)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, width, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}  # the terminal says its size
    try:
        child = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    finally:
        os.close(slave)
    chunks = []
    with suppress(OSError):  # EIO once every writer closed its end
        while chunk := os.read(master, 65536):
            chunks.append(chunk)
    os.close(master)
    code = child.wait()
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def run_demo(say: Say, steps: list[Callable[[Path, Say, str], None]]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="git-harn-demo-"))
    project = make_repository(root)
    say.say(f"demo repository: {project}")
    say.say("an 'agent' edits app.py, adds two files, never commits, and exits 1.")
    run_id = "demo-agent"
    harn(project, say, "run", run_id, "--", sys.executable, str(root / "agent.py"))
    say.say("\ncleanup kept the workspace: its only copy of the agent's work is uncommitted.")
    harn(project, say, "status")
    for step in steps:
        step(project, say, run_id)
    say.say(f"\nthe demo repository stays at {project}; delete {root} when done.")
    return project
