"""A bounded read that meets its limit fails; it never hands on a prefix that
is then written back (issue 28, item 3) [P5].

The roadmap is read whole up to 16 MiB (``tasks.roadmap.ROADMAP_LIMIT``): a bigger one
is a clear error, and the remediation flush then pushes nothing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from git_harn.git import open_repo
from tests.kit.addenda_repo import EXTRA_AGENT, config
from tests.kit.harn import assert_valid, git, harn, make_repo
from tests.kit.task_repo import task_branch, task_repo, write
from tests.kit.workflow_repo import WF, setup

ONE_ROUND = "stageTimeout = 60\nreviewRounds = 1\n"


def filler(size: int, major: int = 9) -> str:
    """Ticked tasks ``<major>.<n>``, one 1000-byte line each, until ``size`` bytes: nothing to select
    (task ids stay unique: a roadmap with one id twice is bad input)."""
    lines, n, total = [], 0, 0
    while total < size:
        n += 1
        line = f"- [x] {major}.{n} " + "finished work, kept for the record " * 27 + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)


def shown(repo: Path, spec: str) -> str:
    """``git show <spec>`` byte for byte (the ``git`` helper strips its output)."""
    return subprocess.run(["git", "show", spec], cwd=repo, capture_output=True, check=True).stdout.decode()


def flushing(tmp: Path, roadmap: str, review: str = "extra.py") -> WF:
    """1.1 lands with an advisory finding, so the final flush writes one addendum."""
    agents = tmp / "agents"
    text = config(agents, ONE_ROUND, addendum=False).replace('extra.py", "review"', f'{review}", "review"')
    wf = setup(tmp, roadmap=roadmap, config=text)
    (agents / "extra.py").write_text(EXTRA_AGENT)
    (agents / "extra.json").write_text(json.dumps({"1.1:review": "advisory"}))
    return wf


def test_the_flush_writes_a_roadmap_over_1_mib_back_whole(tmp_path: Path) -> None:
    roadmap = "# Roadmap\n\n- [ ] 1.1 First thing\n" + filler(2 << 20)
    wf = flushing(tmp_path, roadmap)
    done = wf.run("--json")
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert doc["tasks"][0]["status"] == "done", doc["tasks"][0]
    assert doc["remediation"]["state"] == "flushed", doc["remediation"]
    landed = shown(wf.remote, "main:docs/roadmap.md")
    expected = roadmap.replace("- [ ] 1.1 First thing\n", "- [x] 1.1 First thing\n"
                               "  - [ ] addendum 1: review finding (advisory) (work.txt): consider naming 1.1 "
                               "better\n")
    assert len(landed) == len(expected) and landed == expected  # every line after the first MiB is still there


BIG_PUSH = r'''
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
marker = os.path.join(here, "pushed")
if not os.path.exists(marker):
    open(marker, "w").close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    other = os.path.join(here, "other")
    def git(*args, cwd=other):
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)
    git("clone", "-q", open(os.path.join(here, "remote.txt")).read(), other, cwd=here)
    with open(os.path.join(other, "docs", "roadmap.md"), "a") as f:
        f.write(open(os.path.join(here, "filler.txt")).read())
    git("commit", "-q", "-am", "the roadmap grows past the limit")
    git("push", "-q", "origin", "HEAD:main")
os.execv(sys.executable, [sys.executable, os.path.join(here, "extra.py"), "review"])
'''


def test_a_roadmap_past_the_limit_is_never_cut_and_the_flush_pushes_nothing(tmp_path: Path) -> None:
    """A reviewer pushes a roadmap of 17 MiB to the base while the run goes on."""
    wf = flushing(tmp_path, "# Roadmap\n\n- [ ] 1.1 First thing\n", review="bigpush.py")
    (wf.agents / "bigpush.py").write_text(BIG_PUSH)
    (wf.agents / "filler.txt").write_text(filler(17 << 20))
    (wf.agents / "remote.txt").write_text(str(wf.remote))
    done = wf.run("--json", timeout=300)
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert doc["tasks"][0]["status"] == "done", doc["tasks"][0]
    rem = doc["remediation"]
    assert rem["state"] == "failed" and "larger than 16 MiB" in rem["detail"], rem
    assert rem["commit"] is None
    assert git(wf.remote, "log", "--format=%H", "--grep=^Harnery-Remediation:", "main") == ""
    landed = shown(wf.remote, "main:docs/roadmap.md")
    assert landed.startswith("# Roadmap\n\n- [x] 1.1 First thing\n") and len(landed) > 17 << 20
    assert landed.endswith(filler(17 << 20))  # the integration ticked it whole; nothing cut it since
    assert doc["halted"] is not None and "larger than 16 MiB" in doc["halted"]
    assert "internal error" not in done.out  # the task landed; only the selection and the flush stopped


def test_a_file_read_at_a_commit_past_its_limit_is_an_error_not_a_prefix(tmp_path: Path) -> None:
    repo_dir = make_repo(tmp_path / "repo", {"big.md": "x" * 5000 + "\n"})
    repo = open_repo(repo_dir)
    head = repo.ref_oid("HEAD")
    assert head is not None
    from git_harn.errors import TooLarge

    assert repo.read_file(head, "big.md", limit=10_000) == b"x" * 5000 + b"\n"
    with pytest.raises(TooLarge, match="big.md at .* is larger than 4096 bytes"):
        repo.read_file(head, "big.md", limit=4096)
    assert repo.read_file(head, "big.md", limit=4096, whole=False) == b"x" * 4096  # a peek, said so


def test_an_execplan_past_the_limit_is_rejected_by_salvage_not_committed_cut(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="IN PROGRESS")
    huge = "# 1.2\n\nStatus: IN PROGRESS\n\n" + "- a step of the plan\n" * ((16 << 20) // 20 + 10)
    write(worktree, {"docs/execplans/1.2.md": huge})
    old_tip = git(repo, "rev-parse", "roadmap-1.2")
    result = harn(repo, "salvage-artefacts", "roadmap-1.2", "--classification", "adopt-partial", "--json")
    assert result.code == 0, result.err
    doc = result.json()
    assert_valid(doc, "salvage-result")
    assert doc["committed"] is False
    assert doc["rejected"] == [{"path": "docs/execplans/1.2.md", "reason": "larger than 16 MiB"}]
    assert git(repo, "rev-parse", "roadmap-1.2") == old_tip
    assert (worktree / "docs/execplans/1.2.md").read_text() == huge


def test_a_hard_linked_execplan_is_rejected_by_salvage(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="IN PROGRESS")
    outside = tmp_path / "outside.md"
    outside.write_text("Status: IN PROGRESS\n\nthe operator's private notes\n")
    (worktree / "docs/execplans/1.2.md").unlink()
    os.link(outside, worktree / "docs/execplans/1.2.md")
    result = harn(repo, "salvage-artefacts", "roadmap-1.2", "--classification", "adopt-partial", "--json")
    assert result.code == 0, result.err
    doc = result.json()
    assert doc["committed"] is False
    assert doc["rejected"] == [{"path": "docs/execplans/1.2.md", "reason": "has another hard link"}]
