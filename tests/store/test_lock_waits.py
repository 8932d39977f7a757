"""A lock another thread of the same process holds (a workflow's tasks are
threads: the merge lock, the worktrees lock) is handed over the moment that
thread lets go, not found a poll later; one another process holds is still
polled, and broken when that process is dead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from git_harn.clock import Wait, keeping_waits
from git_harn.errors import Busy
from git_harn.store import locks

# Long enough that a waiter that polled would make the test time out.
NEVER = 60.0


def test_a_thread_waiting_for_another_threads_lock_is_woken_and_keeps_the_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locks, "POLL_SECONDS", NEVER)
    path = tmp_path / "merge.lock"
    first_in, let_go, second_in = threading.Event(), threading.Event(), threading.Event()
    order: list[str] = []
    waits: list[Wait] = []

    def first() -> None:
        with locks.hold(path, "merge", "first", NEVER, announce=False):
            order.append("first")
            first_in.set()
            let_go.wait(10)
            order.append("first out")

    def second() -> None:
        first_in.wait(10)
        with keeping_waits(waits.append), locks.hold(path, "merge", "second", NEVER, announce=False):
            order.append("second")
            assert json.loads(path.read_text())["purpose"] == "second"
            second_in.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_in.wait(10)
    time.sleep(0.2)  # the second thread is waiting by now
    assert not second_in.is_set()
    let_go.set()
    assert second_in.wait(10), "the waiting thread was not handed the lock"
    for thread in threads:
        thread.join(10)
    assert order == ["first", "first out", "second"]
    assert not path.exists()  # the last holder removed it
    assert [w.reason for w in waits] == ["merge-lock"] and "held by pid" in waits[0].detail


def test_no_wait_means_busy_at_once_while_another_thread_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "run-x.lock"
    inside, done = threading.Event(), threading.Event()

    def holder() -> None:
        with locks.hold(path, "run x", "holder"):
            inside.set()
            done.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    inside.wait(10)
    try:
        with pytest.raises(Busy, match="run x lock is held by pid"), locks.hold(path, "run x", "second"):
            pass
        with pytest.raises(Busy), locks.hold(path, "run x", "third", wait_seconds=0.3, announce=False):
            pass
    finally:
        done.set()
        thread.join(10)
    with locks.hold(path, "run x", "after"):  # handed on once let go
        assert json.loads(path.read_text())["purpose"] == "after"


def test_a_lock_another_process_holds_is_still_polled_and_a_dead_ones_broken(tmp_path: Path) -> None:
    path = tmp_path / "merge.lock"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = {**locks.process_owner(), "pid": child.pid, "start": locks._process_start(child.pid),
                 "purpose": "another runner"}
        path.write_text(json.dumps(owner))
        with pytest.raises(Busy, match=f"pid {child.pid}"), \
                locks.hold(path, "merge", "mine", wait_seconds=0.3, announce=False):
            pass
        assert json.loads(path.read_text())["pid"] == child.pid  # left as it was
    finally:
        child.kill()
        child.wait()
    with locks.hold(path, "merge", "mine", wait_seconds=5, announce=False):  # its owner is dead: broken
        assert json.loads(path.read_text())["pid"] == os.getpid()
