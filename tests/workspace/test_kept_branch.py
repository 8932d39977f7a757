"""A branch that holds the only copy of a workspace's commits is seen, and
the advice given for it works as printed (issue 45, item 7) [W4] [W5] [P1].

``git worktree remove --force`` of a workspace with a commit: the record
turns already_gone and its branch is kept. status lists it (not "no
workspaces"), doctor reports it, and both advise ``git harn reclaim <id>``
(never ``git branch -m``, which the branch guard refuses); run as printed,
that puts the commit on harnery/salvage/<id> and lets the branch go.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from tests.kit.harn import assert_valid, git, harn, ref
from tests.kit.salvage_trees import started

SALVAGE = "refs/heads/harnery/salvage/r1"
WS = "refs/heads/harnery/ws/r1"


def _forced_away(tmp_path: Path) -> tuple[Path, Path, str]:
    repo, wt = started(tmp_path)
    assert harn(repo, "hooks", "install").code == 0
    (wt / "only-here.txt").write_text("the only copy\n")
    git(wt, "add", "only-here.txt")
    git(wt, "commit", "-qm", "work nobody else has")
    commit = git(wt, "rev-parse", "HEAD")
    git(repo, "worktree", "remove", "--force", str(wt))
    return repo, wt, commit


def _run_as_printed(repo: Path, advice: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(shlex.split(advice), cwd=repo, capture_output=True, text=True, check=False)


def test_status_lists_a_kept_branch_and_its_advice_works(tmp_path: Path) -> None:
    repo, wt, commit = _forced_away(tmp_path)
    shown = harn(repo, "status")
    assert shown.code == 0, shown.err
    assert "no workspaces" not in shown.out  # today: "no workspaces"
    assert "r1" in shown.out and "resolve: git harn reclaim r1" in shown.out, shown.out
    assert "branch -m" not in shown.out
    document = harn(repo, "status", "--json").json()
    assert_valid(document, "status")
    row = [w for w in document["workspaces"] if w["runId"] == "r1"][0]
    assert row["next"] == ["git harn reclaim r1"] and row["keptCommits"] == 1

    everything = harn(repo, "status", "--all", "--json").json()
    rows = [w for w in everything["workspaces"] if w["runId"] == "r1"]
    assert len(rows) == 1 and rows[0]["next"] == ["git harn reclaim r1"]  # today: 'git branch -m …'

    done = _run_as_printed(repo, row["next"][0])
    assert done.returncode == 0, done.stderr
    git(repo, "merge-base", "--is-ancestor", commit, SALVAGE)
    assert ref(repo, WS) is None
    after = harn(repo, "status")
    assert "no workspaces" in after.out, after.out


def test_doctor_reports_a_kept_branch_with_reclaim_as_its_fix(tmp_path: Path) -> None:
    repo, wt, commit = _forced_away(tmp_path)
    assert harn(repo, "status").code == 0  # settles the vanished folder: already_gone, branch kept
    done = harn(repo, "doctor", "--json")
    assert done.code == 1, done.out  # today: 0, nothing found
    document = done.json()
    assert_valid(document, "doctor")
    found = [f for f in document["findings"] if f["code"] == "workspace-branch-kept"]
    assert len(found) == 1, document["findings"]
    assert found[0]["fix"] == "git harn reclaim r1" and "1 commit" in found[0]["why"]
    ran = _run_as_printed(repo, found[0]["fix"])
    assert ran.returncode == 0, ran.stderr
    git(repo, "merge-base", "--is-ancestor", commit, SALVAGE)
    assert harn(repo, "doctor", "--json").json()["findings"] == []


def test_a_kept_branch_of_a_branch_guard_is_not_renamed_by_advice(tmp_path: Path) -> None:
    """What status advised before: the guard refuses it, so it is never printed."""
    repo, wt, commit = _forced_away(tmp_path)
    refused = git(repo, "branch", "-m", "harnery/ws/r1", "mine", check=False)
    assert ref(repo, WS) is not None, refused  # the guard keeps it
    assert "branch -m" not in harn(repo, "status", "--all").out
