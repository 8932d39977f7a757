"""The record keeps the time of every stage attempt, review round and wait
(issue 27 item 2): each span's start and end, what it came to, and why a
task waited, checked against the times the scripted agents log themselves."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from git_harn.clock import parse_iso, precise_iso
from git_harn.store.locks import process_owner
from tests.kit.harn import assert_valid, git, harn
from tests.kit.workflow_repo import WF, setup

SCRIPT = {"1.3:plan": {"1": "crash"}, "1.4:review": "never-approve"}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[WF, dict[str, Any]]:
    """One real run: 1.1 lands, 1.2 waits for it, 1.3's plan agent crashes
    once (retried in place), 1.4 is refused in both review rounds."""
    wf = setup(tmp_path_factory.mktemp("timeline"))
    wf.script(SCRIPT)
    done = wf.run("--parallel", "2")
    assert done.code == 3, done.err
    shown = harn(wf.work, "workflow", "show", "--json")
    return wf, json.loads(shown.out)


def spans(task: dict[str, Any], kind: str = "stage") -> list[dict[str, Any]]:
    return [s for s in task["timeline"] if s["kind"] == kind]


def task(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in doc["tasks"] if t["taskId"] == task_id)


def test_every_stage_attempt_has_its_start_end_and_outcome(ran: tuple[WF, dict[str, Any]]) -> None:
    _, doc = ran
    assert_valid(doc, "workflow-result")
    for t in doc["tasks"]:
        starts = [parse_iso(s["startedAt"]) for s in t["timeline"]]
        assert None not in starts and starts == sorted(starts), t["timeline"]  # in the order they began
        for s in t["timeline"]:
            assert parse_iso(s["finishedAt"]) >= parse_iso(s["startedAt"]), s
        counted = {}
        for s in spans(t):
            if s["stage"] != "cleanup":
                counted[s["stage"]] = max(counted.get(s["stage"], 0), s["attempt"])
        assert counted == t["attempts"], (counted, t["attempts"])  # one span per counted attempt
    flaky = [(s["stage"], s["attempt"], s["outcome"], s["fault"], s["faultKind"]) for s in spans(task(doc, "1.3"))]
    assert flaky[:3] == [("workspace", 1, "ok", None, None), ("plan", 1, "retried", "infra", "crash"),
                         ("plan", 2, "ok", None, None)]
    refused = [(s["stage"], s["attempt"], s["outcome"]) for s in spans(task(doc, "1.4"))]
    assert refused == [("workspace", 1, "ok"), ("plan", 1, "ok"), ("implement", 1, "ok"), ("gates", 1, "ok"),
                       ("review", 1, "changes-requested"), ("implement", 2, "ok"), ("gates", 2, "ok"),
                       ("review", 2, "changes-requested"), ("cleanup", 1, "ok")]
    landed = [s["stage"] for s in spans(task(doc, "1.1"))]
    assert landed == ["workspace", "plan", "implement", "gates", "review", "integrate", "cleanup"]


def test_the_times_are_when_the_agents_really_ran(ran: tuple[WF, dict[str, Any]]) -> None:
    """Each agent logs the moment it starts: that moment lies in the span the
    record gives that attempt (a reviewer: in its own span, inside its round)."""
    wf, doc = ran
    started = [e for e in wf.log() if e["event"] == "start"]
    assert len(started) >= 20
    for event in started:
        t = task(doc, event["task"])
        if event["stage"] == "review":
            mine = next(r for r in t["review"]["reviews"]
                        if r["round"] == event["attempt"] and r["reviewer"] == int(event["reviewer"]))
            rounds = [s for s in spans(t) if s["stage"] == "review" and s["attempt"] == event["attempt"]]
            assert len(rounds) == 1 and _inside(mine, rounds[0]), (mine, rounds)
        else:
            [mine] = [s for s in spans(t) if s["stage"] == event["stage"] and s["attempt"] == event["attempt"]]
        assert parse_iso(mine["startedAt"]) - 0.002 <= event["t"] <= parse_iso(mine["finishedAt"]) + 0.002, \
            (event, mine)


def _inside(inner: dict[str, Any], outer: dict[str, Any]) -> bool:
    return parse_iso(outer["startedAt"]) <= parse_iso(inner["startedAt"]) <= parse_iso(inner["finishedAt"]) \
        <= parse_iso(outer["finishedAt"])


def test_a_task_waiting_for_its_requirement_keeps_that_wait(ran: tuple[WF, dict[str, Any]]) -> None:
    _, doc = ran
    waited = spans(task(doc, "1.2"), "wait")[0]
    assert (waited["reason"], waited["detail"]) == ("requirements", "requires 1.1")
    first = spans(task(doc, "1.1"))
    landed = next(s for s in first if s["stage"] == "integrate")
    assert parse_iso(waited["startedAt"]) <= parse_iso(first[0]["startedAt"])  # waiting from the run's start
    assert parse_iso(landed["finishedAt"]) <= parse_iso(waited["finishedAt"])  # until 1.1 had landed
    assert parse_iso(waited["finishedAt"]) <= parse_iso(spans(task(doc, "1.2"))[0]["startedAt"])
    assert doc["baseOidAfter"] == git(ran[0].remote, "rev-parse", "main").strip() != doc["baseOid"]
    assert doc["waits"] == []  # the run itself waited for nothing


def test_a_busy_merge_lock_is_a_wait_of_the_task_that_waited(tmp_path: Path) -> None:
    """Another process holds the merge lock when the task reaches integration:
    the task's timeline keeps the wait, inside its integrate span, naming the holder."""
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 One\n")
    lock = wf.work / ".git" / "harnery" / "locks" / "merge.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({**process_owner(), "purpose": "a test holds it"}))
    held_until: list[str] = []

    def release_after_review() -> None:
        deadline = time.time() + 60
        while time.time() < deadline and not any(e["stage"] == "review" and e["event"] == "end" for e in wf.log()):
            time.sleep(0.05)
        time.sleep(0.8)
        held_until.append(precise_iso())
        lock.unlink()

    releaser = threading.Thread(target=release_after_review)
    releaser.start()
    done = wf.run("--json")
    releaser.join()
    assert done.code == 0, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    [t] = doc["tasks"]
    [waited] = [w for w in spans(t, "wait") if w["reason"] == "merge-lock"]
    assert "held by pid" in waited["detail"] and "a test holds it" in waited["detail"]
    assert parse_iso(waited["finishedAt"]) - parse_iso(waited["startedAt"]) >= 0.5
    assert abs(parse_iso(waited["finishedAt"]) - parse_iso(held_until[0])) < 0.5  # it ended when the lock went
    [landing] = [s for s in spans(t) if s["stage"] == "integrate"]
    assert _inside(waited, landing)
