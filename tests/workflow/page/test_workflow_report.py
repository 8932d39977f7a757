"""``git harn workflow report``: a workflow run as one self-contained HTML
page (issue 27): drawn from the record alone, one timeline row per task and
one bar per stage attempt at the record's times, links to the run's stage
files, every string escaped, older records drawn as far as they allow."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from git_harn.clock import parse_iso
from git_harn.workflow.page import render
from git_harn.workflow.page.chart import chart
from tests.kit.harn import assert_valid, harn
from tests.kit.page_reader import (
    HOSTILE,
    Page,
    assert_at_the_records_times,
    drawn,
    everything_hostile,
    parse,
    structure,
    what_could_run,
)
from tests.kit.report_records import WORKFLOW_ID, run_doc, store_record
from tests.kit.workflow_repo import WF, setup

SCRIPT = {"1.3:plan": {"1": "crash"}, "1.4:review": "never-approve"}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[WF, dict[str, Any]]:
    wf = setup(tmp_path_factory.mktemp("report"))
    wf.script(SCRIPT)
    assert wf.run("--parallel", "2").code == 3
    return wf, json.loads(harn(wf.work, "workflow", "show", "--json").out)


def page_of(path: Path) -> tuple[str, Page]:
    html = path.read_text()
    return html, parse(html)


def test_the_page_of_a_real_run(ran: tuple[WF, dict[str, Any]]) -> None:
    wf, doc = ran
    done = harn(wf.work, "workflow", "report", "--json")
    assert done.code == 0, done.err
    written = json.loads(done.out)
    assert_valid(written, "workflow-report")
    path = Path(written["path"])
    assert path == wf.work / ".git" / "harnery" / "workflow" / doc["workflowId"] / "report.html"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # beside the run's files, as private as they are
    assert (written["workflowId"], written["tasks"], written["bytes"]) == (doc["workflowId"], 4, path.stat().st_size)
    html, page = page_of(path)
    assert what_could_run(page) == []
    rows = [e.attrs for e in page.find("g") if "row" in e.attrs.get("class", "").split() and e.attrs["data-task"]]
    assert [(r["data-task"], r["data-state"]) for r in rows] == [(t["taskId"], t["state"]) for t in doc["tasks"]]
    for t in doc["tasks"]:
        stages = [s for s in t["timeline"] if s["kind"] == "stage"]
        bars = drawn(page, t["taskId"], "stage")
        assert [(b["data-stage"], b["data-attempt"], b["data-outcome"]) for b in bars] == \
            [(s["stage"], str(s["attempt"]), s["outcome"]) for s in stages]
        assert_at_the_records_times(page, bars, stages)
        assert_at_the_records_times(page, drawn(page, t["taskId"], "reviewer"), t["review"]["reviews"])
        assert_at_the_records_times(page, drawn(page, t["taskId"], "wait"),
                                    [s for s in t["timeline"] if s["kind"] == "wait"])
    assert [b["data-reason"] for b in drawn(page, "1.2", "wait")][:1] == ["requirements"]
    assert ("plan", "1", "retried") in [(b["data-stage"], b["data-attempt"], b["data-outcome"])
                                        for b in drawn(page, "1.3", "stage")]
    # what the header and the task sections say, from the record
    assert f"{doc['baseOid'][:12]}</code> → <code>{doc['baseOidAfter'][:12]}" in html
    assert "exit 3: not every task landed" in html
    assert "reviewer 1: fix 1.4" in html and "git harn workflow run --resume-partial-branches" in html


def test_the_page_links_every_stage_file_of_its_tasks(ran: tuple[WF, dict[str, Any]]) -> None:
    wf, doc = ran
    harn(wf.work, "workflow", "report")
    folder = wf.work / ".git" / "harnery" / "workflow" / doc["workflowId"]
    _, page = page_of(folder / "report.html")
    links = {e.attrs["href"] for e in page.find("a") if not e.attrs["href"].startswith("#")}
    assert links and all(link.startswith("./") and (folder / link).is_file() for link in links), links
    # the stage files are the run folder's own regular files; its folders are the host's working
    # space (each stage attempt's private folder under stages/, the gates' checkouts under gates/)
    # and not for the operator to open
    stage_files = {f"./{p.name}" for p in folder.iterdir()
                   if p.is_file() and not p.is_symlink() and p.name != "report.html" and not p.name.startswith(".")}
    assert links == stage_files
    assert {p.name for p in folder.iterdir() if p.is_dir()} <= {"stages", "gates"}
    assert {"./1.3-plan-1.prompt.md", "./1.3-plan-2.report.json", "./1.4-review-round2-reviewer2.report.json"} <= links
    anchors = {e.attrs["href"] for e in page.find("a") if e.attrs["href"].startswith("#")}
    assert anchors == {f"#task-{t['taskId']}" for t in doc["tasks"]}
    assert {f"task-{t['taskId']}" for t in doc["tasks"]} <= {e.attrs.get("id") for e in page.elements}


def test_the_default_is_the_newest_record_and_the_path_is_printed(ran: tuple[WF, dict[str, Any]]) -> None:
    wf, doc = ran
    older = copy.deepcopy(doc)
    older.update(workflowId="wf-20200101T000000000Z-000000", startedAt="2020-01-01T00:00:00Z")
    store_record(wf.work, older)
    newest = harn(wf.work, "workflow", "report")
    assert newest.code == 0, newest.err
    assert newest.out == f".git/harnery/workflow/{doc['workflowId']}/report.html\n"  # as git prints paths
    named = harn(wf.work / "docs", "workflow", "report", older["workflowId"])
    assert named.code == 0, named.err
    target = wf.work / ".git" / "harnery" / "workflow" / older["workflowId"] / "report.html"
    assert named.out == f"{target}\n"  # outside the current folder: the whole path
    assert f"workflow {older['workflowId']}</h1>" in target.read_text()


@pytest.mark.parametrize(("args", "words"), [
    (["wf-nope"], "unknown workflow id: wf-nope"),
    (["../../etc"], "invalid workflow id"),
    (["--output", "missing/page.html"], "no folder"),
    (["--output", "docs"], "is a folder"),
])
def test_bad_input_is_one_line_and_writes_nothing(ran: tuple[WF, dict[str, Any]], args: list[str],
                                                  words: str) -> None:
    wf, _ = ran
    before = sorted(str(p) for p in wf.work.rglob("*.html"))
    done = harn(wf.work, "workflow", "report", *args)
    assert done.code == 2 and done.out == ""
    assert done.err.count("\n") == 1 and words in done.err, done.err
    assert sorted(str(p) for p in wf.work.rglob("*.html")) == before


def test_output_elsewhere_links_back_to_the_run_folder(ran: tuple[WF, dict[str, Any]], tmp_path: Path) -> None:
    wf, doc = ran
    target = tmp_path / "pages" / "night.html"
    target.parent.mkdir()
    done = harn(wf.work, "workflow", "report", "--output", str(target))
    assert done.code == 0 and done.out == f"{target}\n", done.err
    _, page = page_of(target)
    links = [e.attrs["href"] for e in page.find("a") if not e.attrs["href"].startswith("#")]
    assert links and all(link.startswith("../") and (target.parent / link).is_file() for link in links)
    assert all(f"/harnery/workflow/{doc['workflowId']}/" in link for link in links)


def test_open_hands_the_page_to_the_browser(ran: tuple[WF, dict[str, Any]], tmp_path: Path) -> None:
    wf, doc = ran
    said = tmp_path / "browser-said"
    browser = tmp_path / "browser"
    browser.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{said}'\n")
    browser.chmod(0o755)
    done = harn(wf.work, "workflow", "report", "--open", "--json", env={"BROWSER": str(browser)})
    assert done.code == 0, done.err
    written = json.loads(done.out)
    assert_valid(written, "workflow-report")
    assert written["opened"] is True and said.read_text() == Path(written["path"]).as_uri() + "\n"


def test_open_without_a_browser_still_writes_the_page(ran: tuple[WF, dict[str, Any]], tmp_path: Path) -> None:
    """No BROWSER, no display, no console browser on PATH: exit 0, the page
    written, and one warning that says to open it by hand."""
    wf, _ = ran
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "git").symlink_to(git_path())
    shim = next(p for p in os.environ["PATH"].split(os.pathsep) if (Path(p) / "git-harn").is_file())
    env = {k: v for k, v in os.environ.items() if k not in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY")}
    env["PATH"] = os.pathsep.join([shim, str(tools)])
    done = harn(wf.work, "workflow", "report", "--open", env=env)
    assert done.code == 0, done.err
    assert done.err == "git harn: warning: no browser found to open it (set BROWSER to one); open the file " \
                       "yourself\n"
    assert (wf.work / done.out.strip()).is_file()


def git_path() -> Path:
    import shutil

    found = shutil.which("git")
    assert found is not None
    return Path(found)


def test_a_record_from_before_stage_times_is_drawn_as_far_as_it_allows(ran: tuple[WF, dict[str, Any]]) -> None:
    """No timeline, no reviewer times, no waits, no tip after: each task is
    one bar from its start to its end, and its stages keep their seconds."""
    wf, doc = ran
    old = copy.deepcopy(doc)
    old["workflowId"] = "wf-20200102T000000000Z-000001"
    for member in ("waits", "baseOidAfter"):
        del old[member]
    for t in old["tasks"]:
        del t["timeline"]
        for r in t["review"]["reviews"]:
            for member in ("startedAt", "finishedAt", "tries"):
                del r[member]
    assert_valid(old, "workflow-result")  # what an older git-harn wrote is still a record
    store_record(wf.work, old)
    done = harn(wf.work, "workflow", "report", old["workflowId"], "--json")
    assert done.code == 0, done.err
    html, page = page_of(Path(json.loads(done.out)["path"]))
    assert what_could_run(page) == []
    rows = [e.attrs for e in page.find("g") if e.attrs.get("data-timed") == "false"]
    assert [r["data-task"] for r in rows] == [t["taskId"] for t in old["tasks"]]
    for t in old["tasks"]:
        assert drawn(page, t["taskId"], "stage") == [] and drawn(page, t["taskId"], "reviewer") == []
        assert_at_the_records_times(page, drawn(page, t["taskId"], "task"), [t])
    assert "the record keeps no stage times for these tasks" in html
    assert "plan (last attempts only)" in html and "not in this record" in html


def test_a_wait_for_a_providers_reset_is_drawn_where_the_run_held_its_starts(tmp_path: Path) -> None:
    """``--wait-for-provider``: the run held every start until the reset; the
    page draws that wait in the run's own row, at the times the breakers kept,
    and the next task's first bar after it began."""
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n- [ ] 1.3 Second\n")
    wf.script({"1.1:plan": "provider-reset:3"})
    assert wf.run("--wait-for-provider=60").code == 3
    doc = json.loads(harn(wf.work, "workflow", "show", "--json").out)
    held = doc["breakers"]["waits"]
    assert len(held) == 1 and held[0]["waitedSeconds"] >= 1
    done = harn(wf.work, "workflow", "report", "--json")
    assert done.code == 0, done.err
    _, page = page_of(Path(json.loads(done.out)["path"]))
    waits = drawn(page, "", "wait")
    assert [w["data-reason"] for w in waits] == ["provider-reset"]
    since = parse_iso(held[0]["since"])
    assert since is not None
    assert abs(float(waits[0]["data-start"]) - since) < 0.001
    assert abs(float(waits[0]["data-end"]) - (since + held[0]["waitedSeconds"])) < 0.001
    second = drawn(page, "1.3", "stage")
    assert second and float(second[0]["data-start"]) >= float(waits[0]["data-end"]) - 1.0


