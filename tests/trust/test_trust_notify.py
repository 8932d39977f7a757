"""The notifier is the operator's program, run by the host: what it is told
comes from the host alone, never from the run folder, which sits in the
shared git dir every stage agent can write [T1] (issue 47 item 2)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from git_harn.workflow.run import notify
from git_harn.workflow.run.notify import Notifier

KEEPER = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_bytes(sys.stdin.buffer.read())\n"
HOSTILE = {"schemaVersion": 1, "event": "run-finished", "what": "all fine \x1b]0;owned\x07", "next": None}


def _told(path: Path, seconds: float = 20) -> Any:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    return json.loads(path.read_text())


def test_an_event_file_an_agent_swaps_in_the_run_folder_is_not_what_the_notifier_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stage agent of another task, running while a task's event is sent,
    rewrites the event file in the run folder between the host's write and
    the delivery's read (here: always, just before the delivery starts)."""
    keeper = tmp_path / "keeper.py"
    keeper.write_text(KEEPER)
    got = tmp_path / "got.json"
    sender = Notifier([sys.executable, str(keeper), str(got)], 10.0)
    sender.folder = tmp_path / "git" / "harnery" / "workflow" / "w1"
    real_spawn = notify.spawn

    def the_agent_wins_the_race(argv: list[str], **options: Any) -> Any:
        for planted in (sender.folder / "notify").glob("*.json"):  # type: ignore[operator]
            planted.write_text(json.dumps(HOSTILE))
        return real_spawn(argv, **options)

    monkeypatch.setattr(notify, "spawn", the_agent_wins_the_race)
    event = {"schemaVersion": 1, "event": "run-halted", "reason": "tamper", "what": "a stage wrote a ref"}
    sender.send(event)
    assert _told(got) == event



def test_an_event_says_an_agent_s_words_as_one_printable_bounded_line() -> None:
    """A task's detail carries what its agents said (a review's summary, a
    stage's words): in an event, which a notifier may print to a terminal,
    an escape sequence or a control character is a space, and the line is bounded [T1]."""
    from git_harn.schemas import schema_errors
    from git_harn.workflow.model.result import TaskResult
    from git_harn.workflow.run.notify import run_event, task_event

    hostile = "fine\x1b]0;owned\x07\x1b[2J\x9b31m\rspoofed " + "x" * 5000
    tr = TaskResult(taskId="1.1", title="t", branch="roadmap-1.1", runId="wf-1-1.1", detail=hostile,
                    state="refused", status="failed", stage="review",
                    next={"command": "git harn integrate roadmap-1.1", "why": f"check it {hostile}"})
    names = {"workflowId": "wf-1", "remote": "origin", "base": "main", "outcome": "ok"}
    events = [task_event(names, tr), run_event({**names, "halted": hostile})]
    for event in events:
        assert event is not None and not schema_errors(event, "workflow-event")
        assert event["what"].isprintable() and len(event["what"]) <= 1000, event["what"]
        steps = [t for t in (event["next"] or {}).values() if t]
        assert all(isinstance(t, str) and t.isprintable() for t in steps), steps
    assert events[0]["next"]["command"] == "git harn integrate roadmap-1.1"  # a command stays as it is run


def test_a_notify_log_an_agent_links_to_another_file_is_never_written_through(tmp_path: Path) -> None:
    """The log is in the run folder: a stage agent may plant ``notify.log``
    as a hard link to a file of the operator's. The delivery's line goes to
    no file but a log of its own, the operator's file is left as it was."""
    keeper = tmp_path / "keeper.py"
    keeper.write_text(KEEPER)
    got = tmp_path / "got.json"
    sender = Notifier([sys.executable, str(keeper), str(got)], 10.0)
    sender.folder = tmp_path / "git" / "harnery" / "workflow" / "w1"
    sender.folder.mkdir(parents=True)
    victim = tmp_path / "profile"
    victim.write_text("export PATH=/usr/bin\n")
    (sender.folder / notify.LOG).hardlink_to(victim)
    event = {"schemaVersion": 1, "event": "run-finished", "what": "done"}
    sender.send(event)
    assert _told(got) == event
    time.sleep(1.0)  # the delivery writes its line once the notifier has ended
    assert victim.read_text() == "export PATH=/usr/bin\n"
