"""Fault classes of stage agents, in-place retries, faultMetrics (issue 13) [R2]."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from git_harn.workflow.model.state import Ending, Facts, State, Where, advice
from tests.kit.fault_repo import fault_setup, faults, runs
from tests.kit.harn import alive, assert_valid, ref
from tests.kit.workflow_repo import WF

# the agents report their pids, which a PID namespace would make their own (conftest.unsandboxed)
pytestmark = pytest.mark.usefixtures("unsandboxed")

ONE = "# R\n\n- [ ] 21.1 Faulty\n"
TWO = "# R\n\n- [ ] 21.1 Faulty\n- [ ] 21.2 Fine\n"


def _one_faulty(tmp: Path, stage: str, what: str, workflow: str = "stageTimeout = 30\n"
                ) -> tuple[WF, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A run of 21.1, whose ``stage`` agent does ``what``, beside 21.2: (wf, result, 21.1, 21.2)."""
    wf = fault_setup(tmp, TWO, workflow=workflow)
    faults(wf, {f"21.1:{stage}": what})
    done = wf.run("--json")
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    bad, good = doc["tasks"]
    return wf, doc, bad, good


@pytest.mark.parametrize(("stage", "what", "status", "klass", "kind", "words"), [
    ("plan", "exit75", "provider-fault", "provider", "exit-75", "exited with 75 (provider fault)"),
    ("implement", "exit77", "auth-fault", "auth", "exit-77", "exited with 77 (auth fault)"),
    ("implement", "fault-provider", "provider-fault", "provider", "fault-report", "HTTP 529: overloaded"),
    ("review", "fault-auth", "auth-fault", "auth", "fault-report", "HTTP 401: token expired"),
])
def test_provider_and_auth_faults_end_the_task_unretried(tmp_path: Path, stage: str, what: str, status: str,
                                                          klass: str, kind: str, words: str) -> None:
    wf = fault_setup(tmp_path, TWO)
    faults(wf, {f"21.1:{stage}": what})
    done = wf.run("--json")
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    bad = doc["tasks"][0]
    assert (bad["status"], bad["stage"], bad["fault"], bad["faultKind"]) == (status, stage, klass, kind)
    assert words in bad["detail"] and "not assessed" in bad["detail"]
    assert bad["assessment"] is None and bad["salvage"] is None and doc["assessments"] == []
    assert doc["remediationSuppressed"] is True  # the final remediation flush writes nothing after it
    if klass == "auth":  # the circuit breaker: no task starts after an auth fault (issue 21)
        assert len(doc["tasks"]) == 1 and doc["skipped"] == [
            {"taskId": "21.2", "reason": "auth-fault-halt", "addendum": None,
             "detail": "not started: the run stopped starting tasks (see halted)"}]
    else:  # a provider fault that names no reset time stops nothing
        assert doc["tasks"][1]["status"] == "done"
    tried = [r for r in runs(wf) if r["task"] == "21.1" and r["stage"] == stage]
    assert len(tried) == (2 if stage == "review" else 1)  # never retried (two reviewers ran once each)
    metrics = {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0, "configFaults": 0,
               "tamperFaults": 0}
    metrics["providerFaults" if klass == "provider" else "authFaults"] = 1
    assert doc["faultMetrics"] == metrics
    assert doc["summary"] == (f"1 task: 1 {status}" if klass == "auth" else f"2 tasks: 1 done, 1 {status}")
    assert "- [ ] 21.1" in wf.remote_file("docs/roadmap.md")


