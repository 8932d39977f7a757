"""The report in a real browser (issue 27 item 5): Debian's chromium,
headless, renders the page of a real ``git harn demo --workflow`` run from
its file path. The DOM it builds has one timeline row per task and the bars
where the record's times put them; the screenshot is no blank page. Skipped,
saying so, where the machine has no chromium (``.ci/run`` installs it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from git_harn.workflow.page import render
from git_harn.workflow.page.chart import chart
from tests.kit.harn import git, harn, stored_workflow
from tests.kit.page_reader import (
    HOSTILE,
    assert_at_the_records_times,
    chromium,
    drawn,
    dump_dom,
    everything_hostile,
    parse,
    png_pixels,
    screenshot,
    structure,
    what_could_run,
)
from tests.kit.report_records import run_doc

BROWSER = chromium()
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium on this machine: the report's browser "
                                "tier is skipped (.ci/run installs Debian's chromium where it can)")
OK, RETRIED, CHANGES = (0x2E, 0x9E, 0x5B), (0xB9, 0x99, 0xEA), (0xE8, 0xA3, 0x3D)  # render._colours()


def demo(tmp: Path) -> tuple[Path, dict[str, Any], Path]:
    """The demo, run as an operator runs it: (its project, the run's record, the page it printed)."""
    done = harn(tmp, "demo", "--workflow", env={"TMPDIR": str(tmp)}, timeout=120)
    assert done.code == 0, done.err + done.out
    project = Path(re.search(r"^demo repository: (\S+) ", done.out, re.MULTILINE)[1])  # type: ignore[index]
    printed = re.search(r"^\$ git harn workflow report\n(\S+)\n\(exit 0\)$", done.out, re.MULTILINE)
    assert printed, done.out
    ref = git(project, "for-each-ref", "--format=%(refname)", "refs/harnery/workflows/").strip()
    return project, stored_workflow(project, ref), project / printed[1]


def test_the_demos_page_shows_its_four_tasks_the_retry_and_the_refusal(tmp_path: Path) -> None:
    """One test, so the demo runs once: the DOM as the browser built it, then the screenshot."""
    _, doc, path = demo(tmp_path)
    assert BROWSER is not None
    assert path.is_file() and path.parent.name == doc["workflowId"]
    page = parse(dump_dom(BROWSER, tmp_path, path))  # the DOM as the browser built it from file://
    assert what_could_run(page) == []
    rows = [e.attrs for e in page.find("g") if "row" in e.attrs.get("class", "").split() and e.attrs["data-task"]]
    assert [r["data-task"] for r in rows] == [t["taskId"] for t in doc["tasks"]] and len(rows) == 4
    for t in doc["tasks"]:
        stages = [s for s in t["timeline"] if s["kind"] == "stage"]
        bars = drawn(page, t["taskId"], "stage")
        assert [(b["data-stage"], b["data-attempt"]) for b in bars] == [(s["stage"], str(s["attempt"])) for s in stages]
        assert_at_the_records_times(page, bars, stages)  # order, x and width from the record's times
        assert_at_the_records_times(page, drawn(page, t["taskId"], "reviewer"), t["review"]["reviews"])
    flaky = [(b["data-stage"], b["data-attempt"], b["data-outcome"]) for b in drawn(page, "1.3", "stage")]
    assert flaky[1:3] == [("plan", "1", "retried"), ("plan", "2", "ok")]  # the crash, retried in place
    refused = [(b["data-stage"], b["data-attempt"], b["data-outcome"]) for b in drawn(page, "1.4", "stage")
               if b["data-stage"] == "review"]
    assert refused == [("review", "1", "changes-requested"), ("review", "2", "changes-requested")]
    assert {r["data-task"]: r["data-state"] for r in rows}["1.4"] == "refused"
    assert [w["data-reason"] for w in drawn(page, "1.2", "wait")][:1] == ["requirements"]
    not_blank(path, tmp_path)


def not_blank(path: Path, tmp_path: Path) -> None:
    """The screenshot's timeline holds the bars' colours (ok, retried, changes
    requested) and many others: drawn, not an empty frame."""
    assert BROWSER is not None
    width, height, rows = png_pixels(screenshot(BROWSER, tmp_path, path), rows=800)
    assert (width, height) == (1400, 1000)
    seen: dict[tuple[int, int, int], list[int]] = {}
    for y, row in enumerate(rows):
        for x in range(0, width * 3, 3):
            seen.setdefault((row[x], row[x + 1], row[x + 2]), [x // 3, y])
    for colour in (OK, RETRIED, CHANGES):
        assert colour in seen, (colour, sorted(seen)[:20])
    # the timeline area: from the first ok bar down; many colours there, not one
    top = seen[OK][1]
    area = {(r[x], r[x + 1], r[x + 2]) for r in rows[top:top + 150] for x in range(0, width * 3, 6)}
    assert len(area) > 20, len(area)


def test_a_hostile_record_runs_nothing_in_the_browser(tmp_path: Path) -> None:
    """The payload in every field, parsed by the browser itself: no script
    element, the page keeps the shape a harmless string gives it."""
    assert BROWSER is not None
    doc = run_doc(1)
    doc["tasks"][0].update(assessment={"classification": "continue-manual", "reasons": ["r"],
                                       "missingEvidence": ["m"], "residualRisk": ["k"]},
                           salvage={"committed": True, "sha": "s", "detail": "d", "paths": ["p"]},
                           next={"command": "c", "why": "w"})
    doc.update(skipped=[{"taskId": "t", "reason": "r", "detail": "d"}], halted="h",
               unparsed=[{"line": 1, "text": "t", "reason": "r"}])
    pages = {}
    for name, payload in (("evil", HOSTILE), ("plain", "x" * len(HOSTILE))):
        mine = everything_hostile(doc, payload)
        (tmp_path / f"{name}.html").write_text(render.page(mine, chart(mine), {payload: [(payload, payload)]},
                                                           payload))
        pages[name] = parse(dump_dom(BROWSER, tmp_path, tmp_path / f"{name}.html"))
    assert what_could_run(pages["evil"]) == [] and not pages["evil"].find("script")
    assert structure(pages["evil"]) == structure(pages["plain"])
