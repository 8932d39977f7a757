"""Killed together with git: the whole process group frozen, then SIGKILLed,
while git holds its lock (issue 10, defects 2 and 3) [P1] [P6].

A gate filter (see tests/kit/git_crashes.py) stops git at a known instant inside
``git add -A``, ``reset --hard`` or ``merge --squash``; the test then kills
every process in the group it started, so the leftovers are exactly what an
out-of-memory kill or a container stop leaves: git's lock files, git-harn's
run lock of a dead process, a half-reset tree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit.git_crashes import (
    Gate,
    admin_of,
    integration_setup,
    kill_group_when_blocked,
    make_gate,
    make_task,
    squashes_of,
    start_in,
    use_gate,
)
from tests.kit.harn import assert_valid, git, harn, make_repo, record, ref
from tests.kit.salvage_trees import lock_files, make_dirty, started, tree_files, worktree_files

SALVAGE = "refs/heads/harnery/salvage/r1"
WS = "refs/heads/harnery/ws/r1"
ATTRIBUTES = "*.gate filter=gate\n"


def assert_released_with(repo: Path, wt: Path, expected: dict[bytes, tuple[int, bytes]]) -> None:
    """The rerun finished the job: the work, byte for byte, on the salvage
    branch, and the workspace released with nothing left behind."""
    assert tree_files(repo, SALVAGE) == expected
    rec = record(repo, "r1")
    assert_valid(rec, "run-record")
    assert rec["state"] == "released" and rec["salvage"]["oid"] == ref(repo, SALVAGE)
    assert not wt.exists() and ref(repo, WS) is None
    assert str(wt) not in git(repo, "worktree", "list")
    assert lock_files(repo) == []


# --- 10.2: reclaim killed together with git ----------------------------------------


def test_reclaim_killed_with_git_during_the_salvage_add_finishes_on_rerun(tmp_path: Path) -> None:
    gate = make_gate(tmp_path / "gate")
    repo, wt = started(tmp_path)
    use_gate(repo, gate, "clean")
    (wt / ".gitattributes").write_text(ATTRIBUTES)
    (wt / "output.gate").write_text("what the agent wrote\n")  # git add -A cleans it: the gate
    make_dirty(wt)
    expected = worktree_files(wt)
    assert harn(repo, "cleanup", "r1", "--yes").code == 3

    killed = kill_group_when_blocked(repo, ["reclaim", "r1"], gate)
    assert "git" in {name for _, name in killed.members}  # git died with git-harn
    assert (admin_of(wt) / "harn-salvage-index.lock").exists()  # what that leaves
    assert worktree_files(wt) == expected and ref(repo, SALVAGE) is None  # nothing lost yet

    rerun = harn(repo, "reclaim", "r1")
    assert rerun.code == 0, rerun.err  # today: 3, "Unable to create …/harn-salvage-index.lock"
    again = harn(repo, "reclaim", "r1", "--json")
    assert again.code == 0 and again.json()["outcome"] == "already_gone"
    assert_released_with(repo, wt, expected)


def reset_interrupted(tmp_path: Path) -> tuple[Path, Path, Gate, dict[bytes, tuple[int, bytes]], str]:
    """A preserved workspace whose reclaim was killed, with git, in the middle
    of ``reset --hard``. A first reclaim salvaged and recorded the work in
    place, and was killed before it put the tree down on the salvage commit;
    the second, finishing the job, resets to the frozen intent (a first
    reclaim resets nothing it salvaged), and is killed with git in that
    reset: the salvage is recorded, files before ``m.gate`` in
    index order are reset, ``m.gate`` is being written, the rest still hold
    the work, and git's ``index.lock`` is left. Returns (repo, worktree,
    gate, the work as it was, the salvage commit the killed run recorded)."""
    gate = make_gate(tmp_path / "gate")
    files = {f"a{i:02}.txt": f"a{i}\n" for i in range(20)}
    files.update({f"z{i:02}.txt": f"z{i}\n" for i in range(20)})
    files.update({"m.gate": "middle\n", ".gitattributes": ATTRIBUTES, ".gitignore": "*.log\n",
                  "README.md": "hello\n", "src/app.py": "x = 1\n", "src/old.py": "old\n"})
    repo = make_repo(tmp_path / "repo", files)
    use_gate(repo, gate, "smudge")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    wt = start_in(repo, "r1")
    for name in files:
        if name[0] in "amz":
            (wt / name).write_text("the agent's " + files[name])
    make_dirty(wt)
    expected = worktree_files(wt)
    assert harn(repo, "cleanup", "r1", "--yes").code == 3
    assert harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-salvage-record"}).code == 137

    killed = kill_group_when_blocked(repo, ["reclaim", "r1"], gate)
    assert "git" in {name for _, name in killed.members}
    salvaged = ref(repo, SALVAGE)
    assert salvaged is not None and tree_files(repo, SALVAGE) == expected  # the killed run saved it all
    assert record(repo, "r1")["reclaiming"]["salvageOid"] == salvaged
    assert (admin_of(wt) / "index.lock").exists()
    # Half reset: a* are back at the base, z* still hold the work, m.gate is mid-write.
    assert (wt / "a00.txt").read_text() == "a0\n" and (wt / "z00.txt").read_text() == "the agent's z0\n"
    return repo, wt, gate, expected, salvaged


def test_reclaim_killed_with_git_during_reset_hard_finishes_on_rerun(tmp_path: Path) -> None:
    repo, wt, _, expected, salvaged = reset_interrupted(tmp_path)

    rerun = harn(repo, "reclaim", "r1")
    assert rerun.code == 0, rerun.err  # today: 1, "git reset failed: Unable to create …/index.lock"
    assert ref(repo, SALVAGE) == salvaged  # the half-reset tree is not salvaged again
    assert_released_with(repo, wt, expected)


def test_rerun_after_a_kill_during_reset_hard_never_salvages_the_half_reset_tree(tmp_path: Path) -> None:
    repo, wt, _, expected, salvaged = reset_interrupted(tmp_path)
    # The operator follows git's advice and removes the lock: only the torn tree is left.
    (admin_of(wt) / "index.lock").unlink()

    rerun = harn(repo, "reclaim", "r1")
    assert rerun.code == 0, rerun.err
    # Today the rerun makes a new salvage of the torn tree (a* reset, m.gate
    # missing) and points the branch at it; the good one is only a parent.
    assert ref(repo, SALVAGE) == salvaged
    assert_released_with(repo, wt, expected)


# --- 10.3: integrate killed together with git --------------------------------------

ROADMAP = "# Roadmap\n\n- [ ] 1.1 First thing\n- [ ] 1.2 Second thing\n- [ ] 1.3 Third thing\n"
SEED = {"README.md": "hello\n", "docs/roadmap.md": ROADMAP, ".gitattributes": ATTRIBUTES}


def integration_admin(tmp_path: Path) -> Path:
    [worktree] = list((tmp_path / "worktrees").glob("*/.integrate"))
    return admin_of(worktree)


def test_integrate_killed_with_git_leaves_a_worktree_the_next_tasks_can_use(tmp_path: Path) -> None:
    gate = make_gate(tmp_path / "gate")
    remote, work = integration_setup(tmp_path, SEED)
    use_gate(work, gate, "smudge")
    first = make_task(work, "1.1", {"big.gate": "one\n"})  # the rebase's checkout writes it: the gate
    third = make_task(work, "1.3", {"three.txt": "3\n"})
    # main moves on, so each task is rebased in the integration worktree (a
    # task that grows from main is squashed in-process, with no checkout).
    git(work, "commit", "-q", "--allow-empty", "-m", "main moves on")
    git(work, "push", "-q", "origin", "main")
    before = git(remote, "rev-parse", "main")

    killed = kill_group_when_blocked(work, ["integrate", first, "--base", "main"], gate)
    assert "git" in {name for _, name in killed.members}
    assert (integration_admin(tmp_path) / "index.lock").exists()
    assert git(remote, "rev-parse", "main") == before  # never half-integrated

    other = harn(work, "integrate", third, "--base", "main", "--json")
    assert other.code == 0, other.err  # today: 1, "git switch failed: Unable to create …/index.lock"
    assert other.json()["outcome"] == "landed"
    resumed = harn(work, "integrate", first, "--base", "main", "--resume-after-crash", "--json")
    assert resumed.code == 0, resumed.err
    assert resumed.json()["outcome"] == "landed"
    assert (squashes_of(remote, "1.1"), squashes_of(remote, "1.3")) == (1, 1)  # each lands exactly once
    assert git(remote, "show", "main:big.gate") == "one"
    roadmap = git(remote, "show", "main:docs/roadmap.md")
    assert "- [x] 1.1" in roadmap and "- [x] 1.3" in roadmap and "- [ ] 1.2" in roadmap


@pytest.mark.parametrize("leftover", ["rebase-merge/", "HEAD.lock"])
def test_an_integration_worktree_left_unusable_is_rebuilt(tmp_path: Path, leftover: str) -> None:
    """What a group kill leaves in the integration worktree's git dir, made by
    hand: an empty rebase-merge/ (killed as the rebase began) or HEAD.lock."""
    remote, work = integration_setup(tmp_path, SEED)
    first = make_task(work, "1.1", {"one.txt": "1\n"})
    assert harn(work, "integrate", first, "--base", "main").code == 0
    admin = integration_admin(tmp_path)
    if leftover.endswith("/"):
        (admin / leftover).mkdir()
    else:
        (admin / leftover).write_text("")
    third = make_task(work, "1.3", {"three.txt": "3\n"})

    result = harn(work, "integrate", third, "--base", "main", "--json")
    assert result.code == 0, result.err  # today: 1, "git switch failed: …"
    assert result.json()["outcome"] == "landed"
    assert (squashes_of(remote, "1.1"), squashes_of(remote, "1.3")) == (1, 1)
    assert git(remote, "show", "main:three.txt") == "3"