@pytest.mark.parametrize(("stage", "what", "kind", "words"), [
    ("plan", "exit78", "exit-78", "exited with 78 (config fault): error: unknown option '--no-such-flag'"),
    ("implement", "fault-config", "fault-report", "cannot be used with root/sudo privileges"),
    ("review", "exit78", "exit-78", "unknown option"),
])
def test_a_config_fault_ends_the_task_at_once_after_one_attempt(tmp_path: Path, stage: str, what: str, kind: str,
                                                                words: str) -> None:
    wf, doc, bad, good = _one_faulty(tmp_path, stage, what, workflow="stageTimeout = 30\nstageAttempts = 3\n")
    assert (bad["status"], bad["stage"], bad["fault"], bad["faultKind"]) == ("config-fault", stage, "config", kind)
    assert words in bad["detail"] and "not retried" in bad["detail"]
    # the next step (issue 21) says to fix the command line first, and how to see it
    assert "git harn workflow check" in bad["next"]["why"] and bad["next"]["command"].startswith("git harn workflow")
    assert bad["infraRetries"] == 0
    if stage != "review":
        assert bad["attempts"][stage] == 1 and bad["stages"][stage]["tries"] == 1
    assert bad["assessment"] is None and doc["assessments"] == []
    tried = [r for r in runs(wf) if r["task"] == "21.1" and r["stage"] == stage]
    assert len(tried) == (2 if stage == "review" else 1)  # one attempt (each reviewer once)
    assert good["status"] == "done"
    assert doc["faultMetrics"] == {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 1, "tamperFaults": 0}
    assert doc["summary"] == "2 tasks: 1 done, 1 config-fault"
    assert "- [ ] 21.1" in wf.remote_file("docs/roadmap.md")


@pytest.mark.parametrize(("what", "status", "words"), [
    ("fault-class-only", "auth-fault", "reported an auth fault"),
    ("fault-status-only", "provider-fault", "reported a provider fault: HTTP 429"),
])
def test_a_fault_report_needs_only_its_class(tmp_path: Path, what: str, status: str, words: str) -> None:
    """Only ``class`` is required; a minimal fault report is believed at once,
    not retried as invalid and turned into an infra fault (issue 23 item 5)."""
    wf = fault_setup(tmp_path, ONE)
    faults(wf, {"21.1:implement": what})
    doc = wf.run("--json").json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert (task["status"], task["fault"], task["faultKind"]) == (status, status.split("-")[0], "fault-report")
    assert words in task["detail"], task["detail"]
    assert [r["run"] for r in runs(wf) if r["stage"] == "implement"] == [1]  # no schema retry, no infra retry
    assert task["infraRetries"] == 0


def test_an_agent_killed_by_a_signal_is_said_by_the_signal_name(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE)
    faults(wf, {"21.1:plan": "sigterm"})
    task = wf.run("--json", "--stage-attempts", "1").json()["tasks"][0]
    assert (task["status"], task["faultKind"]) == ("infra-fault", "crash")
    assert "the plan agent was killed by SIGTERM and no valid report" in task["detail"], task["detail"]
    assert "-15" not in task["detail"] and "signal 15" not in task["detail"]


def test_a_valid_report_of_failure_is_a_product_failure_not_a_fault(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE)
    faults(wf, {"21.1:implement": "partial"})
    doc = wf.run("--json").json()
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"], task["faultKind"]) == ("failed", "implement", None, None)
    assert doc["remediationSuppressed"] is False
    assert doc["faultMetrics"] == {"infraRetries": 0, "infraFaults": 0, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}
    assert ref(wf.work, "refs/heads/roadmap-21.1")


def test_a_stage_that_times_out_once_is_retried_in_place_and_lands(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE, workflow="stageTimeout = 2\n")
    faults(wf, {"21.1:plan": {"1": "hang", "*": "pass"}})
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert task["status"] == "done" and task["fault"] is None
    assert task["attempts"]["plan"] == 2 and task["infraRetries"] == 1
    assert task["stages"]["plan"]["tries"] == 2
    assert doc["faultMetrics"] == {"infraRetries": 1, "infraFaults": 0, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}
    plans = [r for r in runs(wf) if r["stage"] == "plan"]
    assert [(r["run"], r["attempt"]) for r in plans] == [(1, 1), (2, 2)]  # HARN_ATTEMPT counts the retry
    assert "- [x] 21.1" in wf.remote_file("docs/roadmap.md")
    for pid in (tmp_path / "agents" / "children.log").read_text().split():
        assert not alive(int(pid))  # the hung agent's child went with its group


