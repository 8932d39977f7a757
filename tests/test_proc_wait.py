"""run_bounded waits for its child without polling: through a pidfd where
Linux has one, else a thread blocked in waitid. Both ways give the same
exit codes, output and time-outs [P5]."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from git_harn.proc import exited_within, run_bounded


@pytest.fixture(params=["pidfd", "thread"])
def waiting(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "pidfd" and not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfd_open here")
    if request.param == "thread":
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    return str(request.param)


def test_exit_code_output_and_input_come_back(tmp_path: Path, waiting: str) -> None:
    script = "import sys\ndata = sys.stdin.read()\nprint(data.upper())\nprint('err', file=sys.stderr)\nsys.exit(3)"
    done = run_bounded([sys.executable, "-c", script], tmp_path, timeout=60, stdin=b"hello")
    assert (done.exit_code, done.stdout, done.stderr, done.timed_out) == (3, b"HELLO\n", b"err\n", False)


def test_a_child_that_exits_at_once_with_no_input(tmp_path: Path, waiting: str) -> None:
    done = run_bounded(["true"], tmp_path, timeout=60)
    assert done.exit_code == 0 and not done.timed_out
    done = run_bounded(["false"], tmp_path, timeout=60)
    assert done.exit_code == 1


def test_a_time_out_ends_the_child_and_what_it_started(tmp_path: Path, waiting: str) -> None:
    marker = tmp_path / "grandchild.pid"
    script = (f"import subprocess, time\np = subprocess.Popen(['sleep', '300'])\n"
              f"open({str(marker)!r}, 'w').write(str(p.pid))\ntime.sleep(300)")
    started = time.monotonic()
    done = run_bounded([sys.executable, "-c", script], tmp_path, timeout=2)
    assert done.timed_out and done.exit_code is None
    assert time.monotonic() - started < 60
    grandchild = int(marker.read_text())
    for _ in range(100):  # the kill is sent; the kernel may take a moment to end it
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_the_wait_returns_when_the_child_exits_not_at_the_time_limit(tmp_path: Path, waiting: str) -> None:
    started = time.monotonic()
    done = run_bounded(["sleep", "0.2"], tmp_path, timeout=120)
    assert done.exit_code == 0 and time.monotonic() - started < 60


def test_exited_within_leaves_the_child_to_its_parent(tmp_path: Path, waiting: str) -> None:
    """Not reaped: the caller's wait still gets the status, so a kill after a
    time-out can never reach a pid the system gave to another process."""
    pid = os.spawnvp(os.P_NOWAIT, "sh", ["sh", "-c", "exit 7"])
    assert exited_within(pid, 60)
    assert exited_within(pid, 0)  # still there, a zombie, until reaped
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 7
    pid = os.spawnvp(os.P_NOWAIT, "sleep", ["sleep", "300"])
    try:
        assert not exited_within(pid, 0.1)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (ended, not yet reaped by init) counts as ended.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
