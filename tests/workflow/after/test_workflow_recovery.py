"""Resuming partial branches: discovery, the assess / review / continue modes
and the recovery object (issue 14) [R7] [R8]."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.kit.harn import all_refs, assert_valid, git, harn, record, ref
from tests.kit.recovery_repo import ONE, RESUME, hand_branch, survivor, wf_with
from tests.kit.workflow_repo import WF, config_text, setup


def recovery_of(doc: dict[str, Any]) -> dict[str, Any]:
    assert_valid(doc, "workflow-result")
    rec: dict[str, Any] = doc["recovery"]
    return rec


def stages_run(wf: WF, task: str) -> list[str]:
    return [e["stage"] for e in wf.log() if e["task"] == task and e["event"] == "start"]


def tree_state(path: Path) -> dict[str, str]:
    """Every file under ``path`` (a worktree, or a .git folder's index files) by content hash."""
    files = {}
    for item in sorted(path.rglob("*")):
        if item.is_file() and ".git" not in item.relative_to(path).parts:
            files[str(item.relative_to(path))] = hashlib.sha256(item.read_bytes()).hexdigest()
    return files


def index_state(work: Path) -> dict[str, str]:
    common = work / ".git"
    indexes = [common / "index", *sorted((common / "worktrees").glob("*/index"))]
    return {str(p.relative_to(common)): hashlib.sha256(p.read_bytes()).hexdigest() for p in indexes if p.exists()}


# --- discovery --------------------------------------------------------------------


def test_unmapped_and_already_complete_branches_are_skipped_and_not_unresolved(tmp_path: Path) -> None:
    wf = wf_with(tmp_path, roadmap="# R\n\n- [x] 5.0 Landed long ago\n")
    git(wf.work, "branch", "roadmap-9.9", "origin/main")
    git(wf.work, "branch", "roadmap-5.0", "origin/main")
    git(wf.work, "branch", "roadmap-notatask", "origin/main")
    done = wf.run("--json", *RESUME)
    assert done.code == 0, done.err
    rec = recovery_of(done.json())
    reasons = {s["branch"]: s["reason"] for s in rec["skipped"]}
    assert reasons == {"roadmap-9.9": "unmapped-branch", "roadmap-5.0": "already-complete",
                       "roadmap-notatask": "unmapped-branch"}
    assert next(s for s in rec["skipped"] if s["branch"] == "roadmap-5.0")["taskId"] == "5.0"
    assert rec["candidates"] == [] and rec["unresolved"] == [] and done.json()["halted"] is None
    assert ref(wf.work, "refs/heads/roadmap-9.9") and ref(wf.work, "refs/heads/roadmap-5.0")


ADDENDA = "# R\n\n- [x] 5.0 Landed long ago\n  - [ ] addendum 1: still open\n  - [x] addendum 2: landed too\n"


@pytest.mark.parametrize(("mode", "assessed", "action", "reason"), [
    ("assess", True, "report-only", "assess-only"),
    ("review", True, "downgraded", "addendum-branch"),
    ("continue", False, "report-only", "addendum-branch"),
])
def test_an_open_addendum_survivor_is_a_candidate_whatever_its_task_box(
        tmp_path: Path, mode: str, assessed: bool, action: str, reason: str) -> None:
    """The addendum's own box decides, not its (ticked) task's (issue 23 item 6)."""
    wf = wf_with(tmp_path, roadmap=ADDENDA, external=True)  # the assessor says adopt-complete
    hand_branch(wf, "roadmap-5.0-addendum-1", {"addendum.txt": "more\n"})
    hand_branch(wf, "roadmap-5.0-addendum-2", {"addendum.txt": "landed\n"})
    done = wf.run("--json", *RESUME, "--resume-mode", mode)
    assert done.code == 3, done.err
    rec = recovery_of(done.json())
    assert rec["candidates"] == ["roadmap-5.0-addendum-1"]
    assert rec["assessed"] == (["roadmap-5.0-addendum-1"] if assessed else [])
    assert {s["branch"]: s["reason"] for s in rec["skipped"] if s["reason"] == "already-complete"} == {
        "roadmap-5.0-addendum-2": "already-complete"}
    result = rec["results"][0]
    assert (result["branch"], result["action"], result["reason"]) == ("roadmap-5.0-addendum-1", action, reason)
    assert [u["branch"] for u in rec["unresolved"]] == ["roadmap-5.0-addendum-1"]
    assert wf.log() == []  # an addendum branch is never resumed by the workflow


def test_candidate_cap_holds_the_rest_out_unassessed_and_unresolved(tmp_path: Path) -> None:
    wf = wf_with(tmp_path, roadmap="# R\n\n- [ ] 6.1 A\n- [ ] 6.2 B\n- [ ] 6.3 C\n- [ ] 6.4 D\n")
    for n in (1, 2, 3):
        git(wf.work, "branch", f"roadmap-6.{n}", "origin/main")
    done = wf.run("--json", *RESUME, "--max-recovery-candidates", "2")
    assert done.code == 3, done.err
    doc = done.json()
    rec = recovery_of(doc)
    assert rec["candidates"] == ["roadmap-6.1", "roadmap-6.2"] and rec["assessed"] == rec["candidates"]
    assert [s for s in rec["skipped"] if s["reason"] == "candidate-cap"] == [
        {"branch": "roadmap-6.3", "taskId": "6.3", "reason": "candidate-cap",
         "detail": "beyond maxRecoveryCandidates = 2; held out, not recovered"}]
    assert doc["selected"] == ["6.4"]  # every id with a surviving branch is held out, capped ones too
    assert {u["branch"]: u["reason"] for u in rec["unresolved"]} == {
        "roadmap-6.1": "assess-only", "roadmap-6.2": "assess-only", "roadmap-6.3": "candidate-cap"}
    assert doc["settings"]["maxRecoveryCandidates"] == 2


def test_settings_come_from_the_file_and_flags_win(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap=ONE, config=config_text(agents, workflow=(
        "stageTimeout = 30\nresumePartialBranches = true\nresumeMode = \"continue\"\nmaxRecoveryCandidates = 3\n")))
    shown = wf.run("--json", "--dry-run").json()["settings"]
    assert (shown["resumePartialBranches"], shown["resumeMode"], shown["maxRecoveryCandidates"]) == (
        True, "continue", 3)
    flagged = wf.run("--json", "--dry-run", "--no-resume-partial-branches", "--resume-mode", "review").json()
    assert flagged["settings"]["resumePartialBranches"] is False and flagged["recovery"] is None
    assert flagged["settings"]["resumeMode"] == "review"
    bad = wf.run("--max-recovery-candidates", "0")
    assert bad.code == 2 and bad.err.startswith("git harn: error: ") and "Traceback" not in bad.err


def test_bad_recovery_settings_are_one_line_errors(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap=ONE, config=config_text(agents, workflow="resumeMode = \"yolo\"\n"))
    before = all_refs(wf.work)
    bad = wf.run("--json")
    assert bad.code == 2 and "workflow.resumeMode" in bad.err and len(bad.err.strip().splitlines()) == 1
    assert all_refs(wf.work) == before


# --- assess mode ------------------------------------------------------------------


def test_assess_mode_changes_no_ref_index_or_worktree_and_keeps_ids_held(tmp_path: Path) -> None:
    wf = wf_with(tmp_path, roadmap=ONE + "- [ ] 5.2 Builds on it\n  Requires: 5.1\n")
    first = survivor(wf)
    worktree = Path(first["workspace"]["path"])
    (worktree / "docs" / "execplans" / "5.1.md").write_text("# ExecPlan 5.1\n\nStatus: COMPLETE\n\nedited\n")
    refs_before, index_before = all_refs(wf.work), index_state(wf.work)
    tree_before, work_before = tree_state(worktree), tree_state(wf.work)
    status_before = git(worktree, "status", "--porcelain")
    done = wf.run("--json", *RESUME, "--resume-mode", "assess")
    assert done.code == 3, done.err
    doc = done.json()
    rec = recovery_of(doc)
    assert doc["tasks"] == [] and doc["selected"] == []  # processed unchanged; 5.1 held, 5.2 waits on it
    assert rec["assessed"] == ["roadmap-5.1"] and rec["resumed"] == []
    assert rec["results"][0]["action"] == "report-only"
    assert rec["results"][0]["classification"] == "adopt-partial"  # the plan has uncommitted edits
    after = all_refs(wf.work)
    new = {name for name in after if name not in refs_before}
    assert new == {f"refs/harnery/workflows/{doc['workflowId']}"}  # the workflow's own record, nothing else
    assert {k: v for k, v in after.items() if k not in new} == refs_before  # notes, runs, heads, salvage...
    assert index_state(wf.work) == index_before
    assert tree_state(worktree) == tree_before and tree_state(wf.work) == work_before
    assert git(worktree, "status", "--porcelain") == status_before
    assert wf.log() == []  # no stage agent ran
    assert doc["halted"].startswith("needs-operator-recovery: 1 surviving branch(es) unresolved (roadmap-5.1)")
    human = wf.run(*RESUME)
    assert human.code == 3 and "halted: needs-operator-recovery" in human.out
    assert "recovery (assess): 1 candidate(s), 1 assessed, 0 resumed" in human.out


def test_assess_mode_uses_the_configured_assessor_agent(tmp_path: Path) -> None:
    wf = wf_with(tmp_path, external=True)
    survivor(wf)
    done = wf.run("--json", *RESUME)
    assert done.code == 3
    result = recovery_of(done.json())["results"][0]
    assert result["classification"] == "adopt-complete" and result["action"] == "report-only"
    assert result["residualRisk"] == ["external: the assessor saw a flaky test"]
    evidence = json.loads((wf.agents / "assessed-roadmap-5.1.json").read_text())
    assert evidence["branch"] == "roadmap-5.1" and evidence["taskId"] == "5.1"


# --- review mode ------------------------------------------------------------------


def test_review_mode_resumes_a_clean_adopt_complete_branch_to_a_landed_squash(tmp_path: Path) -> None:
    wf = wf_with(tmp_path)
    first = survivor(wf)
    tip = first["tip"]
    wf.push_change({"NEWS.md": "base moved on\n"})  # residual risk: the base advanced
    done = wf.run("--json", *RESUME, "--resume-mode", "review")
    assert done.code == 0, done.err + done.out
    doc = done.json()
    rec = recovery_of(doc)
    assert rec["resumed"] == ["roadmap-5.1"] and rec["unresolved"] == [] and doc["halted"] is None
    result = rec["results"][0]
    assert (result["classification"], result["action"], result["status"]) == ("adopt-complete", "resume-review",
                                                                              "done")
    assert any(r.startswith("base-advanced") for r in result["residualRisk"])
    task = doc["tasks"][0]
    assert task["status"] == "done" and task["runId"] == first["runId"]  # its own workspace, reused
    assert stages_run(wf, "5.1") == ["review", "review"]  # dual review, no plan, no implementation
    assert "- [x] 5.1" in wf.remote_file("docs/roadmap.md")
    # initial, the base's change and one squash (the first run halted at integration: nothing to triage)
    log = wf.remote_log()
    assert not [subject for subject in log if subject.startswith("Remediation: ")]
    assert doc["remediation"]["state"] == "nothing-to-flush"
    assert sorted(log) == ["The task that failed", "change on main", "initial"]
    assert ref(wf.work, "refs/harnery/integrated/5.1") is not None
    # the survivor's own work landed, rebased onto the advanced base: not implemented again
    assert git(wf.work, "show", "refs/harnery/integrated/5.1:work-5.1.txt") == git(wf.work, "show",
                                                                                    f"{tip}:work-5.1.txt")
    assert ref(wf.work, "refs/heads/roadmap-5.1") is None
    assert record(wf.work, first["runId"])["state"] == "released"
    # residual risk reached both reviewers as a delimited advisory section: stdin JSON and prompt
    for reviewer in (1, 2):
        stdin = json.loads((wf.agents / "inputs" / f"5.1-review-1-{reviewer}.stdin").read_text())
        assert_valid(stdin, "stage-input")
        assert stdin["advisory"]["classification"] == "adopt-complete"
        assert any(r.startswith("base-advanced") for r in stdin["advisory"]["residualRisk"])
        env = json.loads((wf.agents / "inputs" / f"5.1-review-1-{reviewer}.env").read_text())
        prompt = Path(env["HARN_PROMPT"]).read_text()
        begin = prompt.index("----- BEGIN ADVISORY RESIDUAL RISK")
        end = prompt.index("----- END ADVISORY RESIDUAL RISK")
        assert begin < prompt.index("base-advanced", begin) < end
        assert prompt.index("----- END UNTRUSTED TASK CONTEXT") < begin


def _dirty(wf: WF, first: dict[str, Any]) -> None:
    (Path(first["workspace"]["path"]) / "stray.txt").write_text("left behind\n")


def _commit_in(first: dict[str, Any], name: str, text: str) -> None:
    worktree = Path(first["workspace"]["path"])
    (worktree / name).write_text(text)
    git(worktree, "add", "-A")
    git(worktree, "commit", "-q", "-m", f"by hand: {name}")


def _off_scope(wf: WF, first: dict[str, Any]) -> None:
    _commit_in(first, "docs/roadmap.md", ONE + "- [ ] 5.9 Slipped in\n")


def _unvalidated(wf: WF, first: dict[str, Any]) -> None:
    _commit_in(first, "later.txt", "committed after the gates ran\n")


def _broken(wf: WF, first: dict[str, Any]) -> None:
    (Path(first["workspace"]["path"]) / ".git").write_text("gitdir: /nonexistent/place\n")


@pytest.mark.parametrize("make, reason", [
    (_dirty, "dirty-worktree"),
    (_off_scope, "not-task-scoped"),
    (_unvalidated, "missing-validation-evidence"),
    (_broken, "evidence-collection-error"),
])
def test_review_mode_downgrades_an_adopt_complete_with_a_gap(tmp_path: Path, make: Any, reason: str) -> None:
    wf = wf_with(tmp_path, external=True)
    first = survivor(wf)
    make(wf, first)
    tip = ref(wf.work, "refs/heads/roadmap-5.1")
    done = wf.run("--json", *RESUME, "--resume-mode", "review")
    assert done.code == 3, done.err
    rec = recovery_of(done.json())
    result = rec["results"][0]
    assert (result["classification"], result["action"], result["reason"]) == ("continue-manual", "downgraded"
                                                                              if reason != "evidence-collection-error"
                                                                              else "report-only", reason)
    assert {"branch": "roadmap-5.1", "taskId": "5.1", "reason": reason}.items() <= rec["skipped"][0].items()
    assert rec["resumed"] == [] and [u["branch"] for u in rec["unresolved"]] == ["roadmap-5.1"]
    assert wf.log() == [] and ref(wf.work, "refs/heads/roadmap-5.1") == tip


def test_review_mode_downgrades_no_committed_work_and_addendum_branches(tmp_path: Path) -> None:
    wf = wf_with(tmp_path, roadmap=ONE + "- [ ] 5.2 Another\n- [ ] 5.3 Third\n", external=True)
    git(wf.work, "branch", "roadmap-5.1", "origin/main")
    hand_branch(wf, "roadmap-5.2-addendum-1", {"addendum.txt": "more\n"})
    done = wf.run("--json", *RESUME, "--resume-mode", "review")
    assert done.code == 3, done.err
    rec = recovery_of(done.json())
    got = {r["branch"]: (r["classification"], r["action"], r["reason"]) for r in rec["results"]}
    assert got == {"roadmap-5.1": ("continue-manual", "downgraded", "no-committed-work"),
                   "roadmap-5.2-addendum-1": ("continue-manual", "downgraded", "addendum-branch")}
    assert {s["branch"]: s["reason"] for s in rec["skipped"]} == {
        "roadmap-5.1": "no-committed-work", "roadmap-5.2-addendum-1": "addendum-branch"}
    assert done.json()["selected"] == ["5.3"]  # 5.2 is held out by its addendum branch
    assert not [e for e in wf.log() if e["task"] != "5.3"]


def test_missing_worktree_is_not_resumed(tmp_path: Path) -> None:
    wf = wf_with(tmp_path)
    first = survivor(wf)
    shutil.rmtree(first["workspace"]["path"])  # the registration stays
    done = wf.run("--json", *RESUME, "--resume-mode", "review")
    assert done.code == 3, done.err
    rec = recovery_of(done.json())
    assert rec["skipped"][0]["reason"] == "missing-worktree" and rec["resumed"] == []
    assert wf.log() == []


# --- continue mode ------------------------------------------------------------------


def _plan(status: str | None) -> dict[str, str]:
    if status is None:
        return {"notes.txt": "started, no plan yet\n"}
    body = f"# ExecPlan 7.1\n\nStatus: {status}\n" if status != "unreadable" else "# ExecPlan 7.1\n\nno status\n"
    files = {"docs/execplans/7.1.md": body}
    if status == "COMPLETE":
        files["work-7.1.txt"] = "done by an earlier run\n"
    return files


@pytest.mark.parametrize("status, first_stage", [
    ("DRAFT", "plan"), (None, "plan"), ("APPROVED", "implement"), ("IN PROGRESS", "implement"),
    ("COMPLETE", "review"),
])
def test_continue_mode_dispatches_on_the_committed_plan(tmp_path: Path, status: str | None,
                                                        first_stage: str) -> None:
    wf = wf_with(tmp_path, roadmap="# R\n\n- [ ] 7.1 Continue me\n")
    tip = hand_branch(wf, "roadmap-7.1", _plan(status))
    done = wf.run("--json", *RESUME, "--resume-mode", "continue")
    assert done.code == 0, done.err + done.out
    doc = done.json()
    rec = recovery_of(doc)
    result = rec["results"][0]
    assert result["action"] == f"resume-{first_stage}" and result["classification"] is None
    assert result["planStatus"] == status and result["status"] == "done"
    ran = stages_run(wf, "7.1")
    assert ran[0] == first_stage and "assess" not in ran
    if first_stage == "review":
        assert "implement" not in ran and "plan" not in ran
    assert git(wf.work, "merge-base", "--is-ancestor", tip, "refs/harnery/integrated/7.1") == ""  # reused
    assert "- [x] 7.1" in wf.remote_file("docs/roadmap.md")
    assert ref(wf.work, "refs/heads/roadmap-7.1") is None and rec["unresolved"] == []


def _gates_failed_on(wf: WF, tip: str, signed: bool) -> None:
    """A failed gates note on ``tip``: run here (its MAC verifies), or the same
    note without its MAC, as an older git-harn or another tool left it."""
    git(wf.work, "config", "harn.gate", "sh -c 'echo the widget test fails; exit 1'")
    assert harn(wf.work, "gates", "run", "roadmap-7.1").code == 3
    git(wf.work, "config", "--unset", "harn.gate")
    if not signed:
        import subprocess

        note = json.loads(git(wf.work, "show", f"refs/harnery/notes:{tip}"))
        del note["gates"]["mac"]
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=wf.work, input=json.dumps(note),
                              capture_output=True, text=True, check=True).stdout.strip()
        tree = subprocess.run(["git", "mktree"], cwd=wf.work, input=f"100644 blob {blob}\t{tip}\n",
                              capture_output=True, text=True, check=True).stdout.strip()
        parent = git(wf.work, "rev-parse", "refs/harnery/notes")
        git(wf.work, "update-ref", "refs/harnery/notes", git(wf.work, "commit-tree", tree, "-p", parent, "-m", "x"))


