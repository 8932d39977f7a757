"""Crash safety of the runner (issue 21, Deliver 11) [L3] [P1] [P6].

At each failpoint of the runner the whole process group of ``workflow run``
(git-harn and every git it runs) is frozen and killed, as an out-of-memory
kill or a container stop does. Then the one command an operator runs next,
``workflow run --resume-partial-branches --resume-mode continue``, must
need no hand work (for the builtin integrator git-harn reads the remote
itself), and afterwards: nothing an agent committed is lost, no task
landed twice, the remote only moved forward, the roadmap's boxes are the
landed squashes, no workspace is ``active`` and no record ``running``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.kit.harn import assert_valid, git, harn
from tests.kit.runners import at_failpoint
from tests.kit.workflow_repo import WF, setup

ROADMAP = "# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n  Requires: 1.1\n"
RERUN = ("workflow", "run", "--resume-partial-branches", "--resume-mode", "continue", "--json")

POINTS = [
    ("workflow-after-select", ()),
    ("workflow-after-claim", ("--claims",)),
    ("workflow-stage-plan", ()),
    ("workflow-stage-implement", ()),
    ("workflow-stage-gates", ()),
    ("workflow-stage-review", ()),
    ("workflow-stage-integrate", ()),
    ("integrate-after-commit", ()),
    ("integrate-after-push", ()),
    ("workflow-task-ended", ()),
    ("remediation-before-push", ()),
    ("remediation-after-push", ()),
]
# the task whose reviewers never approve: its blocking finding is what the remediation flush writes
REFUSED = {"1.2:review": "never-approve"}


def _agent_commits(wf: WF, base: str) -> set[str]:
    """Every commit on a task branch or a workspace's HEAD that the base does
    not hold (not the integration worktree's squash: git-harn's own, remade)."""
    tips = git(wf.work, "for-each-ref", "--format=%(objectname)", "refs/heads/roadmap-*").split()
    heads = []
    for entry in git(wf.work, "worktree", "list", "--porcelain").split("\n\n"):
        fields = dict(line.split(" ", 1) for line in entry.splitlines() if " " in line)
        if "HEAD" in fields and not fields.get("worktree", "").endswith(".integrate"):
            heads.append(fields["HEAD"])
    found = git(wf.work, "rev-list", *tips, *heads, "--not", base) if tips or heads else ""
    return set(found.split())


def _squashes(wf: WF) -> list[str]:
    """The task (and addendum) of every squash on the remote's main."""
    out = git(wf.remote, "log", "--format=%H%x00%B%x01", "main")
    found = []
    for entry in out.split("\x01"):
        task = re.search(r"^Harnery-Task: (\S+)$", entry, re.MULTILINE)
        if task:
            addendum = re.search(r"^Harnery-Addendum: (\d+)$", entry, re.MULTILINE)
            found.append(task.group(1) + (f"-addendum-{addendum.group(1)}" if addendum else ""))
    return found


def _ticked(wf: WF) -> set[str]:
    roadmap = wf.remote_file("docs/roadmap.md")
    return set(re.findall(r"^- \[x\] (\S+)", roadmap, re.MULTILINE))


@pytest.mark.parametrize(("point", "flags"), POINTS, ids=[p for p, _ in POINTS])
def test_a_runner_killed_at_each_failpoint_is_finished_by_the_next_run(tmp_path: Path, point: str,
                                                                       flags: tuple[str, ...]) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    remediating = point.startswith("remediation")
    if remediating:
        wf.script(REFUSED)
    before = git(wf.remote, "rev-parse", "main")

    at_failpoint(wf.work, point, "workflow", "run", *flags).kill_group()
    killed_at = git(wf.remote, "rev-parse", "main")
    work = _agent_commits(wf, before)

    rerun = harn(wf.work, *RERUN, *flags)  # the one command; no lock removed, no record fixed by hand
    assert rerun.code in (0, 3), rerun.err
    doc = rerun.json()
    assert_valid(doc, "workflow-result")
    assert len(doc["settled"]) == 1 and doc["settled"][0]["closed"], doc["settled"]

    # nothing an agent committed is lost [P1]
    lost = [c for c in sorted(work) if not git(wf.work, "for-each-ref", "--contains", c, "--count=1")]
    assert not lost, f"commits no ref holds after the rerun: {lost}"
    # the remote only moved forward, no task landed twice, its boxes are the landed squashes
    after = git(wf.remote, "rev-parse", "main")
    for earlier in (before, killed_at):
        assert git(wf.remote, "merge-base", "--is-ancestor", earlier, after, check=False) == ""
    squashes = _squashes(wf)
    assert len(squashes) == len(set(squashes)), squashes
    assert _ticked(wf) == {s for s in squashes if "addendum" not in s}
    # no workspace active, no record running
    status = harn(wf.work, "status", "--all", "--json")
    assert status.code == 0, status.err
    assert [w["runId"] for w in status.json()["workspaces"] if w["state"] == "active"] == []
    listed = harn(wf.work, "workflow", "list", "--json").json()["workflows"]
    assert [w["workflowId"] for w in listed if w["outcome"] == "workflow-running"] == []
    # the next run needed no hand work: everything that can land did
    if remediating:
        assert set(squashes) == {"1.1"} and rerun.code == 3
        assert "addendum 1: review finding (blocking)" in wf.remote_file("docs/roadmap.md")
        assert wf.remote_file("docs/roadmap.md").count("addendum 1:") == 1  # the flush landed once
    else:
        assert sorted(squashes) == ["1.1", "1.2"], (doc["tasks"], doc["skipped"], doc.get("recovery"))
        assert rerun.code == 0, rerun.err
    if "--claims" in flags:
        assert git(wf.remote, "for-each-ref", "refs/harnery/claims/") == ""  # the dead run's claim went too
