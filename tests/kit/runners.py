"""Runners the tests start themselves, in a process group of their own, so
that a test can stop or kill exactly that group (and nothing else) [P6]."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.kit.git_crashes import group_members

GIT_HARN = shutil.which("git-harn") or "git-harn"


def state_of(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()[0]


def alive(pid: int) -> bool:
    return state_of(pid) not in (None, "Z", "X")


@dataclass
class Runner:
    """``git-harn <args>`` leading its own process group."""

    proc: subprocess.Popen[str]

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def wait_stopped(self, seconds: float = 90) -> None:
        """Until the runner stopped itself at its failpoint (HARN_FAILPOINT_MODE=stop)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.proc.poll() is None and state_of(self.proc.pid) != "T":
            time.sleep(0.05)
        if self.proc.poll() is not None:
            out, err = self.proc.communicate()
            raise AssertionError(f"the runner ended (exit {self.proc.returncode}) before its failpoint: {err}{out}")
        assert state_of(self.proc.pid) == "T", "the runner never reached its failpoint"

    def kill_group(self) -> tuple[str, str]:
        """SIGKILL the whole group (git-harn and every git it runs), as an
        out-of-memory kill or a container stop does; wait until none is left."""
        with suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        out, err = self.proc.communicate(timeout=30)
        deadline = time.monotonic() + 10
        while group_members(self.pgid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not group_members(self.pgid), "the killed process group lives on"
        return out, err

    def stop(self) -> tuple[str, str]:
        """SIGTERM to the group, as an operator's Ctrl-C or a service stop; wait for the end."""
        with suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGTERM)
        try:
            return self.proc.communicate(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.kill_group()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *_: object) -> None:
        if self.proc.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(self.pgid, signal.SIGKILL)
            self.proc.communicate(timeout=30)


def start(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Runner:
    proc = subprocess.Popen([GIT_HARN, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, **(env or {})), start_new_session=True)
    return Runner(proc)


def at_failpoint(cwd: Path, point: str, *args: str, env: dict[str, str] | None = None) -> Runner:
    """A runner that freezes itself at ``point``, for the test to kill there."""
    runner = start(cwd, *args, env={"HARN_FAILPOINT": point, "HARN_FAILPOINT_MODE": "stop", **(env or {})})
    runner.wait_stopped()
    return runner


def wait_for_log(log: Any, what: Any, seconds: float = 60) -> list[dict[str, Any]]:
    """Until ``what(entries)`` holds for the agents' log (``WF.log``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        entries = log()
        if what(entries):
            return list(entries)
        time.sleep(0.05)
    raise AssertionError(f"the agents never got there: {json.dumps(log())[:2000]}")


def waiting_at(wf: Any, task: str, stage: str) -> None:
    """Until the scripted agent of ``task``'s ``stage`` says it waits (for a file the test writes)."""
    wait_for_log(wf.log, lambda log: any(e["task"] == task and e["stage"] == stage and e["event"] == "waiting"
                                         for e in log))


def record_id(cwd: Path, seconds: float = 60) -> str:
    """The id of the first workflow record a run in ``cwd`` made, once it made one."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/harnery/workflows/"],
                              cwd=cwd, capture_output=True, text=True, check=True)
        if done.stdout.split():
            return done.stdout.split()[0].rsplit("/", 1)[1]
        time.sleep(0.05)
    raise AssertionError("the run made no record")