def test_continue_mode_implements_again_with_the_output_of_the_gates_that_failed_on_the_tip(tmp_path: Path) -> None:
    """Issue 45 item 5: the same tip would only fail the same gates again."""
    wf = wf_with(tmp_path, roadmap="# R\n\n- [ ] 7.1 Continue me\n")
    tip = hand_branch(wf, "roadmap-7.1", _plan("COMPLETE"))
    _gates_failed_on(wf, tip, signed=True)
    done = wf.run("--json", *RESUME, "--resume-mode", "continue")
    assert done.code == 0, done.err + done.out
    result = recovery_of(done.json())["results"][0]
    assert result["action"] == "resume-implement" and result["status"] == "done"
    assert stages_run(wf, "7.1")[0] == "implement"
    stdin = json.loads((wf.agents / "inputs" / "7.1-implement-1-0.stdin").read_text())
    assert_valid(stdin, "stage-input")
    failure = stdin["gateFailure"]
    assert failure["commit"] == tip and failure["commands"][0]["exitCode"] == 1
    assert "the widget test fails" in failure["commands"][0]["outputTail"]
    env = json.loads((wf.agents / "inputs" / "7.1-implement-1-0.env").read_text())
    assert "the widget test fails" in Path(env["HARN_PROMPT"]).read_text()
    assert "- [x] 7.1" in wf.remote_file("docs/roadmap.md")


