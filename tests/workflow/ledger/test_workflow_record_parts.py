"""A workflow record keeps each task in a blob of its own, so an event stores
only the tasks it changed (issue 25 item 5) [P3]; ``workflow show`` and
``workflow list`` answer the same JSON whichever way a record was written,
and sync carries the record to another clone whole."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.kit.harn import assert_valid, git, harn, stored_workflow, stored_workflow_files
from tests.kit.sync_world import sync
from tests.kit.workflow_repo import setup

ROADMAP = "# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n- [ ] 1.3 Third\n"


def _task_blobs(cwd: Path, rev: str) -> dict[str, str]:
    """tasks/<index>.json -> blob id at one commit."""
    lines = git(cwd, "ls-tree", "-r", rev, "tasks/").splitlines()
    return {line.split("\t")[1]: line.split()[2] for line in lines}


def _show(cwd: Path, workflow_id: str) -> dict[str, Any]:
    done = harn(cwd, "workflow", "show", "--json", workflow_id)
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert_valid(doc, "workflow-result")
    return doc


def _listed(cwd: Path) -> dict[str, Any]:
    done = harn(cwd, "workflow", "list", "--json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert_valid(doc, "workflow-list")
    return doc


def test_each_task_is_a_blob_and_an_event_rewrites_only_the_tasks_it_changed(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    done = wf.run("--json")
    assert done.code == 0, done.err
    run = done.json()
    ref = f"refs/harnery/workflows/{run['workflowId']}"
    head = json.loads(git(wf.work, "show", f"{ref}:workflow.json"))
    assert "tasks" not in head and head["summary"] == "3 tasks: 3 done"
    assert sorted(_task_blobs(wf.work, ref)) == ["tasks/00000.json", "tasks/00001.json", "tasks/00002.json"]
    assert [t["taskId"] for t in stored_workflow(wf.work, ref)["tasks"]] == ["1.1", "1.2", "1.3"]
    # While 1.2 and 1.3 ran, 1.1's blob stayed the one written when it landed.
    commits = git(wf.work, "rev-list", "--reverse", ref).splitlines()
    first_blobs = [_task_blobs(wf.work, c).get("tasks/00000.json") for c in commits]
    landed = next(i for i, c in enumerate(commits)
                  if [t["status"] for t in stored_workflow(wf.work, c)["tasks"][:1]] == ["done"])
    later = [c for c in commits[landed:] if "tasks/00002.json" in _task_blobs(wf.work, c)]
    assert later, "no event while the third task ran"
    assert {first_blobs[commits.index(c)] for c in later} <= {first_blobs[landed], first_blobs[-1]}
    changed = sum(1 for old, new in zip(first_blobs, first_blobs[1:], strict=False) if old != new)
    assert changed < len(commits) // 2, (changed, len(commits))
    # show answers the record as the run answered it
    shown = _show(wf.work, run["workflowId"])
    assert shown["tasks"] == stored_workflow(wf.work, ref)["tasks"]
    assert [t["status"] for t in shown["tasks"]] == [t["status"] for t in run["tasks"]]


def _as_one_file(cwd: Path, ref: str) -> None:
    """Rewrite a record's tip as an older git-harn wrote it: one workflow.json, tasks inside."""
    body = stored_workflow(cwd, ref)
    content = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=cwd, input=content, capture_output=True,
                          text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=cwd, input=f"100644 blob {blob}\tworkflow.json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    tip = git(cwd, "rev-parse", ref)
    message = git(cwd, "show", "-s", "--format=%B", tip)
    git(cwd, "update-ref", ref, git(cwd, "commit-tree", tree, "-m", message, "-p", f"{tip}^"), tip)


def test_show_and_list_answer_the_same_json_for_a_record_written_as_one_file(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    done = wf.run("--json")
    assert done.code == 0, done.err
    workflow_id = done.json()["workflowId"]
    ref = f"refs/harnery/workflows/{workflow_id}"
    split_show, split_list = _show(wf.work, workflow_id), _listed(wf.work)
    split_page = _page(wf.work, workflow_id, tmp_path / "split.html")
    _as_one_file(wf.work, ref)
    assert sorted(stored_workflow_files(wf.work, ref)) == ["workflow.json"]
    one_show, one_list = _show(wf.work, workflow_id), _listed(wf.work)
    assert one_show == split_show
    assert one_list == split_list
    assert _page(wf.work, workflow_id, tmp_path / "one.html") == split_page


def _page(cwd: Path, workflow_id: str, out: Path) -> str:
    """``workflow report``'s page, the tip's commit id taken out (it names the record's tip)."""
    done = harn(cwd, "workflow", "report", "-o", str(out), workflow_id)
    assert done.code == 0, done.err
    tip = git(cwd, "rev-parse", f"refs/harnery/workflows/{workflow_id}")
    return out.read_text().replace(tip, "TIP").replace(tip[:12], "TIP")


def test_sync_carries_a_record_of_task_blobs_to_another_clone(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    done = wf.run("--json")
    assert done.code == 0, done.err
    workflow_id = done.json()["workflowId"]
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(wf.remote), str(other))
    sync(wf.work)
    sync(other)
    ref = f"refs/harnery/workflows/{workflow_id}"
    assert git(other, "rev-parse", ref) == git(wf.work, "rev-parse", ref)
    assert _show(other, workflow_id)["tasks"] == _show(wf.work, workflow_id)["tasks"]


def test_a_tasks_end_and_the_next_start_are_one_event_and_one_base_fetch_follows_each_landing(
        tmp_path: Path) -> None:
    """Serial tasks: the end of one and the start of the next are one record
    commit (written before the next starts [L3]); the base is fetched once per
    landed task, started as it lands (before its cleanup), not again after."""
    wf = setup(tmp_path, roadmap=ROADMAP)
    trace = tmp_path / "trace.json"
    done = wf.run("--json", env={"GIT_TRACE2_EVENT": str(trace)})
    assert done.code == 0, done.err
    run = done.json()
    assert [t["status"] for t in run["tasks"]] == ["done", "done", "done"]
    ref = f"refs/harnery/workflows/{run['workflowId']}"
    commits = git(wf.work, "rev-list", "--reverse", ref).splitlines()
    subjects = [git(wf.work, "show", "-s", "--format=%s", c) for c in commits]
    assert len(subjects) == 6, subjects  # start, 1.1 starts, 1.1 ends + 1.2 starts, ..., 1.3 ends, finish
    assert subjects[0].startswith("start: ") and subjects[-1].startswith("finish: ")
    assert subjects[1] == f"task-start: task 1.1 on {run['tasks'][0]['branch']}"
    for at, (ended, started) in enumerate([(0, 1), (1, 2)], start=2):
        first, second = run["tasks"][ended], run["tasks"][started]
        assert subjects[at] == (f"task-done: task {first['taskId']} done; "
                                f"task {second['taskId']} on {second['branch']}"), subjects[at]
        stored = stored_workflow(wf.work, commits[at])["tasks"]
        assert [t["status"] for t in stored[:started + 1]][-2:] == ["done", "running"], stored
    assert subjects[4] == "task-done: task 1.3 done"
    fetches = [e for e in map(json.loads, trace.read_text().splitlines())
               if e["event"] == "start" and "fetch" in e["argv"] and "--refmap=" in e["argv"]]
    # one as the run starts; per task, the integration's and the one that refills the queue
    assert len(fetches) == 1 + 2 * 3, [e["argv"] for e in fetches]