# --- escaping (issue 27 item 4) -------------------------------------------------------------

def test_every_string_of_a_record_is_escaped(ran: tuple[WF, dict[str, Any]]) -> None:
    """The payload in every field: nothing can run, the style sheet is only
    ours, the page keeps the shape a harmless string gives it, and long lines wrap."""
    _, doc = ran
    refused = next(t for t in doc["tasks"] if t["taskId"] == "1.4")
    assert refused["assessment"] and refused["salvage"]  # the run has every section
    harmless = "x" * len(HOSTILE)  # as long, so every choice that hangs on a length is the same
    plain_doc, evil_doc = everything_hostile(doc, harmless), everything_hostile(doc, HOSTILE)
    plain = render.page(plain_doc, chart(plain_doc), {harmless: [(harmless, harmless)]}, harmless)
    evil = render.page(evil_doc, chart(evil_doc), {HOSTILE: [(HOSTILE, HOSTILE)]}, HOSTILE)
    page = parse(evil)
    assert what_could_run(page) == []
    assert page.styles == [render.CSS] and not [e for e in page.elements if "style" in e.attrs]
    assert structure(page) == structure(parse(plain))  # no string opened or closed an element
    assert "<script" not in evil.lower() and "javascript:" not in evil.replace("javascript:alert", "")
    assert evil.count("W" * 10_000) >= 40  # shown, whole, in every field
    assert "overflow-wrap:anywhere" in render.CSS and "pre{white-space:pre-wrap" in render.CSS
    # every span drawn still (with no kind it could name, each one as a stage)
    assert len(drawn(page, HOSTILE, "stage")) == sum(len(t["timeline"]) for t in doc["tasks"])