def test_continue_mode_reruns_the_gates_when_the_failed_note_does_not_verify_here(tmp_path: Path) -> None:
    wf = wf_with(tmp_path, roadmap="# R\n\n- [ ] 7.1 Continue me\n")
    tip = hand_branch(wf, "roadmap-7.1", _plan("COMPLETE"))
    _gates_failed_on(wf, tip, signed=False)
    done = wf.run("--json", *RESUME, "--resume-mode", "continue")
    assert done.code == 0, done.err + done.out
    result = recovery_of(done.json())["results"][0]
    assert result["action"] == "resume-review"  # the gates judge the tip again, and pass
    assert "implement" not in stages_run(wf, "7.1")
    assert "- [x] 7.1" in wf.remote_file("docs/roadmap.md")


@pytest.mark.parametrize("status, reason", [("BLOCKED", "plan-blocked"), ("unreadable", "plan-unreadable")])
def test_continue_mode_reports_blocked_and_unreadable_plans(tmp_path: Path, status: str, reason: str) -> None:
    wf = wf_with(tmp_path, roadmap="# R\n\n- [ ] 7.1 Continue me\n")
    tip = hand_branch(wf, "roadmap-7.1", _plan(status))
    done = wf.run("--json", *RESUME, "--resume-mode", "continue")
    assert done.code == 3, done.err
    rec = recovery_of(done.json())
    assert rec["skipped"][0]["reason"] == reason and rec["results"][0]["action"] == "report-only"
    assert rec["unresolved"] == [{"id": "7.1", "branch": "roadmap-7.1", "classification": None,
                                  "action": "report-only", "reason": reason, "next": {
                                      "command": "git harn workflow discard 7.1 --yes",
                                      "why": f"roadmap-7.1 cannot be resumed as it is ({reason}): discard keeps its "
                                             "work on harnery/salvage/ and lets a relaunch start the task afresh"}}]
    assert wf.log() == [] and ref(wf.work, "refs/heads/roadmap-7.1") == tip