def test_an_invalid_report_is_rerun_with_the_error_until_valid(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE)
    faults(wf, {"21.1:plan": {"1": "garbage", "2": "garbage", "*": "pass"}})
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    task = doc["tasks"][0]
    assert task["status"] == "done"
    plans = [r for r in runs(wf) if r["stage"] == "plan"]
    assert len(plans) == 3 and {r["attempt"] for r in plans} == {1}  # schema retries, the same attempt
    assert plans[0]["envSchemaError"] is None and plans[0]["stdinSchemaError"] is None
    for retry in plans[1:]:
        assert "the report is not JSON" in retry["envSchemaError"]
        assert retry["stdinSchemaError"] == retry["envSchemaError"]
    assert task["stages"]["plan"]["schemaRetries"] == 2
    assert doc["faultMetrics"]["infraRetries"] == 0  # schema retries are not infra retries
    inputs = sorted((wf.work / ".git" / "harnery" / "workflow" / doc["workflowId"]).glob("21.1-plan-*.report.json"))
    assert len(inputs) == 3  # each run's report kept for inspection


def test_a_report_that_stays_invalid_is_an_infra_fault_after_its_retries(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE)
    faults(wf, {"21.1:plan": "garbage"})
    done = wf.run("--json", "--schema-retries", "1", "--stage-attempts", "2")
    assert done.code == 3
    doc = done.json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"], task["faultKind"]) == (
        "infra-fault", "plan", "infra", "invalid-report")
    assert len([r for r in runs(wf) if r["stage"] == "plan"]) == 4  # 2 attempts x (1 + 1 schema retry)
    assert task["detail"].startswith("infra fault at plan after 2 attempt(s): the plan agent wrote no valid report")
    # the next step comes from the facts at the end (issue 21): the plan stage committed nothing, so the
    # branch is gone and a plain relaunch starts the task afresh (no configuration key in the detail)
    assert task["detail"].endswith("the branch carries no verdict") and "resumePartialBranches" not in task["detail"]
    assert ref(wf.work, "refs/heads/roadmap-21.1") is None
    assert task["next"]["command"] == "git harn workflow run"
    assert doc["faultMetrics"] == {"infraRetries": 1, "infraFaults": 1, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}
    assert doc["settings"]["stageAttempts"] == 2 and doc["settings"]["schemaRetries"] == 1


def test_an_integration_agent_that_crashes_is_not_retried(tmp_path: Path) -> None:
    import json
    import sys

    agents = tmp_path / "agents"
    wf = fault_setup(tmp_path, ONE, integrate=f'command = [{json.dumps(sys.executable)}, '
                                              f'{json.dumps(str(agents / "agent.py"))}, "integrate"]')
    faults(wf, {"integrate": "crash"})
    done = wf.run("--json")
    assert done.code == 3
    doc = done.json()
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"], task["faultKind"]) == (
        "halted", "integrate", "infra", "crash")
    assert len([r for r in runs(wf) if r["stage"] == "integrate"]) == 1
    assert task["detail"].startswith("the integrate agent exited with 9 and no valid report")
    assert task["detail"].endswith("; inspect origin/main and the roadmap there before relaunching")
    assert doc["faultMetrics"] == {"infraRetries": 0, "infraFaults": 1, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}
    assert len(wf.remote_log()) == 1


