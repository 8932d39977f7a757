"""git harn workflow run: the ordinary path end to end [R1]."""

from __future__ import annotations

from pathlib import Path

from tests.kit.harn import all_refs, assert_valid, git, ref
from tests.kit.workflow_repo import setup


def test_four_tasks_land_each_as_one_squash_with_box_ticked(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    done = wf.run("--json")
    assert done.code == 0, done.err + done.out
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert [t["status"] for t in doc["tasks"]] == ["done"] * 4
    # the dependency 1.2 waited for 1.1 and landed in the same run
    assert doc["selected"].index("1.2") > doc["selected"].index("1.1")
    roadmap = wf.remote_file("docs/roadmap.md")
    for task in ("1.1", "1.2", "1.3", "1.4"):
        assert f"- [x] {task}" in roadmap
    subjects = wf.remote_log()
    assert len(subjects) == 5  # initial + one squash per task
    refs = all_refs(wf.work)
    for task in doc["tasks"]:
        kept = f"refs/harnery/integrated/{task['taskId']}"
        assert kept in refs and refs[kept] == task["tip"]
        assert task["workspace"]["state"] == "released"
        assert not Path(task["workspace"]["path"]).exists()
    assert not [r for r in refs if r.startswith("refs/heads/roadmap-")]
    assert doc["faultMetrics"] == {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}
    assert doc["summary"] == "4 tasks: 4 done"
    assert ref(wf.work, f"refs/harnery/workflows/{doc['workflowId']}")
    shown = git(wf.work, "show", f"refs/harnery/workflows/{doc['workflowId']}:workflow.json")
    assert '"summary": "4 tasks: 4 done"' in shown


def test_dependency_taken_after_its_requirement_landed(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 2.1 Base work\n- [ ] 2.2 Builds on it\n  Requires: 2.1\n")
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert doc["selected"] == ["2.1", "2.2"]
    log = wf.log()
    first_end = max(e["t"] for e in log if e["task"] == "2.1")
    second_start = min(e["t"] for e in log if e["task"] == "2.2")
    assert second_start > first_end  # 2.2 was selected only once 2.1 was on the remote
    assert "- [x] 2.2" in wf.remote_file("docs/roadmap.md")


def test_parallel_three_really_overlaps_and_lands_all(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 3.1 A\n- [ ] 3.2 B\n- [ ] 3.3 C\n")
    wf.script({"implement": "sleep:1"})
    done = wf.run("--parallel", "3", "--json")
    assert done.code == 0, [(t["taskId"], t["status"], t["stage"], t["detail"]) for t in done.json()["tasks"]]
    doc = done.json()
    assert [t["status"] for t in doc["tasks"]] == ["done"] * 3
    spans = {}
    for entry in wf.log():
        if entry["stage"] == "implement":
            spans.setdefault(entry["task"], {})[entry["event"]] = entry["t"]
    latest_start = max(s["start"] for s in spans.values())
    earliest_end = min(s["end"] for s in spans.values())
    assert latest_start < earliest_end, spans  # all three implement agents ran at the same time
    assert len(wf.remote_log()) == 4
    assert all(f"- [x] 3.{n}" in wf.remote_file("docs/roadmap.md") for n in (1, 2, 3))


def test_surviving_branch_is_held_out_and_untouched(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    git(wf.work, "branch", "roadmap-1.3", "origin/main")
    before = ref(wf.work, "refs/heads/roadmap-1.3")
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert "1.3" not in doc["selected"]
    assert {"taskId": "1.3", "reason": "surviving-branch"}.items() <= next(
        s for s in doc["skipped"] if s["taskId"] == "1.3").items()
    assert ref(wf.work, "refs/heads/roadmap-1.3") == before
    assert "- [ ] 1.3" in wf.remote_file("docs/roadmap.md")
    assert not [e for e in wf.log() if e["task"] == "1.3"]


def test_max_tasks_stops_starting_new_ones(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    done = wf.run("--max-tasks", "2", "--json")
    assert done.code == 0, done.err
    doc = done.json()
    # one at a time: 1.1, then 1.3 (1.2 is queued behind 1.3 and 1.4 once 1.1 lands)
    assert doc["selected"] == ["1.1", "1.3"]
    assert [(s["taskId"], s["reason"]) for s in doc["skipped"]] == [("1.2", "max-tasks"), ("1.4", "max-tasks")]


def test_show_list_and_plain_progress(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 4.1 Only\n")
    done = wf.run()
    assert done.code == 0, done.err
    assert "task 4.1: plan (attempt 1)" in done.err  # plain event lines when piped
    assert "task 4.1: done" in done.err
    assert "1 task: 1 done" in done.out
    from tests.kit.harn import harn

    listed = harn(wf.work, "workflow", "list", "--json")
    assert listed.code == 0
    assert_valid(listed.json(), "workflow-list")
    workflow_id = listed.json()["workflows"][0]["workflowId"]
    shown = harn(wf.work, "workflow", "show", workflow_id, "--json")
    assert shown.code == 0
    assert_valid(shown.json(), "workflow-result")
    assert shown.json()["summary"] == "1 task: 1 done"
    human = harn(wf.work, "workflow", "show")
    assert workflow_id in human.out and "finish: 1 task: 1 done" in human.out
    quiet = harn(wf.work, "workflow", "run", "--json")
    assert quiet.code == 0 and quiet.err == ""  # nothing but the document with --json
    assert harn(wf.work, "workflow", "show", "wf-nope").code == 2
    # a clone that fetched the record shows it too
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(wf.work), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/harnery/workflows/*:refs/harnery/workflows/*")
    assert harn(clone, "workflow", "show", workflow_id, "--json").json()["workflowId"] == workflow_id


def test_init_writes_starter_files_and_overwrites_nothing(tmp_path: Path) -> None:
    from tests.kit.harn import harn, make_repo

    repo = make_repo(tmp_path / "r")
    (repo / ".harn").mkdir()
    (repo / ".harn" / "prompts").mkdir()
    (repo / ".harn" / "prompts" / "review.md").write_text("mine\n")
    done = harn(repo, "workflow", "init", "--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert_valid(doc, "workflow-init")
    assert ".harn/workflow.toml" in doc["written"]
    assert doc["kept"] == [".harn/prompts/review.md"]
    assert (repo / ".harn" / "prompts" / "review.md").read_text() == "mine\n"
    for stage in ("plan", "implement", "integrate"):
        assert (repo / ".harn" / "prompts" / f"{stage}.md").read_text().strip()
    from git_harn.tasks.config import parse_toml, workflow_settings

    starter = (repo / ".harn" / "workflow.toml").read_bytes()
    settings = workflow_settings(parse_toml(starter, "starter"), "starter")
    assert settings.agents["integrate"].builtin and settings.gates
    again = harn(repo, "workflow", "init", "--json").json()
    assert again["written"] == [] and len(again["kept"]) == 5


def test_stage_inputs_prompts_and_reports_are_kept_and_named_plainly(tmp_path: Path) -> None:
    """What an operator needs to replay a stage, in the run folder; a review
    file names its round and its reviewer in words (issue 23 item 10)."""
    import json
    import re

    from tests.kit.harn import assert_valid as valid

    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 6.1 Reviewed twice\n")
    wf.script({"review": "changes-then-approve"})
    done = wf.run("--json")
    assert done.code == 0, done.err
    folder = wf.work / ".git" / "harnery" / "workflow" / done.json()["workflowId"]
    names = sorted(p.name for p in folder.iterdir())
    for stem in ("6.1-plan-1", "6.1-implement-1", "6.1-implement-2", "6.1-review-round1-reviewer1",
                 "6.1-review-round1-reviewer2", "6.1-review-round2-reviewer1", "6.1-review-round2-reviewer2"):
        for kind in ("input.json", "prompt.md", "report.json"):
            assert f"{stem}.{kind}" in names, (stem, kind, names)
    assert not [n for n in names if re.search(r"-r[0-9]", n)], names
    kept = json.loads((folder / "6.1-review-round2-reviewer1.input.json").read_text())
    valid(kept, "stage-input")
    assert (kept["stage"], kept["round"], kept["reviewer"]) == ("review", 2, 1)
    given = (wf.agents / "inputs" / "6.1-review-2-1.stdin").read_text()
    assert json.loads(given) == kept  # exactly what the agent read on stdin