def test_continue_mode_reuses_the_preserved_workspace_and_reports_a_dirty_one(tmp_path: Path) -> None:
    wf = wf_with(tmp_path, roadmap=ONE + "- [ ] 5.2 Other\n")
    first = survivor(wf, "5.1")
    second = wf.run("--json", *RESUME, "--resume-mode", "continue")
    assert second.code == 0, second.err
    task = second.json()["tasks"][0]
    assert task["taskId"] == "5.1" and task["runId"] == first["runId"] and task["status"] == "done"
    assert stages_run(wf, "5.1") == ["review", "review"]  # plan COMPLETE: gates, then the dual review
    # a dirty survivor is reported, never resumed
    wf2 = wf_with(tmp_path / "dirty")
    first2 = survivor(wf2)
    _dirty(wf2, first2)
    third = wf2.run("--json", *RESUME, "--resume-mode", "continue")
    assert third.code == 3
    assert recovery_of(third.json())["skipped"][0]["reason"] == "dirty-worktree" and wf2.log() == []


# --- dry runs and a blocked recovery ---------------------------------------------------


def test_dry_run_lists_candidates_and_never_resumes(tmp_path: Path) -> None:
    wf = wf_with(tmp_path)
    survivor(wf)
    before = all_refs(wf.work)
    done = wf.run("--json", "--dry-run", *RESUME, "--resume-mode", "continue")
    assert done.code == 0, done.err
    rec = recovery_of(done.json())
    assert rec["candidates"] == ["roadmap-5.1"] and rec["resumed"] == [] and rec["assessed"] == []
    assert done.json()["tasks"] == [] and wf.log() == []
    assert all_refs(wf.work) == before