def test_a_stage_that_always_hangs_ends_infra_fault_with_its_plan_salvaged(tmp_path: Path) -> None:
    from tests.kit.harn import git

    wf = fault_setup(tmp_path, TWO, workflow="stageTimeout = 1\n")
    faults(wf, {"21.1:implement": "hang-plan"})
    done = wf.run("--json", "--stage-attempts", "2")
    assert done.code == 3
    doc = done.json()
    assert_valid(doc, "workflow-result")
    bad = doc["tasks"][0]
    assert (bad["status"], bad["stage"], bad["fault"], bad["faultKind"]) == (
        "infra-fault", "implement", "infra", "timeout")
    assert bad["detail"] == ("infra fault at implement after 2 attempt(s): the implement agent timed out after 1s; "
                             "its process group was killed; the branch carries no verdict")
    # the branch keeps committed work: the next step is the exact resume command (issue 21)
    assert bad["next"]["command"] == "git harn workflow run --resume-partial-branches --resume-mode continue"
    assert bad["assessment"] is None and [a["taskId"] for a in doc["assessments"]] == []  # no assessor spawned
    for pid in (tmp_path / "agents" / "children.log").read_text().split():
        assert not alive(int(pid))  # killed with its children, on every attempt
    assert len((tmp_path / "agents" / "children.log").read_text().split()) == 2
    # the uncommitted ExecPlan edit is committed onto the task branch [A4]
    salvage = bad["salvage"]
    assert (salvage["classification"], salvage["committed"], salvage["skipped"]) == ("infra-fault", True, False)
    tip = ref(wf.work, "refs/heads/roadmap-21.1")
    assert salvage["sha"] == tip
    assert "half of it, not yet committed" in git(wf.work, "show", f"{tip}:docs/execplans/21.1.md")
    assert git(wf.work, "log", "-1", "--format=%an", tip) == "git-harn machine"
    assert doc["salvages"] == [{"taskId": "21.1", "branch": "roadmap-21.1", **salvage}]
    assert doc["faultMetrics"] == {"infraRetries": 1, "infraFaults": 1, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}
    assert doc["summary"] == "2 tasks: 1 done, 1 infra-fault | salvaged artefacts on 1 branch(es)"
    assert bad["workspace"]["state"] == "preserved_unmerged"  # nothing lost [P1]


def test_a_product_failure_is_assessed_adopt_partial_and_its_plan_salvaged(tmp_path: Path) -> None:
    from tests.kit.harn import git

    wf = fault_setup(tmp_path, TWO)
    faults(wf, {"21.1:implement": "partial"})
    done = wf.run("--json")
    assert done.code == 3
    doc = done.json()
    assert_valid(doc, "workflow-result")
    bad = doc["tasks"][0]
    assert (bad["status"], bad["stage"], bad["fault"]) == ("failed", "implement", None)
    assert bad["assessment"]["classification"] == "adopt-partial"
    assert_valid(bad["assessment"], "assessment")
    assert doc["assessments"] == [{
        "taskId": "21.1", "branch": "roadmap-21.1", "status": "failed", "classification": "adopt-partial",
        "reasons": bad["assessment"]["reasons"], "missingEvidence": bad["assessment"]["missingEvidence"],
        "residualRisk": bad["assessment"]["residualRisk"]}]
    salvage = bad["salvage"]
    assert (salvage["classification"], salvage["committed"], salvage["paths"]) == (
        "adopt-partial", True, ["docs/execplans/21.1.md"])
    tip = ref(wf.work, "refs/heads/roadmap-21.1")
    assert salvage["sha"] == tip
    assert "the second half needs a decision" in git(wf.work, "show", f"{tip}:docs/execplans/21.1.md")
    assert doc["summary"] == "2 tasks: 1 done, 1 failed | salvaged artefacts on 1 branch(es)"
    # the verdict is noted on the tip it judged; nothing merged, nothing ticked
    judged = git(wf.work, "rev-parse", f"{tip}~1")
    assert '"adopt-partial"' in git(wf.work, "show", f"refs/harnery/notes:{judged}")
    assert "- [ ] 21.1" in wf.remote_file("docs/roadmap.md")


def test_no_assess_partial_branches_means_no_assessment_and_no_salvage(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE, workflow="stageTimeout = 1\n")
    faults(wf, {"21.1:implement": "partial"})
    doc = wf.run("--json", "--no-assess-partial-branches").json()
    task = doc["tasks"][0]
    assert task["status"] == "failed" and task["assessment"] is None and task["salvage"] is None
    assert doc["assessments"] == [] and doc["salvages"] == []
    assert doc["settings"]["assessPartialBranches"] is False
    assert task["workspace"]["state"] == "preserved_dirty"  # the plan edit stays in the worktree, uncommitted
    assert "|" not in doc["summary"]


