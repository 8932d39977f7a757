"""Remediation: review findings triaged into roadmap addenda, and the one
final flush that writes them on <remote>/<base> (issue 13 item 8) [R6]."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from git_harn.schemas import schema_errors
from tests.kit.addenda_repo import make, script
from tests.kit.harn import assert_valid, git, ref, stored_workflow
from tests.kit.workflow_repo import WF

ROADMAP = "# Roadmap\n\n- [ ] 1.1 First thing\n- [ ] 1.2 Second thing\n  - [x] addendum 1: an old one\n"
ONE_ROUND = "stageTimeout = 30\nreviewRounds = 1\n"

RACE_HOOK = """#!/bin/sh
# Another pusher wins the race against the first remediation push.
while read old new ref; do
  if git cat-file commit "$new" 2>/dev/null | grep -q '^Harnery-Remediation:'; then
    echo "$new" >> "{log}"
    if [ ! -e "{marker}" ]; then
      : > "{marker}"
      (
        unset GIT_DIR GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES \\
              GIT_PUSH_OPTION_COUNT GIT_PROTOCOL GIT_WORK_TREE GIT_INDEX_FILE
        cd "{other}" &&
        git fetch -q origin &&
        git reset -q --hard origin/main &&
        printf -- '- [ ] 1.9 Added meanwhile\\n' >> docs/roadmap.md &&
        git commit -q -am "meanwhile on main" &&
        git push -q origin HEAD:main
      ) >&2 || echo "the racing push failed" >&2
    fi
  fi