@pytest.mark.parametrize("junk", [HOSTILE, 7, None, True, [HOSTILE], {"x": HOSTILE}])
def test_a_record_of_any_shape_gives_a_page_with_no_script(ran: tuple[WF, dict[str, Any]], junk: Any) -> None:
    """A record can come from anywhere (a fetched clone): every value of every
    member, whatever its type, still gives a page, with nothing that runs."""
    _, doc = ran

    def swap(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return junk

    for broken in (swap(doc), {**doc, "tasks": [swap(t) for t in doc["tasks"]]}, {"workflowId": doc["workflowId"]}):
        assert what_could_run(parse(render.page(broken, chart(broken), {}, "here"))) == []


def test_a_hostile_record_through_the_command(ran: tuple[WF, dict[str, Any]]) -> None:
    wf, doc = ran
    evil = everything_hostile(doc, HOSTILE)
    evil["workflowId"] = "wf-20200103T000000000Z-000002"
    store_record(wf.work, evil)
    done = harn(wf.work, "workflow", "report", evil["workflowId"], "--json")
    assert done.code == 0, done.err
    _, page = page_of(Path(json.loads(done.out)["path"]))
    assert what_could_run(page) == []


# --- size (issue 27: a 50-task run under 1 MB; its time is bench/report.py's) ----------------


def test_a_fifty_task_run_is_one_page_under_a_megabyte() -> None:
    doc = run_doc(50)
    assert_valid(doc, "workflow-result")
    html = render.page(doc, chart(doc), {}, "here")
    page = parse(html)
    assert len(html.encode()) < 1_000_000
    assert len([e for e in page.find("g") if e.attrs.get("data-task", "").startswith("1.")]) == 50
    assert len([e for e in page.elements if e.attrs.get("data-kind") == "stage"]) == 50 * 11
    assert {e.attrs["data-lane"] for e in page.find("g") if e.attrs.get("data-lane")} == {"1", "2", "3", "4"}
    assert doc["workflowId"] == WORKFLOW_ID and what_could_run(page) == []
