"""``git harn workflow watch`` (issue 47 item 1): a run in progress as its
record and run folder tell it, drawn in place on a terminal or as whole
lines down a pipe; it ends with the run (exit 0, or 3 when not every task
landed), and leaving it never touches the run.

The stage agents wait for a file the test writes (``WF.go``), so the test
sets the pace at which the run moves and looks at the watch in between.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from git_harn.clock import now_iso
from git_harn.git.repo import open_repo
from git_harn.workflow.ledger import record
from git_harn.workflow.ledger.journal import HEARTBEAT_SECONDS, Journal
from git_harn.workflow.model.result import TaskResult, WorkflowResult
from git_harn.workflow.page.watch import Follower, Frame, Reader, frame
from tests.kit.harn import git, harn, make_repo
from tests.kit.runners import GIT_HARN, Runner, record_id, start, state_of, waiting_at
from tests.kit.workflow_repo import WF, setup

ROADMAP = "# Roadmap\n\n- [ ] 1.1 First thing\n- [ ] 1.2 Second thing\n  Requires: 1.1\n"



def _until(what: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, "never"
        time.sleep(0.02)


class Lines:
    """What a process prints, read as it comes (a thread), so the test can wait for a line."""

    def __init__(self, stream: object) -> None:
        self.text = ""
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for chunk in iter(lambda: stream.read(1), ""):  # type: ignore[attr-defined]
            self.text += chunk

    def wait_for(self, pattern: str, seconds: float = 60) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if re.search(pattern, self.text):
                return self.text
            time.sleep(0.05)
        raise AssertionError(f"never printed {pattern!r}:\n{self.text}")


def _watch(wf: WF, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([GIT_HARN, "workflow", "watch", *args], cwd=wf.work, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)


def test_piped_the_watch_prints_each_stage_as_the_run_moves_in_whole_lines_and_ends_with_it(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    wf.script({"1.1:plan": "wait", "1.1:implement": "wait", "1.1:review": "wait"})
    with start(wf.work, "workflow", "run") as run:
        waiting_at(wf, "1.1", "plan")
        workflow_id = record_id(wf.work)
        watch = _watch(wf)  # the newest running one
        syncing: subprocess.Popen[str] | None = None
        out = Lines(watch.stdout)
        try:
            out.wait_for(rf"workflow {workflow_id} on origin/main: running\n")
            out.wait_for(r"waits for: 1\.2 requires 1\.1\n")
            # a watch that syncs in the runner's own clone while stages run: no stage is blamed for it [T2]
            syncing = _watch(wf, "--sync", "1")
            synced = Lines(syncing.stdout)
            synced.wait_for(r"synced with origin")
            wf.go("1.1", "plan")
            waiting_at(wf, "1.1", "implement")
            out.wait_for(r"task 1\.1: implementing at implement #1: plan ok\n")
            wf.go("1.1", "implement")
            waiting_at(wf, "1.1", "review")
            out.wait_for(r"task 1\.1: reviewing at review r1: gates ok\n")
            wf.go("1.1", "review")
            out.wait_for(r"task 1\.2: ")  # it starts once 1.1 landed
            assert watch.wait(timeout=120) == 0, watch.stderr.read() if watch.stderr else ""
            assert syncing.wait(timeout=120) == 0, syncing.stderr.read() if syncing.stderr else ""
        finally:
            for proc in (watch, syncing):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert run.proc.wait(timeout=120) == 0
    text = out.text
    assert "\x1b" not in text and "\r" not in text  # piped: plain lines, no drawing
    lines = text.splitlines()
    ending = lines.index(next(line for line in lines if line.startswith(f"workflow {workflow_id} on origin/main (")))
    looks = lines[:ending]
    assert looks and all(re.fullmatch(r"\d\d:\d\d:\d\d \S.*", line) for line in looks), looks
    # each line says a change once: the same task line never twice in a row
    task_lines = [line[9:] for line in looks if line[9:].startswith("task 1.1:")]
    assert len(task_lines) == len(set(task_lines)), task_lines
    assert lines[-1] == "2 tasks: 2 done"  # the run's summary, as the run prints it
    assert "task 1.1: done" in text and "task 1.2: done" in text


def test_the_watch_of_a_run_that_left_a_task_undone_exits_3_with_the_next_step(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# Roadmap\n\n- [ ] 1.1 First thing\n")
    wf.script({"plan": "blocked"})
    assert wf.run().code == 3
    workflow_id = record_id(wf.work)
    shown = harn(wf.work, "workflow", "watch", workflow_id)
    assert shown.code == 3, shown.err
    assert "1 task: 1 blocked" in shown.out
    assert "next for roadmap-1.1: git harn workflow discard 1.1 --yes" in shown.out


def test_the_watch_of_a_run_that_landed_every_task_exits_0(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# Roadmap\n\n- [ ] 1.1 First thing\n")
    assert wf.run().code == 0
    shown = harn(wf.work, "workflow", "watch", record_id(wf.work), "--plain")
    assert shown.code == 0, shown.err
    assert shown.out.splitlines()[-1] == "1 task: 1 done"


def test_with_no_run_going_the_watch_says_so_and_changes_nothing(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# Roadmap\n\n- [ ] 1.1 First thing\n")
    assert wf.run().code == 0
    before = git(wf.work, "for-each-ref")
    none = harn(wf.work, "workflow", "watch")
    assert none.code == 2
    assert none.err.startswith("git harn: error: no workflow is running")
    bad = harn(wf.work, "workflow", "watch", "--sync", "0")
    assert bad.code == 2 and "--sync must be a positive number of seconds" in bad.err
    assert git(wf.work, "for-each-ref") == before


def test_a_runner_gone_ends_the_watch_with_the_step_that_settles_it(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# Roadmap\n\n- [ ] 1.1 First thing\n")
    wf.script({"plan": "wait"})
    run: Runner = start(wf.work, "workflow", "run")
    with run:
        waiting_at(wf, "1.1", "plan")
        workflow_id = record_id(wf.work)
        watch = _watch(wf, workflow_id)
        out = Lines(watch.stdout)
        out.wait_for(r"task 1\.1: ")
        run.kill_group()
        assert watch.wait(timeout=60) == 3
    out.wait_for(rf"next: git harn workflow settle {workflow_id}")
    assert "interrupted (runner gone)" in out.text


def _long_run(repo: Path, workflow_id: str, events: int) -> tuple[Journal, WorkflowResult, record.StageTimes]:
    """A record of ``events`` events over four running tasks, and as many
    stage-times lines: a run that has gone on for that long."""
    result = WorkflowResult(workflowId=workflow_id, base="main", remote="origin",
                            baseOid=git(repo, "rev-parse", "HEAD"), dryRun=False, startedAt=now_iso())
    result.tasks = [TaskResult(taskId=f"1.{n}", title="t", branch=f"roadmap-1.{n}", runId=f"run-{n}",
                               status="running", state="implementing", stage="implement") for n in range(4)]
    handle = open_repo(repo)
    writer = Journal(handle, workflow_id)
    folder = record.run_folder(handle, workflow_id)
    folder.mkdir(parents=True)
    times = record.StageTimes(folder)
    for n in range(events):
        task = result.tasks[n % 4]
        task.detail = f"event {n:06d}"
        writer.written -= HEARTBEAT_SECONDS
        writer.beat(result, n)
        times.note(str(task.runId), [{"kind": "stage", "stage": "implement", "attempt": n, "startedAt": now_iso(),
                                      "finishedAt": None, "outcome": None}])
    return writer, result, times


def _one_more(writer: Journal, result: WorkflowResult, times: record.StageTimes) -> None:
    result.tasks[1].detail = "event 999999"
    writer.written -= HEARTBEAT_SECONDS
    writer.beat(result, 999999)
    times.note("run-1", [{"kind": "stage", "stage": "review", "attempt": 9, "startedAt": now_iso(),
                          "finishedAt": None, "outcome": None}])


def test_a_look_reads_only_what_changed_whatever_the_length_of_the_run(tmp_path: Path) -> None:
    """Measured through the reader every look reads by: the bytes a look
    reads after one more event are the same after 20 events as after 400,
    and a look with nothing new reads nothing."""
    repo = make_repo(tmp_path / "repo")
    measured = {}
    for events in (20, 400):
        workflow_id = f"wf-{events:04d}"  # ids of one length: the same bytes name them
        writer, result, times = _long_run(repo, workflow_id, events)
        reader = Reader(open_repo(repo))
        follower = Follower(open_repo(repo), workflow_id, reader)
        follower.look()
        first, first_reads = reader.bytes, reader.reads
        follower.look()
        assert reader.bytes == first  # nothing new: nothing read
        _one_more(writer, result, times)
        follower.look()
        measured[events] = (reader.bytes - first, reader.reads - first_reads)
        assert follower.tasks[1]["detail"] == "event 999999"
        assert follower.spans["run-1"][-1]["stage"] == "review"
        assert follower.events[-1] == "heartbeat: 999999 task(s) running"
        view = frame(follower, record.LIVE)
        assert [row.stage for row in view.rows][:2] == [f"implement #{events - 4}", "review r9"]
    (short, short_reads), (long, long_reads) = measured[20], measured[400]
    # the one task changed, the new commit, the stage-times tail; the run-level file, as it was, is not read
    assert short_reads == long_reads == 3
    assert long == short, measured  # one task, one commit, one line: the same bytes
    assert long < 4000, measured


class Pty:
    """``git harn workflow watch`` on a pseudo-terminal of 100 columns, its screen read as it is drawn."""

    def __init__(self, wf: WF, *args: str) -> None:
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        self.modes = termios.tcgetattr(self.slave)
        self.proc = subprocess.Popen([GIT_HARN, "workflow", "watch", *args], cwd=wf.work, stdin=self.slave,
                                     stdout=self.slave, stderr=subprocess.PIPE, start_new_session=True)
        self.screen = b""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                return
            if not chunk:
                return
            self.screen += chunk

    def wait_for(self, pattern: bytes, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if re.search(pattern, self.screen):
                return
            time.sleep(0.05)
        raise AssertionError(f"the screen never showed {pattern!r}:\n{self.screen[-3000:]!r}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        os.close(self.slave)
        os.close(self.master)


def test_on_a_terminal_the_watch_redraws_in_place_and_leaving_it_leaves_the_run_going(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# Roadmap\n\n- [ ] 1.1 First thing\n")
    wf.script({"plan": "wait", "implement": "wait"})
    with start(wf.work, "workflow", "run") as run:
        waiting_at(wf, "1.1", "plan")
        workflow_id = record_id(wf.work)
        term = Pty(wf)
        try:
            term.wait_for(rb"planning +plan #1 ")
            wf.go("1.1", "plan")
            waiting_at(wf, "1.1", "implement")
            term.wait_for(rb"implementing +implement #1 .*plan ok")
            draws = term.screen.count(b"\x1b[H")
            assert draws >= 2  # each look drawn from the top left over the last one
            assert b"\x1b[2J" not in term.screen  # never blanked first: no flicker
            lines = [re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", line).rstrip(b"\r")
                     for line in re.split(rb"\n|\x1b\[H", term.screen)]
            assert max(len(line.decode()) for line in lines) < 100, "a line as wide as the terminal"
            assert not termios.tcgetattr(term.slave)[3] & termios.ICANON  # keys one at a time
            term.proc.send_signal(signal.SIGTSTP)  # Ctrl-Z: the terminal given back while stopped
            _until(lambda: state_of(term.proc.pid) == "T")
            assert termios.tcgetattr(term.slave) == term.modes
            term.proc.send_signal(signal.SIGCONT)  # fg: taken again
            _until(lambda: not termios.tcgetattr(term.slave)[3] & termios.ICANON)
            os.write(term.master, b"q")
            assert term.proc.wait(timeout=30) == 0
            time.sleep(0.2)
            assert b"left the watch of " + workflow_id.encode() in term.screen
            assert term.screen.rfind(b"\x1b[?1049l") > term.screen.rfind(b"\x1b[H")  # the screen given back
            assert termios.tcgetattr(term.slave) == term.modes  # cbreak undone
        finally:
            term.close()
        again = Pty(wf, workflow_id)  # Ctrl-C leaves too
        try:
            again.wait_for(rb"implementing +implement #1 ")
            again.proc.send_signal(signal.SIGINT)
            assert again.proc.wait(timeout=30) == 0
            assert termios.tcgetattr(again.slave) == again.modes
        finally:
            again.close()
        assert run.proc.poll() is None  # leaving never touched the run
        wf.go("1.1", "implement")
        assert run.proc.wait(timeout=120) == 0
    shown = harn(wf.work, "workflow", "show", workflow_id, "--json").json()
    assert shown["outcome"] == "workflow-done"


def test_with_sync_the_watch_follows_a_run_on_another_machine_to_its_end(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# Roadmap\n\n- [ ] 1.1 First thing\n")
    wf.script({"plan": "wait"})
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "clone", "-q", str(wf.remote), str(elsewhere))
    # two machines: from the other one, the runner is judged by its record's heartbeat, never by a pid
    git(wf.work, "config", "harn.host", "runner-machine")
    git(elsewhere, "config", "harn.host", "elsewhere")
    with start(wf.work, "workflow", "run") as run:
        waiting_at(wf, "1.1", "plan")
        workflow_id = record_id(wf.work)
        # the runner's machine shares its record (a push of its ref: a git harn sync there while a stage
        # runs changes refs/harnery-remotes/, which the stage's tamper check blames on the stage)
        ref = f"refs/harnery/workflows/{workflow_id}"
        git(wf.work, "push", "-q", "origin", f"{ref}:{ref}")
        watch = subprocess.Popen([GIT_HARN, "workflow", "watch", "--sync", "1"], cwd=elsewhere,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                 text=True, start_new_session=True)
        out = Lines(watch.stdout)
        try:
            out.wait_for(rf"workflow {workflow_id} on origin/main: running\n")  # found after the first sync
            out.wait_for(r"synced with origin: 1 new")
            out.wait_for(r"task 1\.1: ")
            wf.go("1.1", "plan")
            ran, said = run.proc.communicate(timeout=120)
            assert run.proc.returncode == 0, said + ran
            assert harn(wf.work, "sync").code == 0  # between runs, sync is the way
            assert watch.wait(timeout=60) == 0, out.text + (watch.stderr.read() if watch.stderr else "")
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.wait()
    assert out.text.splitlines()[-1] == "1 task: 1 done"
    assert "task 1.1: done" in out.text
    syncs = [line[9:] for line in out.text.splitlines() if line[9:].startswith("sync: ")]
    assert len(syncs) == len(set(syncs)) >= 2, syncs  # a sync that said the same again is no new line


def test_the_cost_so_far_is_the_records_in_the_words_show_uses(tmp_path: Path) -> None:
    """Its tasks' usage summed while no limit is set, marked where unknown;
    against the limit when the run has one (what every stage run that ended spent)."""
    repo = make_repo(tmp_path / "repo")
    writer, result, _ = _long_run(repo, "wf-cost", 1)
    follower = Follower(open_repo(repo), "wf-cost")
    follower.look()
    assert frame(follower, record.LIVE).cost == "cost unknown"  # no agent reported anything yet
    result.usage = {"inputTokens": 10, "outputTokens": 5, "cachedInputTokens": 0, "costUsd": 0.5, "runs": 3,
                    "unknownRuns": 1}
    writer.written -= HEARTBEAT_SECONDS
    writer.beat(result, 4)
    follower.look()
    assert frame(follower, record.LIVE).cost == "cost $0.50 + 1 run unknown"
    result.breakers = {"auth": None, "tamper": None, "providerLimits": [], "waits": [],
                       "spending": {"limitUsd": 20.0, "spentUsd": 0.75, "hard": False, "runs": 4,
                                    "unknownRuns": 0, "reached": None}}
    writer.written -= HEARTBEAT_SECONDS
    writer.beat(result, 4)
    follower.look()
    look = frame(follower, record.LIVE)
    assert look.cost == "spent $0.75 of the $20.00 limit"
    assert "spent $0.75 of the $20.00 limit" in look.lines(time.time(), 80)


def _looked_at_with(tmp_path: Path, workflow_id: str, ends: list[tuple[str, str]]) -> Frame:
    """The watch's frame of a four-task run whose tasks stand at ``ends``
    ((status, state) each), as its next heartbeat wrote them."""
    repo = make_repo(tmp_path / "repo")
    writer, result, _ = _long_run(repo, workflow_id, 1)
    for task, (status, state) in zip(result.tasks, ends, strict=True):
        task.status, task.state = status, state
    writer.written -= HEARTBEAT_SECONDS
    writer.beat(result, 1)
    follower = Follower(open_repo(repo), workflow_id)
    follower.look()
    return frame(follower, record.LIVE)


def test_the_counts_tell_a_proposed_task_from_a_failed_one(tmp_path: Path) -> None:
    look = _looked_at_with(tmp_path, "wf-ends", [("done", "done"), ("proposed", "proposed"),
                                                 ("failed", "refused"), ("running", "reviewing")])
    assert (look.landed, look.proposed, look.failed, look.running) == (1, 1, 1, 1)
    assert look.plain()[1].startswith("landed 1, proposed 1, failed 1, running 1, waiting 0, faults 0; ")
    assert [row.stage for row in look.rows[:2]] == ["", ""]  # delivered: it went all the way


def test_the_counts_tell_a_halted_task_from_a_failed_one(tmp_path: Path) -> None:
    """A task the spending limit (or a stop) halted keeps its work for the
    relaunch: the run's summary says halted, and so does the watch."""
    look = _looked_at_with(tmp_path, "wf-halts", [("done", "done"), ("halted", "interrupted"),
                                                  ("halted", "halted"), ("failed", "failed")])
    assert (look.landed, look.halted, look.failed, look.running) == (1, 2, 1, 0)
    assert look.plain()[1].startswith("landed 1, halted 2, failed 1, running 0, waiting 0, faults 0; ")