def test_a_failed_auth_preflight_blocks_recovery_entirely(tmp_path: Path) -> None:
    from git_harn.git import open_repo
    from git_harn.tasks.roadmap import tasks_at
    from git_harn.workflow.after import recovery
    from git_harn.workflow.model import config

    wf = wf_with(tmp_path)
    survivor(wf)
    before = all_refs(wf.work)
    repo = open_repo(wf.work)
    eff = config.load(repo, config.Options(resume_partial_branches=True, resume_mode="review"))
    tasks = tasks_at(repo, eff.base_oid) or []
    rec = recovery.discover(repo, eff, tasks)
    recovery.recover(repo, eff, rec, "wf-test", tasks, blocked=recovery.AUTH_PREFLIGHT_FAILED)
    doc = rec.document()
    assert doc["blocked"] == "auth-preflight-failed"
    assert doc["assessed"] == [] and doc["resumed"] == [] and rec.resumes == []
    assert doc["results"] == [{"taskId": "5.1", "branch": "roadmap-5.1", "classification": None,
                               "action": "not-run", "reason": "auth-preflight-failed"}]
    assert all_refs(wf.work) == before
    from git_harn.workflow.model.result import WorkflowResult

    result = WorkflowResult(workflowId="wf-test", base="main", remote="origin", baseOid=str(eff.base_oid),
                            dryRun=False, startedAt="now", finished=True)
    recovery.settle(repo, rec, result)
    assert result.recovery is not None and result.recovery["blocked"] == "auth-preflight-failed"
    assert result.recovery["unresolved"][0]["reason"] == "auth-preflight-failed"
    assert result.halted is not None and result.halted.startswith("needs-operator-recovery")
    assert result.exit_code == 3


