"""Addenda in a workflow run: follow-up work on landed tasks, on
roadmap-<id>-addendum-<n>, through gates, dual review and integration, and
the manual-merge-ready end (issue 13 item 7) [R5]."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit.addenda_repo import extra_log, make, script
from tests.kit.harn import all_refs, assert_valid, git, ref

ROADMAP = (
    "# Roadmap\n\n"
    "- [x] 1.1 First thing\n"
    "  - [x] addendum 1: done long ago\n"
    "  - [ ] addendum 2: follow up on the first thing\n"
    "  - [ ] addendum 3: another follow up\n"
    "- [ ] 1.2 Second thing\n"
    "  Requires: 1.9\n"
    "  - [ ] addendum 1: not selectable while 1.2 is open\n"
)


def test_an_addendum_lands_and_ticks_only_its_own_box(tmp_path: Path) -> None:
    wf = make(tmp_path, ROADMAP)
    script(wf, {"roadmap-1.1-addendum-3:addendum": "item-open"})
    done = wf.run("--json")
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert done.code == 3, done.err  # addendum 3 did not finish
    by_branch = {t["branch"]: t for t in doc["tasks"]}
    assert set(by_branch) == {"roadmap-1.1-addendum-2", "roadmap-1.1-addendum-3"}
    landed = by_branch["roadmap-1.1-addendum-2"]
    assert (landed["taskId"], landed["addendum"], landed["status"]) == ("1.1", 2, "done")
    assert landed["title"] == "follow up on the first thing"
    assert landed["review"]["approved"] and landed["gates"]["passed"]
    assert "plan" not in landed["stages"] and landed["stages"]["addendum"]["ok"] is True
    assert landed["integratedRef"] == "refs/harnery/integrated/1.1-addendum-2"
    assert all_refs(wf.work)["refs/harnery/integrated/1.1-addendum-2"] == landed["tip"]
    failed = by_branch["roadmap-1.1-addendum-3"]
    assert (failed["status"], failed["stage"], failed["addendum"]) == ("failed", "addendum", 3)
    # the roadmap on the remote: exactly one box changed, addendum 2's
    assert wf.remote_file("docs/roadmap.md") == ROADMAP.replace(  # (git() strips the last newline)
        "  - [ ] addendum 2: follow up", "  - [x] addendum 2: follow up").rstrip("\n")
    subject = git(wf.remote, "log", "-1", "--format=%s%n%(trailers:only,unfold)", "main")
    assert subject.splitlines()[0] == "follow up on the first thing"
    assert "Harnery-Task: 1.1" in subject and "Harnery-Addendum: 2" in subject
    assert wf.remote_file("addendum-1.1-addendum-2.txt").startswith("roadmap-1.1-addendum-2 1")
    assert len(wf.remote_log()) == 2  # initial + the addendum's one squash
    # the addendum agent was given the addendum's branch and title
    first = next(e for e in extra_log(wf) if e["branch"] == "roadmap-1.1-addendum-2" and e["stage"] == "addendum")
    stdin = first["stdin"]
    assert isinstance(stdin, dict)
    assert stdin["stage"] == "addendum" and stdin["task"]["title"] == "follow up on the first thing"
    assert stdin["reportDefinition"] == "#/$defs/addendum"
    assert not [e for e in extra_log(wf) if "1.2" in str(e["branch"])]


def test_an_addendum_that_does_everything_but_say_ok_is_manual_merge_ready(tmp_path: Path) -> None:
    roadmap = "# R\n\n- [x] 2.1 Landed\n  - [ ] addendum 1: polish it\n"
    wf = make(tmp_path, roadmap)
    script(wf, {"addendum": "mmr"})
    before = ref(wf.remote, "refs/heads/main")
    done = wf.run("--json")
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    (task,) = doc["tasks"]
    assert (task["status"], task["stage"], task["addendum"]) == ("manual-merge-ready", "addendum", 1)
    tip = ref(wf.work, "refs/heads/roadmap-2.1-addendum-1")
    assert tip is not None and task["tip"] == tip
    assert task["detail"] == (
        "addendum 1 of task 2.1: the agent reported every work item done, green gates and no open issues but "
        f"not ok: true; nothing was merged and roadmap-2.1-addendum-1 is kept at {tip[:12]}. Rerun the gates "
        "(git harn gates run), confirm the review evidence, reconcile the roadmap checkbox, then integrate "
        "(git harn integrate) or discard the branch")
    assert task["gates"] is None and task["integration"] is None and task["review"]["rounds"] == 0
    assert ref(wf.remote, "refs/heads/main") == before  # nothing merged
    assert "refs/harnery/integrated/2.1-addendum-1" not in all_refs(wf.work)
    # the agent's work is kept on the branch, the workspace preserved for the operator
    assert git(wf.work, "show", f"{tip}:addendum-2.1-addendum-1.txt").startswith("roadmap-2.1-addendum-1")
    assert task["workspace"]["state"] == "preserved_unmerged"
    assert doc["summary"] == "1 task: 1 manual-merge-ready"
    # the next run holds the surviving addendum branch out and leaves it alone
    again = wf.run("--json")
    skipped = again.json()["skipped"]
    assert {"taskId": "2.1", "reason": "surviving-branch", "addendum": 1}.items() <= skipped[0].items()
    assert again.json()["tasks"] == [] and ref(wf.work, "refs/heads/roadmap-2.1-addendum-1") == tip


def test_a_missing_ok_is_manual_merge_ready_but_an_open_item_is_failed(tmp_path: Path) -> None:
    roadmap = "# R\n\n- [x] 3.1 Landed\n  - [ ] addendum 1: one\n  - [ ] addendum 2: two\n"
    wf = make(tmp_path, roadmap)
    script(wf, {"roadmap-3.1-addendum-1:addendum": "no-ok", "roadmap-3.1-addendum-2:addendum": "item-open"})
    doc = wf.run("--json").json()
    assert [(t["addendum"], t["status"]) for t in doc["tasks"]] == [(1, "manual-merge-ready"), (2, "failed")]
    assert "reported failure" in doc["tasks"][1]["detail"]


def test_an_addendum_that_commits_nothing_fails(tmp_path: Path) -> None:
    wf = make(tmp_path, "# R\n\n- [x] 4.1 Landed\n  - [ ] addendum 1: one\n")
    script(wf, {"addendum": "nothing"})
    (task,) = wf.run("--json").json()["tasks"]
    assert task["status"] == "failed" and "committed nothing new on roadmap-4.1-addendum-1" in task["detail"]


def test_without_an_addendum_agent_addenda_are_skipped_and_dry_run_lists_them(tmp_path: Path) -> None:
    roadmap = "# R\n\n- [x] 5.1 Landed\n  - [ ] addendum 1: one\n- [ ] 5.2 Open\n"
    wf = make(tmp_path, roadmap, addendum=False)
    plan = wf.run("--dry-run", "--json").json()
    assert_valid(plan, "workflow-result")
    assert [t["branch"] for t in plan["tasks"]] == ["roadmap-5.2"]
    assert {"taskId": "5.1", "reason": "no-addendum-agent", "addendum": 1}.items() <= plan["skipped"][0].items()
    assert plan["remediation"]["state"] == "dry-run"
    with_agent = make(tmp_path / "b", roadmap)
    planned = with_agent.run("--dry-run", "--json").json()
    assert [(t["branch"], t["status"], t["addendum"]) for t in planned["tasks"]] == [
        ("roadmap-5.2", "planned", None), ("roadmap-5.1-addendum-1", "planned", 1)]
    assert not [r for r in all_refs(with_agent.work) if r.startswith(("refs/heads/roadmap-", "refs/harnery/"))]


def test_an_unknown_agent_table_is_still_bad_input(tmp_path: Path) -> None:
    wf = make(tmp_path, "# R\n\n- [ ] 6.1 T\n")
    text = (wf.work / ".harn" / "workflow.toml").read_text() + "\n[agents.adendum]\ncommand = [\"x\"]\n"
    wf.push_change({".harn/workflow.toml": text})
    done = wf.run("--json")
    assert done.code == 2 and "unknown setting agents.adendum" in done.err


INTEGRATOR = r'''
import json, os, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
mode = open(os.path.join(here, "integrator-mode")).read().strip()
worktree, branch = os.environ["HARN_WORKTREE"], os.environ["HARN_BRANCH"]

def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout

remote = git("remote", "get-url", "origin", cwd=worktree).strip()
clone = tempfile.mkdtemp(prefix="integrator-")
git("clone", "-q", remote, clone, cwd=here)
git("config", "user.name", "Integrator", cwd=clone)
git("config", "user.email", "integrator@example.com", cwd=clone)
git("fetch", "-q", worktree, branch, cwd=clone)
git("merge", "--squash", "FETCH_HEAD", cwd=clone)
path = os.path.join(clone, "docs", "roadmap.md")
text = open(path).read().replace("- [ ] addendum 1:", "- [x] addendum 1:")
if mode == "tick-more":
    text = text.replace("- [ ] addendum 2:", "- [x] addendum 2:")
open(path, "w").write(text)
git("commit", "-q", "-am", f"squash {branch}", cwd=clone)
git("push", "-q", "origin", "HEAD:main", cwd=clone)
with open(os.environ["HARN_REPORT"], "w") as f:
    json.dump({"taskId": os.environ["HARN_TASK_ID"], "branch": branch, "base": "main", "remote": "origin",
               "ok": True, "rebased": True, "squashMerged": True, "pushed": True, "roadmapMarkedDone": True,
               "summary": f"{mode}: landed {branch}"}, f)
'''


@pytest.mark.parametrize("mode", ["own-box", "tick-more"])
def test_an_integration_agent_must_tick_the_addendums_box_and_nothing_else(tmp_path: Path, mode: str) -> None:
    import json
    import sys

    roadmap = "# R\n\n- [x] 7.1 Landed\n  - [ ] addendum 1: one\n  - [ ] addendum 2: two\n"
    wf = make(tmp_path, roadmap)
    (wf.agents / "integrator.py").write_text(INTEGRATOR)
    (wf.agents / "integrator-mode").write_text(mode)
    config = (wf.work / ".harn" / "workflow.toml").read_text().replace(
        '[agents.integrate]\ncommand = "builtin"',
        f"[agents.integrate]\ncommand = [{json.dumps(sys.executable)}, "
        f"{json.dumps(str(wf.agents / 'integrator.py'))}]")
    wf.push_change({".harn/workflow.toml": config})
    doc = wf.run("--max-tasks", "1", "--json").json()
    assert_valid(doc, "workflow-result")
    (task,) = doc["tasks"]
    assert task["branch"] == "roadmap-7.1-addendum-1"
    if mode == "own-box":
        assert task["status"] == "done", task["detail"]
        assert task["integratedRef"] == "refs/harnery/integrated/7.1-addendum-1"
        assert "  - [x] addendum 1: one\n  - [ ] addendum 2: two" in wf.remote_file("docs/roadmap.md")
    else:
        assert (task["status"], task["stage"]) == ("halted", "integrate")
        assert "ticks addendum 1 of task 7.1 but changes other lines of docs/roadmap.md too" in task["detail"]
        assert task["integratedRef"] is None


def test_progress_and_the_human_view_name_the_addendum(tmp_path: Path) -> None:
    wf = make(tmp_path, "# R\n\n- [x] 8.1 Landed\n  - [ ] addendum 1: one\n  - [ ] addendum 2: two\n")
    script(wf, {"roadmap-8.1-addendum-2:addendum": "mmr", "8.1:review": "advisory"})
    done = wf.run()
    assert done.code == 3, done.err
    assert "task 8.1-addendum-1: addendum (attempt 1)" in done.err
    assert "task 8.1-addendum-1: done" in done.err
    assert "task 8.1-addendum-2: manual-merge-ready at addendum: addendum 2 of task 8.1" in done.err
    assert "remediation flushed: 1 addendum item(s) written to docs/roadmap.md on origin/main" in done.out
    assert "  - [ ] addendum 3: review finding (advisory) (work.txt): consider naming 8.1 better" in \
        wf.remote_file("docs/roadmap.md")