def test_what_an_agent_writes_in_the_run_folder_never_reaches_the_terminal_as_control_and_never_piles_up(
        tmp_path: Path) -> None:
    """The stage-times file is in the run folder, which stage agents can
    write: an escape sequence in it is shown as spaces, and a line with no
    end is dropped once it passes the limit, not kept growing."""
    repo = make_repo(tmp_path / "repo")
    _, _, times = _long_run(repo, "wf-hostile", 1)
    times.note("run-0", [{"kind": "stage", "stage": "\x1b]0;owned\x07\x1b[2Jplan", "attempt": "1\x1b[31m",
                          "startedAt": now_iso(), "finishedAt": None, "outcome": None}])
    follower = Follower(open_repo(repo), "wf-hostile")
    follower.look()
    look = frame(follower, record.LIVE)
    assert "owned" in look.lines(time.time(), 100)[-4]
    assert not any("\x1b" in line or "\x07" in line for line in [*look.lines(time.time(), 100), *look.plain()])
    with open(times.path, "ab") as endless:
        endless.write(b"x" * (5 * 1024 * 1024))
    follower.look()
    assert follower._rest == b""  # dropped, not kept
    times.note("run-1", [{"kind": "stage", "stage": "review", "attempt": 2, "startedAt": now_iso(),
                          "finishedAt": None, "outcome": None}])
    follower.look()
    assert follower.spans["run-1"][-1]["stage"] == "review"  # the next whole line reads again