def test_a_resumed_task_that_fails_is_unresolved_and_its_workspace_preserved_again(tmp_path: Path) -> None:
    wf = wf_with(tmp_path)
    first = survivor(wf)
    tip = ref(wf.work, "refs/heads/roadmap-5.1")
    wf.script({"review": "never-approve"})
    again = wf.run("--json", *RESUME, "--resume-mode", "review")
    assert again.code == 3, again.err
    doc = again.json()
    rec = recovery_of(doc)
    assert rec["results"][0]["status"] == "failed"
    assert rec["unresolved"][0]["reason"].startswith("resumed, then failed at review")
    assert doc["halted"].startswith("needs-operator-recovery")
    assert ref(wf.work, "refs/heads/roadmap-5.1") == tip  # reviewers changed nothing, nothing was lost
    kept = record(wf.work, first["runId"])
    assert kept["state"] == "preserved_unmerged" and kept["frozenIntent"]["oid"] == tip
    wf.script({})
    # its reviewers refused the tip: review mode leaves it until new commits answer them (issue 21) ...
    third = wf.run("--json", *RESUME, "--resume-mode", "review").json()
    assert recovery_of(third)["results"][0]["reason"] == "review-refused"
    [left] = recovery_of(third)["unresolved"]
    assert left["next"]["command"] == "git harn workflow run --resume-partial-branches --resume-mode continue"
    # ... and the advised continue mode resumes it once more from the new frozen intent, and it lands
    fourth = wf.run("--json", *RESUME, "--resume-mode", "continue")
    assert fourth.code == 0, fourth.err
    assert "- [x] 5.1" in wf.remote_file("docs/roadmap.md")


