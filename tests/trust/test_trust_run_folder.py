"""The run folder is in the shared git dir, which every stage agent can
write: what the runner writes there each stage (the stage-times file) is
never written through a thing a stage put in its place, and never waits
on one [T2] [P5]."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from git_harn.workflow.ledger.record import STAGE_TIMES, StageTimes

SPAN = [{"kind": "stage", "stage": "plan", "attempt": 1, "startedAt": "2026-12-07T00:00:00Z", "finishedAt": None}]


def _noted(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / STAGE_TIMES).read_text().splitlines()]


def test_a_named_pipe_in_place_of_the_stage_times_file_never_stops_the_runner(tmp_path: Path) -> None:
    """Opened for writing, a pipe with no reader would block the runner's
    next stage start for ever (and every task's, behind its lock)."""
    os.mkfifo(tmp_path / STAGE_TIMES)
    times = StageTimes(tmp_path)
    noting = threading.Thread(target=times.note, args=("run-1", SPAN), daemon=True)
    noting.start()
    noting.join(10)
    blocked = noting.is_alive()
    if blocked:  # let the blocked open end, so the thread does too
        reader = os.open(tmp_path / STAGE_TIMES, os.O_RDONLY | os.O_NONBLOCK)
        noting.join(5)
        os.close(reader)
    assert not blocked
    assert _noted(tmp_path) == [{"runId": "run-1", "timeline": SPAN}]  # a file of its own again


def test_a_hard_link_in_place_of_the_stage_times_file_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "profile"
    victim.write_text("export PATH=/usr/bin\n")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / STAGE_TIMES).hardlink_to(victim)
    StageTimes(folder).note("run-1", SPAN)
    assert victim.read_text() == "export PATH=/usr/bin\n"
    assert _noted(folder) == [{"runId": "run-1", "timeline": SPAN}]


def test_a_folder_in_place_of_the_stage_times_file_is_no_crash(tmp_path: Path) -> None:
    (tmp_path / STAGE_TIMES).mkdir()
    StageTimes(tmp_path).note("run-1", SPAN)  # the span is lost, the run goes on