done
exit 0
"""


def arm_race(wf: WF) -> Path:
    """A pre-receive hook on the bare remote: the first push of a remediation
    commit lets a second clone push first, so that push loses its lease."""
    other = wf.tmp / "racer"
    git(wf.tmp, "clone", "-q", str(wf.remote), str(other))
    git(other, "config", "user.name", "Racer")
    git(other, "config", "user.email", "racer@example.com")
    log = wf.tmp / "remediation-pushes.log"
    hook = wf.remote / "hooks" / "pre-receive"
    hook.write_text(RACE_HOOK.format(log=log, marker=wf.tmp / "raced", other=other))
    hook.chmod(0o755)
    return log


def remediation_commits(wf: WF) -> list[str]:
    return git(wf.remote, "log", "--format=%H", "--grep=^Harnery-Remediation:", "main").split()


def test_flush_lands_exactly_once_under_a_race_with_another_pusher(tmp_path: Path) -> None:
    wf = make(tmp_path, ROADMAP, workflow=ONE_ROUND)
    script(wf, {"1.1:review": "advisory", "1.2:review": "block"})
    pushes = arm_race(wf)
    done = wf.run("--json")
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert [(t["taskId"], t["status"]) for t in doc["tasks"]] == [("1.1", "done"), ("1.2", "failed")]
    rem = doc["remediation"]
    assert rem["state"] == "flushed", rem
    assert rem["attempts"] == 2 and len(pushes.read_text().split()) == 2  # the first push lost the race
    # both reviewers' identical advisory finding became one item; the blocking one of the failed task another
    assert [(i["taskId"], i["severity"]) for i in rem["triaged"]] == [("1.1", "advisory"), ("1.2", "blocking")]
    assert [(a["taskId"], a["addendum"]) for a in rem["added"]] == [("1.1", 1), ("1.2", 2)]
    (commit,) = remediation_commits(wf)
    assert rem["commit"] == commit == ref(wf.remote, "refs/heads/main")
    assert git(wf.remote, "log", "-1", "--format=%s", f"{commit}^") == "meanwhile on main"
    assert f"Harnery-Remediation: {doc['workflowId']}" in git(wf.remote, "log", "-1", "--format=%B", commit)
    assert git(wf.remote, "log", "-1", "--format=%an <%ae>", commit) == "git-harn machine <git-harn@localhost>"
    assert git(wf.remote, "diff", "--name-only", f"{commit}^", commit) == "docs/roadmap.md"
    roadmap = wf.remote_file("docs/roadmap.md")
    assert roadmap == (
        "# Roadmap\n\n"
        "- [x] 1.1 First thing\n"
        "  - [ ] addendum 1: review finding (advisory) (work.txt): consider naming 1.1 better\n"
        "- [ ] 1.2 Second thing\n"
        "  - [x] addendum 1: an old one\n"
        "  - [ ] addendum 2: review finding (blocking) (x.py): 1.2 breaks the build really\n"
        "- [ ] 1.9 Added meanwhile")
    # the record holds the same member
    stored = stored_workflow(wf.work, f"refs/harnery/workflows/{doc['workflowId']}")
    assert stored["remediation"]["commit"] == commit


def test_flush_is_suppressed_after_a_provider_fault(tmp_path: Path) -> None:
    wf = make(tmp_path, ROADMAP, workflow=ONE_ROUND)
    script(wf, {"1.1:review": "advisory", "1.2:implement": "exit75"})
    before = ref(wf.remote, "refs/heads/main")
    doc = wf.run("--json").json()
    assert_valid(doc, "workflow-result")
    status = {t["taskId"]: t["status"] for t in doc["tasks"]}
    assert (status["1.1"], status["1.2"]) == ("done", "provider-fault")
    assert doc["faultMetrics"]["providerFaults"] == 1 and doc["remediationSuppressed"] is True
    rem = doc["remediation"]
    assert (rem["state"], rem["reason"]) == ("suppressed", "provider-fault")
    assert rem["triaged"] and rem["added"] == [] and rem["commit"] is None
    assert remediation_commits(wf) == []
    assert ref(wf.remote, "refs/heads/main") != before  # 1.1 itself landed
    assert "addendum" not in wf.remote_file("docs/roadmap.md").split("1.1 First thing")[1].split("- [ ] 1.2")[0]


def _finish_in_process(wf: WF, statuses: dict[str, str], metrics: dict[str, int] | None = None,
                       workflow_id: str = "wf-test-1") -> dict[str, object]:
    """Triage and flush a result built here, against the real clone and remote."""
    from git_harn.git import open_repo
    from git_harn.workflow.after import remediation
    from git_harn.workflow.model import config
    from git_harn.workflow.model.result import TaskResult, WorkflowResult

    repo = open_repo(wf.work)
    eff = config.load(repo, config.Options())
    result = WorkflowResult(workflowId=workflow_id, base="main", remote="origin", baseOid=str(eff.base_oid),
                            dryRun=False, startedAt="2026-01-01T00:00:00Z")
    for task_id, status in statuses.items():
        tr = TaskResult(taskId=task_id, title="t", branch=f"roadmap-{task_id}", runId=None, status=status,
                        stage="review" if status == "failed" else "done")
        findings = [{"severity": "advisory", "text": f"advice {task_id}"},
                    {"severity": "blocking", "text": f"block {task_id}"}]
        tr.review = {"rounds": 1, "approved": status == "done", "reviews": [
            {"round": 1, "reviewer": 1, "verdict": "approve", "approved": True, "summary": "s",
             "findings": findings}]}
        result.tasks.append(tr)
    result.interrupted = bool((metrics or {}).pop("interrupted", 0))
    result.faultMetrics.update(metrics or {})
    old = os.getcwd()
    try:
        os.chdir(wf.work)
        remediation.finish(repo, eff, result)
    finally:
        os.chdir(old)
    assert result.remediation is not None
    # (the statuses of the fault classes may not be in the schema yet: the member is checked)
    assert schema_errors(result.remediation, "workflow-result", "remediation") == []
    return result.remediation


@pytest.mark.parametrize(("statuses", "metrics", "reason", "said"), [
    ({"1.1": "done", "1.2": "auth-fault"}, None, "auth-fault", "the run had an auth fault: "),
    ({"1.1": "done", "1.2": "provider-fault"}, None, "provider-fault", "the run had a provider fault: "),
    ({"1.1": "done"}, {"providerFaults": 1}, "provider-fault", "the run had a provider fault: "),
    ({"1.1": "done"}, {"authFaults": 2}, "auth-fault", "the run had an auth fault: "),
    ({"1.1": "done"}, {"interrupted": 1}, "interrupted", "the run was interrupted: "),
])
def test_any_provider_or_auth_fault_suppresses_the_flush(tmp_path: Path, statuses: dict[str, str],
                                                         metrics: dict[str, int] | None, reason: str,
                                                         said: str) -> None:
    wf = make(tmp_path, ROADMAP)
    before = ref(wf.remote, "refs/heads/main")
    rem = _finish_in_process(wf, statuses, metrics)
    assert (rem["state"], rem["reason"]) == ("suppressed", reason)
    assert str(rem["detail"]).startswith(said), rem["detail"]  # "an auth fault", never "a auth fault"
    assert ref(wf.remote, "refs/heads/main") == before


def test_infra_fault_tasks_are_not_triaged_and_a_rerun_flushes_nothing_twice(tmp_path: Path) -> None:
    wf = make(tmp_path, ROADMAP)
    rem = _finish_in_process(wf, {"1.1": "done", "1.2": "infra-fault"})
    assert rem["state"] == "flushed"
    assert [(i["taskId"], i["severity"]) for i in rem["triaged"]] == [("1.1", "advisory")]  # type: ignore[union-attr]
    assert {"taskId": "1.2", "addendum": None, "reason": "infra-fault"} in rem["skipped"]  # type: ignore[operator]
    tip = ref(wf.remote, "refs/heads/main")
    # the same run's flush again (a hidden success): the trailer on the base says it landed
    again = _finish_in_process(wf, {"1.1": "done", "1.2": "infra-fault"})
    assert (again["state"], again["commit"]) == ("already-flushed", tip)
    # another run with the same finding: the item is already in the roadmap
    third = _finish_in_process(wf, {"1.1": "done"}, workflow_id="wf-test-2")
    assert (third["state"], third["reason"]) == ("nothing-to-flush", "already-in-roadmap")
    assert ref(wf.remote, "refs/heads/main") == tip and len(remediation_commits(wf)) == 1


def test_a_push_the_remote_refuses_is_reported_not_raised(tmp_path: Path) -> None:
    wf = make(tmp_path, ROADMAP)
    hook = wf.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'remediation is not welcome here'\nexit 1\n")
    hook.chmod(0o755)
    rem = _finish_in_process(wf, {"1.1": "done"})
    assert (rem["state"], rem["reason"]) == ("failed", "push-refused")
    assert "not welcome" in str(rem["detail"]) and rem["triaged"]


def test_dry_run_and_a_clean_run_write_nothing(tmp_path: Path) -> None:
    wf = make(tmp_path, ROADMAP)
    plan = wf.run("--dry-run", "--json").json()
    assert plan["remediation"]["state"] == "dry-run"
    done = wf.run("--json").json()
    assert (done["remediation"]["state"], done["remediation"]["reason"]) == ("nothing-to-flush", "nothing-triaged")
    assert remediation_commits(wf) == []


def test_add_items_numbers_indents_and_keeps_crlf() -> None:
    from git_harn.workflow.after.remediation import add_items

    text = "# R\r\n- [x] 7.1 T\r\n    - [x] addendum 4: old\r\n- [ ] 7.2 U\r\n  Requires: 7.1\r\n"
    items = [{"taskId": "7.1", "title": "a"}, {"taskId": "7.2", "title": "b"}, {"taskId": "7.1", "title": "OLD"},
             {"taskId": "9.9", "title": "gone"}]
    new, added, left = add_items(text, items)
    assert new == ("# R\r\n- [x] 7.1 T\r\n    - [x] addendum 4: old\r\n    - [ ] addendum 5: a\r\n"
                   "- [ ] 7.2 U\r\n  Requires: 7.1\r\n  - [ ] addendum 1: b\r\n")
    assert [(a["taskId"], a["addendum"]) for a in added] == [("7.1", 5), ("7.2", 1)]
    assert [x["reason"] for x in left] == ["already-in-roadmap", "task-not-in-roadmap"]