def test_an_external_assessor_from_agents_assess_judges_the_branch(tmp_path: Path) -> None:
    import json
    import sys

    verdict = tmp_path / "assessor.py"
    verdict.write_text(
        "import json, sys\n"
        "evidence = json.load(sys.stdin)\n"
        "open(sys.argv[1], 'w').write(evidence['branch'])\n"
        "print(json.dumps({'classification': 'continue-manual', 'reasons': ['external-says-so'],\n"
        "                  'missingEvidence': ['needs a person'], 'residualRisk': []}))\n")
    seen = tmp_path / "assessed-branch"
    extra = f"\n[agents.assess]\ncommand = {json.dumps([sys.executable, str(verdict), str(seen)])}\n"
    wf = fault_setup(tmp_path, ONE, extra=extra)
    faults(wf, {"21.1:implement": "partial"})
    doc = wf.run("--json").json()
    task = doc["tasks"][0]
    assert seen.read_text() == "roadmap-21.1"  # the evidence JSON went to it on stdin [A3]
    assert task["assessment"]["classification"] == "continue-manual"
    assert task["assessment"]["assessor"]["kind"] == "external"
    assert task["assessment"]["reasons"] == ["external-says-so"]
    assert (task["salvage"]["classification"], task["salvage"]["committed"]) == ("continue-manual", True)


def test_a_reviewer_that_crashes_once_is_retried_alone_and_the_round_stands(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, ONE)
    faults(wf, {"21.1:review:2": {"1": "crash", "*": "pass"}, "21.1:plan": {"1": "fault-infra", "*": "pass"}})
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    task = doc["tasks"][0]
    assert task["status"] == "done" and task["review"]["rounds"] == 1
    reviews = [(r["reviewer"], r["run"], r["attempt"]) for r in runs(wf) if r["stage"] == "review"]
    assert sorted(reviews) == [("1", 1, 1), ("2", 1, 1), ("2", 2, 1)]  # reviewers keep the round's number
    assert [(r["run"], r["attempt"]) for r in runs(wf) if r["stage"] == "plan"] == [(1, 1), (2, 2)]
    assert task["infraRetries"] == 2  # an infra fault report is retried like any infra fault
    assert doc["faultMetrics"] == {"infraRetries": 2, "infraFaults": 0, "providerFaults": 0, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}


def test_a_task_whose_worktree_could_not_be_made_is_not_assessed(tmp_path: Path) -> None:
    from tests.kit.harn import git

    wf = fault_setup(tmp_path, ONE)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the worktree root should be\n")
    git(wf.work, "config", "harn.worktreeRoot", str(blocker / "worktrees"))
    done = wf.run("--json")
    assert done.code == 3, done.err
    task = done.json()["tasks"][0]
    assert (task["status"], task["stage"]) == ("failed", "workspace"), task
    assert task["assessment"] is None and task["salvage"] is None
    assert done.json()["assessments"] == [] and runs(wf) == []


@pytest.mark.parametrize("kind", [None, "unjudged-landing"])
def test_a_tamper_fault_with_work_is_advised_as_work_never_resumed(kind: str | None) -> None:
    """The discard advice of a tamper fault says why it is not resumed; it never
    says the branch holds no committed work when it does [L4] [T2]."""
    ending = Ending(State.TAMPER_FAULT, "integrate", "changed the base", fault="tamper", faultKind=kind)
    facts = Facts("4.1", "4.1", "roadmap-4.1", branch_exists=True, ahead=True, landed=False)
    step = advice(ending, facts, Where("origin", "main"))
    assert step.command == "git harn workflow discard 4.1 --yes"
    assert "a task that ended tamper-fault is never resumed" in step.why
    assert "no committed work" not in step.why
    empty = advice(ending, Facts("4.1", "4.1", "roadmap-4.1", True, False, False), Where("origin", "main"))
    assert "it holds no committed work of its own" in empty.why