def test_review_mode_reports_a_verdict_short_of_adopt_complete(tmp_path: Path) -> None:
    wf = wf_with(tmp_path)
    hand_branch(wf, "roadmap-5.1", {"docs/execplans/5.1.md": "# ExecPlan 5.1\n\nStatus: IN PROGRESS\n",
                                    "half.txt": "half done\n"})
    done = wf.run("--json", *RESUME, "--resume-mode", "review")
    assert done.code == 3, done.err
    result = recovery_of(done.json())["results"][0]
    assert (result["classification"], result["action"], result["reason"]) == (
        "adopt-partial", "report-only", "missing-validation-evidence")
    assert wf.log() == []


def test_continue_mode_reports_addenda_broken_evidence_and_foreign_worktrees(tmp_path: Path) -> None:
    wf = wf_with(tmp_path)
    first = survivor(wf, "5.1")
    wf.push_change({"docs/roadmap.md": ONE + "- [ ] 5.2 Two\n- [ ] 5.3 Three\n"})
    (Path(first["workspace"]["path"]) / ".git").write_text("gitdir: /nonexistent/place\n")
    hand_branch(wf, "roadmap-5.2-addendum-1", {"addendum.txt": "more\n"})
    hand_branch(wf, "roadmap-5.3", {"docs/execplans/5.3.md": "# ExecPlan 5.3\n\nStatus: APPROVED\n"})
    git(wf.work, "worktree", "add", "-q", str(tmp_path / "by-hand"), "roadmap-5.3")
    done = wf.run("--json", *RESUME, "--resume-mode", "continue")
    assert done.code == 3, done.err
    rec = recovery_of(done.json())
    assert {s["branch"]: s["reason"] for s in rec["skipped"]} == {
        "roadmap-5.1": "evidence-collection-error", "roadmap-5.2-addendum-1": "addendum-branch",
        "roadmap-5.3": "unmanaged-worktree"}
    assert rec["resumed"] == [] and len(rec["unresolved"]) == 3 and wf.log() == []


def test_a_workspace_moved_since_its_frozen_intent_is_not_resumed(tmp_path: Path) -> None:
    wf = wf_with(tmp_path)
    first = survivor(wf)
    _unvalidated(wf, first)  # a commit by hand after cleanup froze the intent [W8]
    tip = ref(wf.work, "refs/heads/roadmap-5.1")
    done = wf.run("--json", *RESUME, "--resume-mode", "continue")
    assert done.code == 3, done.err
    rec = recovery_of(done.json())
    assert rec["skipped"][0]["reason"] == "workspace-not-resumable"
    assert "moved since cleanup froze it" in rec["skipped"][0]["detail"]
    assert wf.log() == [] and ref(wf.work, "refs/heads/roadmap-5.1") == tip
    assert record(wf.work, first["runId"])["state"] == "preserved_unmerged"
