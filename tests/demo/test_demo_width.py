"""The demos at 80 columns: no line wider than the terminal, commands that
still read back as the commands they are, and the story they tell true
(issue 23 item 14)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import shlex
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from git_harn.demo.basic import Screen
from git_harn.text import cells
from tests.kit.harn import git, harn, stored_workflow

WIDTH = 80


def _lines(width: int | None, call: str, *args: str) -> list[str]:
    out: list[str] = []
    getattr(Screen(out.append, width), call)(*args)
    return out


def on_terminal(cwd: Path, *args: str, width: int = WIDTH, timeout: float = 120) -> tuple[int, str]:
    """``git harn <args>`` with its output on a pseudo-terminal ``width``
    columns wide: what an operator at such a terminal sees."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, width, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TMPDIR"] = str(cwd)
    child = subprocess.Popen(["git", "harn", *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=slave,
                             stderr=slave, env=env)
    os.close(slave)
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := os.read(master, 65536):
            chunks.append(chunk)
    os.close(master)
    code = child.wait(timeout=timeout)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def _wider(text: str, width: int = WIDTH) -> list[str]:
    return [line for line in text.splitlines() if cells(line) > width]


def _commands(text: str) -> list[str]:
    """Every ``$ …`` line with its backslash continuations joined, as a shell reads it."""
    joined = re.sub(r"\\\n(    )?", "", text)
    return [line[2:] for line in joined.splitlines() if line.startswith("$ ")]


def test_prose_wraps_at_spaces_and_output_folds_with_an_indent() -> None:
    prose = "word " * 40
    assert all(cells(line) <= 30 for line in _lines(30, "say", prose))
    assert " ".join(_lines(30, "say", prose)) == prose.strip()
    folded = _lines(30, "show", "  key  " + "value " * 10)
    assert folded[0].startswith("  key") and all(line.startswith("      ") for line in folded[1:])
    assert all(cells(line) <= 30 for line in folded)
    assert _lines(None, "show", "x" * 500) == ["x" * 500]  # no width: whole lines for scripts


@pytest.mark.parametrize("line", ["git log --oneline origin/main..harnery/salvage/wf-20261202T014938151Z-4a412a-1.4",
                                  "git harn run r -- /a/very/" + "long" * 30 + "/path/agent.py --flag"])
def test_a_long_command_is_continued_so_a_shell_reads_it_back(line: str) -> None:
    shown = _lines(WIDTH, "command", line)
    assert len(shown) > 1 and all(cells(part) <= WIDTH for part in shown)
    assert _commands("\n".join(shown)) == [line]
    assert shlex.split(" ".join(part.removesuffix("\\") for part in shown))  # parts are words


def test_the_basic_demo_fits_80_columns(tmp_path: Path) -> None:
    code, out = on_terminal(tmp_path, "demo")
    assert code == 0, out
    assert _wider(out) == []
    assert re.search(r"^RUN +STATE +KEPT +BRANCH +DIRTY +PATH$", out, re.MULTILINE), out  # status fits itself
    commands = _commands(out)
    assert any(c.startswith("git harn run demo-agent -- ") and c.endswith("/agent.py") for c in commands), commands
    assert "git log harnery/salvage/demo-agent" in commands


def test_the_workflow_demo_fits_80_columns_and_14_fails_on_the_refusal(tmp_path: Path) -> None:
    code, out = on_terminal(tmp_path, "demo", "--workflow")
    assert code == 0, out
    assert _wider(out) == []
    project = next(tmp_path.glob("git-harn-demo-*/project"))
    record = git(project, "for-each-ref", "--format=%(refname)", "refs/harnery/workflows/")
    body = stored_workflow(project, record)
    task = next(t for t in body["tasks"] if t["taskId"] == "1.4")
    # the review refusal the introduction promises, in the last round, is what ended 1.4
    assert (task["status"], task["stage"], task["review"]["rounds"]) == ("failed", "review", 2)
    assert task["detail"].startswith("changes requested after 2 review round(s): reviewer 1: changes-requested")
    assert task["detail"].endswith("; the reviewers also left 1 uncommitted path(s): docs/execplans/1.4.md")
    assert task["salvage"]["committed"] is True  # their notes were salvaged onto roadmap-1.4
    intro = " ".join(out.split("$ HARN_DEMO_REJECT=1.4 git harn workflow run")[0].split())
    assert "the reviewers refuse 1.4 in both review rounds, the second time scribbling their notes" in intro
    assert "git log --oneline origin/main..roadmap-1.4" in _commands(out)


def test_piped_the_demo_prints_whole_lines(tmp_path: Path) -> None:
    result = harn(tmp_path, "demo", env={"TMPDIR": str(tmp_path)})
    assert result.code == 0, result.err
    assert re.search(r"^\$ git harn run demo-agent -- \S+ \S+/agent\.py$", result.out, re.MULTILINE), result.out
