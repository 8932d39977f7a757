"""Hostile reports and commands: bounded memory, clear errors [P5] [P7]."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from git_harn.proc import MAX_CAPTURE, run_bounded
from tests.kit.harn import harn, make_repo


@pytest.mark.parametrize("make", [
    lambda d: d,                                                  # a directory
    lambda d: Path("/dev/zero"),                                  # endless input
    lambda d: _write(d / "deep.json", "[" * 100000 + "]" * 100000),
    lambda d: _write(d / "dup.json", '{"ok": false, "ok": true, "rebased": true, "squashMerged": true,'
                                     ' "pushed": true, "roadmapMarkedDone": true}'),
])
def test_report_check_refuses_hostile_files_with_exit_2(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo(tmp_path / "repo")
    started = time.monotonic()
    result = harn(repo, "report", "check", "integration", str(make(tmp_path)), timeout=60)
    assert result.code == 2, result.err
    assert result.err.startswith("git harn: error: ") and result.err.count("\n") == 1
    assert time.monotonic() - started < 30


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_flood_of_output_is_bounded_and_the_timeout_holds(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.buffer.write(b'x' * 65536)"]
    started = time.monotonic()
    done = run_bounded(argv, tmp_path, timeout=2)
    assert done.timed_out and time.monotonic() - started < 15
    assert len(done.stdout) <= MAX_CAPTURE
