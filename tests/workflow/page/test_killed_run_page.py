"""A killed run's page draws what it did: each stage's span is kept as the
stage ends, so a runner SIGKILLed mid-run leaves the finished stages and
the one in progress, drawn up to the kill; settling folds them into the
record, which travels [L3] [P6]."""

from __future__ import annotations

from pathlib import Path

from git_harn.clock import parse_iso
from tests.kit.harn import assert_valid, git, harn
from tests.kit.page_reader import parse
from tests.kit.runners import start, wait_for_log
from tests.kit.workflow_repo import setup

FINISHED = ["plan", "implement", "gates"]
AGENT_STAGES = {*FINISHED, "review", "integrate"}  # the spans of the agents' stages (the others: git-harn's own)


def _agents(stages: list[str]) -> list[str]:
    return [stage for stage in stages if stage in AGENT_STAGES]


def _stage_bars(page_path: Path, task_id: str) -> list[dict[str, str]]:
    page = parse(page_path.read_text())
    return [e.attrs for e in page.find("rect", data_kind="stage", data_task=task_id)]


def test_a_sigkilled_runs_page_draws_its_finished_stages_and_the_one_in_progress(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    wf.script({"1.1:review": "hang"})
    runner = start(wf.work, "workflow", "run")
    try:
        log = wait_for_log(wf.log, lambda log: any(e["event"] == "hanging" for e in log), seconds=120)
    finally:
        runner.kill_group()  # the runner's whole process group, SIGKILL
    hung_at = next(e["t"] for e in log if e["event"] == "hanging")
    done = harn(wf.work, "workflow", "report", "--json")
    assert done.code == 0, done.err
    written = done.json()
    assert_valid(written, "workflow-report")
    bars = _stage_bars(Path(written["path"]), "1.1")
    stages = _agents([b["data-stage"] for b in bars])
    assert stages == [*FINISHED, "review"], bars
    assert [b["class"] for b in bars][-1].endswith("running")  # the one in progress, drawn up to the kill
    html = Path(written["path"]).read_text()
    assert "keeps no stage times" not in html and "lane 0" not in html and "lane 1" in html
    assert "not yet: the run is recorded running" in html
    # settling folds the spans into the record: every finished stage with its end, review up to the kill
    shown = harn(wf.work, "workflow", "show", "--json").json()
    assert harn(wf.work, "workflow", "settle", shown["workflowId"]).code == 0
    settled = harn(wf.work, "workflow", "show", "--json").json()
    spans = [s for s in settled["tasks"][0]["timeline"] if s["kind"] == "stage" and s["stage"] in AGENT_STAGES]
    assert [s["stage"] for s in spans] == [*FINISHED, "review"], spans
    assert all(s["finishedAt"] and s["outcome"] for s in spans[:3]), spans
    review = spans[-1]
    assert review["outcome"] == "interrupted" and review["finishedAt"] is not None
    assert parse_iso(review["finishedAt"]) >= hung_at - 1  # drawn up to the kill, not cut at its start
    assert settled["baseOidAfter"] == git(wf.work, "rev-parse", "origin/main")  # the base settling read
    after = harn(wf.work, "workflow", "report", "--json")
    assert after.code == 0, after.err
    assert "not in this record" not in Path(after.json()["path"]).read_text()
    assert _agents([b["data-stage"] for b in _stage_bars(Path(after.json()["path"]), "1.1")]) == [*FINISHED, "review"]
    assert_valid(settled, "workflow-result")