def test_a_record_blob_an_agent_plants_larger_than_a_record_is_never_read_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record's ref is in the shared git dir: a stage agent may point it,
    between two checks of the seal, at a commit whose workflow.json is a blob
    of gigabytes (zeros compress to nothing). The watch reads no blob larger
    than a record may be: it says so and stops, having read none of it."""
    from git_harn.errors import BadInput
    from git_harn.store import chain

    repo = make_repo(tmp_path / "repo")
    _long_run(repo, "wf-bomb", 1)
    ref = "refs/harnery/workflows/wf-bomb"
    monkeypatch.setattr(chain, "READ_LIMIT", 1024 * 1024)
    bomb = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=b"\0" * (3 * 1024 * 1024),
                          capture_output=True, check=True).stdout.decode().strip()
    tip = git(repo, "rev-parse", ref)
    entries = [line if not line.endswith("\tworkflow.json") else f"100644 blob {bomb}\tworkflow.json"
               for line in git(repo, "ls-tree", tip).splitlines()]
    tree = subprocess.run(["git", "mktree"], cwd=repo, input="\n".join(entries) + "\n", text=True,
                          capture_output=True, check=True).stdout.strip()
    git(repo, "update-ref", ref, git(repo, "commit-tree", "-p", tip, "-m", "planted", tree))
    reader = Reader(open_repo(repo))
    with pytest.raises(BadInput, match="larger than"):
        Follower(open_repo(repo), "wf-bomb", reader).look()
    assert reader.bytes < 1024 * 1024


def test_a_fifo_an_agent_puts_in_place_of_the_stage_times_file_never_blocks_a_look(tmp_path: Path) -> None:
    """The run folder is writable by the stage agents: one that replaces the
    stage-times file by a named pipe would block a watch that opened it for
    reading (no writer ever comes). A look reads it as nothing and goes on."""
    repo = make_repo(tmp_path / "repo")
    _, _, times = _long_run(repo, "wf-fifo", 1)
    times.path.unlink()
    os.mkfifo(times.path)
    follower = Follower(open_repo(repo), "wf-fifo")
    looked = threading.Thread(target=follower.look, daemon=True)
    looked.start()
    looked.join(10)
    blocked = looked.is_alive()
    if blocked:  # let the blocked open end, so the thread does too
        os.close(os.open(times.path, os.O_WRONLY | os.O_NONBLOCK))
    assert not blocked and follower.tip is not None
