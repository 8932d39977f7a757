"""One task lifecycle (issue 21): the normal, addendum and resumed paths are
one list of steps with one review round, so what a review does to a task
does not depend on how the task got there."""

from __future__ import annotations

import json
from pathlib import Path

from tests.kit.adapter_fakes import PLAN_OK, claude_init, claude_result, codex_ok, fake_cli_env
from tests.kit.fault_repo import fault_setup, faults, runs
from tests.kit.harn import assert_valid, git, harn, ref
from tests.kit.workflow_repo import WF, config_text, setup

ONE = "# Roadmap\n\n- [ ] 21.1 One thing\n"
ROUND_ONE = "stageTimeout = 30\nreviewRounds = 1\n"
RESUME = ("--resume-partial-branches", "--resume-mode", "continue")


def _refused_once(wf: WF) -> None:
    """A first run whose reviewers refuse 21.1: its branch survives with a COMPLETE plan."""
    wf.script({"review": "never-approve"})
    first = wf.run("--json").json()
    assert [(t["status"], t["stage"]) for t in first["tasks"]] == [("failed", "review")]
    assert ref(wf.work, "refs/heads/roadmap-21.1") is not None
    wf.script({})


def test_a_provider_fault_at_review_ends_provider_fault_on_the_normal_path(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE, workflow=ROUND_ONE)
    faults(wf, {"21.1:review:2": "exit75"})
    doc = wf.run("--json").json()
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"]) == ("provider-fault", "review", "provider")


def test_a_provider_fault_at_review_ends_provider_fault_on_the_resumed_path_too(tmp_path: Path) -> None:
    # failed before (issue 21): the resumed path's copy of the review loop ended this task "failed"
    wf = fault_setup(tmp_path, ONE, workflow=ROUND_ONE)
    _refused_once(wf)
    faults(wf, {"21.1:review:2": "exit75"})
    done = wf.run("--json", *RESUME)
    doc = done.json()
    assert_valid(doc, "workflow-result")
    # its reviewers refused the tip: it is implemented again with their findings, then reviewed (issue 45)
    assert doc["recovery"]["results"][0]["action"] == "resume-implement"
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"], task["faultKind"]) == (
        "provider-fault", "review", "provider", "exit-75")
    assert doc["faultMetrics"]["providerFaults"] == 1
    assert doc["remediationSuppressed"] is True and doc["remediation"]["state"] == "suppressed"
    assert [r["run"] for r in runs(wf) if r["stage"] == "review" and r["reviewer"] == "2"][-1] == 2  # not retried


CONFIG = '''[workflow]
stageTimeout = 60
reviewRounds = 1

[agents.plan]
adapter = "claude"

[agents.implement]
adapter = "claude"

[agents.review]
adapter = "codex"

[agents.integrate]
command = "builtin"

[gates]
commands = [["sh", "-c", "test -e work-9.1.txt"]]
'''
REFUSE = {"verdict": "changes-requested", "summary": "no", "findings": [{"severity": "blocking", "text": "fix it"}]}
APPROVE = {"verdict": "approve", "summary": "fine", "findings": []}


def test_the_reviewers_usage_of_a_resumed_branch_is_counted(tmp_path: Path) -> None:
    # failed before (issue 21): the resumed path's review round dropped the reviewers' usage
    env = fake_cli_env(tmp_path)[0]
    scenario = Path(env["FAKE_CLI_DIR"]) / "scenario.json"
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 Adapted\n", config=CONFIG)
    scenario.write_text(json.dumps({
        "stage:plan": [claude_init(), {"work": "plan"}, claude_result(PLAN_OK)],
        "stage:implement": [claude_init(), {"work": "implement"}, claude_result({"ok": True, "summary": "built"})],
        "stage:review": codex_ok(REFUSE)}))
    first = wf.run("--json", env=env).json()
    assert [(t["status"], t["stage"]) for t in first["tasks"]] == [("failed", "review")]
    # continue mode answers the refusal with an implement round (its findings in the context), then reviews
    scenario.write_text(json.dumps({
        "stage:implement": [claude_init(), {"write": {"path": "answer.txt", "text": "fixed it\n"}},
                            {"work": "implement"}, claude_result({"ok": True, "summary": "answered"})],
        "stage:review": codex_ok(APPROVE)}))
    done = wf.run("--json", *RESUME, env=env)
    doc = done.json()
    task = doc["tasks"][0]
    assert (done.code, task["status"]) == (0, "done"), (task["stage"], task["detail"])
    assert task["usage"] is not None and task["usage"]["runs"] == 3  # the implement round, the two codex reviewers
    assert len(task["agentLogs"]) == 3 and doc["usage"] == task["usage"]


def test_a_second_review_round_is_worded_as_a_round_not_a_retry(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ONE)
    wf.script({"review": "changes-then-approve"})
    done = wf.run()
    assert done.code == 0, done.err
    assert "task 21.1: review (round 1)" in done.err and "task 21.1: review (round 2)" in done.err
    assert "task 21.1: implement (attempt 2)" in done.err  # the fix is the implement stage's next attempt
    assert "review (attempt" not in done.err


# --- the assessor sees the review (issue 21, defect 7) -------------------------------


def test_a_branch_its_reviewers_refused_is_never_assessed_adopt_complete(tmp_path: Path) -> None:
    # failed before: the refused branch (plan COMPLETE, gates green on its tip) was assessed adopt-complete
    wf = setup(tmp_path, roadmap=ONE, config=config_text(tmp_path / "agents", workflow=ROUND_ONE))
    wf.script({"review": "never-approve"})
    doc = wf.run("--json").json()
    task = doc["tasks"][0]
    assert (task["state"], task["status"]) == ("refused", "failed")
    judged = task["assessment"]
    assert judged["classification"] == "continue-manual" and "review-refused" in judged["reasons"]
    assert any(m.startswith("review-refused: reviewer 1, reviewer 2 refused") for m in judged["missingEvidence"])
    review = judged["evidence"]["review"]
    assert (review["workflowId"], review["approved"], review["round"]) == (doc["workflowId"], False, 1)
    assert review["blocking"][0]["text"] == "reviewer 1: fix 21.1"
    # the assess command reads the same note
    shown = harn(wf.work, "assess", "roadmap-21.1", "--json").json()
    assert shown["classification"] == "continue-manual" and "review-refused" in shown["reasons"]


def test_review_mode_does_not_resume_a_refused_branch_until_new_commits_answer_it(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ONE, config=config_text(tmp_path / "agents", workflow=ROUND_ONE))
    _refused_once(wf)
    again = wf.run("--json", "--resume-partial-branches", "--resume-mode", "review").json()
    result = again["recovery"]["results"][0]
    assert (result["classification"], result["action"], result["reason"]) == (
        "continue-manual", "report-only", "review-refused")
    assert again["tasks"] == [] and ref(wf.work, "refs/heads/roadmap-21.1") is not None
    # new commits answer the reviewers: the work at their tip is unreviewed, so the refusal no longer holds it
    answered = tmp_path / "answered"
    git(wf.work, "worktree", "add", "-q", "-b", "answered", str(answered), "roadmap-21.1")
    (answered / "work-21.1.txt").write_text("answered the review\n")
    git(answered, "commit", "-qam", "answer the review")
    assert harn(wf.work, "gates", "run", "answered").code == 0  # validation evidence on the new tip
    judged = harn(wf.work, "assess", "answered", "--task", "21.1", "--json").json()
    assert judged["evidence"]["review"] is None and "review-refused" not in judged["reasons"]
    assert judged["classification"] == "adopt-complete", judged["missingEvidence"]
