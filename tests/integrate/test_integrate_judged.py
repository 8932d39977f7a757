"""``integrate.judged.not_judged`` on real repositories [T4]: the base
must move by exactly the judged work merged onto it, ticked, whatever
shape the commits take; whitespace counts, and a resolved conflict is
work nobody judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_harn.git import open_repo, to_oid
from git_harn.integrate.judged import Landing, NotJudged, not_judged
from tests.kit.harn import git, make_repo

ROADMAP = "# R\n\n- [ ] 1.1 First thing\n- [ ] 1.2 Second thing\n"
CODE = "def f(x):\n    if x:\n        return 1\n    return 0\n"


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def tick(repo: Path) -> str:
    return commit(repo, {"docs/roadmap.md": ROADMAP.replace("- [ ] 1.1", "- [x] 1.1")}, "tick 1.1")


@pytest.fixture()
def world(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository: main at the base, ``task`` holding the judged commit on it."""
    work = make_repo(tmp_path / "r", {"docs/roadmap.md": ROADMAP, "a.py": CODE, "b.txt": "b\n"})
    base = git(work, "rev-parse", "HEAD").strip()
    git(work, "switch", "-q", "-c", "task")
    judged = commit(work, {"a.py": CODE.replace("return 1", "return 2")}, "judged work")
    git(work, "switch", "-q", "main")
    return work, base, judged


def check(work: Path, judged: str, before: str) -> NotJudged | None:
    landed = git(work, "rev-parse", "HEAD").strip()
    landing = Landing(to_oid(judged), to_oid(before), to_oid(landed), "docs/roadmap.md", "1.1", None, "origin/main")
    return not_judged(open_repo(work), landing)


def test_a_squash_a_series_and_a_merge_commit_of_the_judged_work_all_pass(world: tuple[Path, str, str]) -> None:
    work, base, judged = world
    git(work, "merge", "-q", "--squash", "task")
    tick(work)  # squash and tick as two commits
    assert check(work, judged, base) is None
    git(work, "reset", "-q", "--hard", base)
    git(work, "merge", "-q", "--no-ff", "-m", "merge task", "task")
    tick(work)
    assert check(work, judged, base) is None


def test_a_base_moved_by_others_before_the_agent_ran_is_merged_onto(world: tuple[Path, str, str]) -> None:
    work, _, judged = world
    before = commit(work, {"b.txt": "b moved\n"}, "someone else, before the agent ran")
    git(work, "merge", "-q", "--squash", "task")
    tick(work)
    assert check(work, judged, before) is None


def test_a_whitespace_change_is_not_the_judged_work(world: tuple[Path, str, str]) -> None:
    """A patch-id would not tell this one apart: the return moved out of the if."""
    work, base, judged = world
    git(work, "merge", "-q", "--squash", "task")
    (work / "a.py").write_text(CODE.replace("        return 1", "    return 2"))
    tick(work)
    found = check(work, judged, base)
    assert found is not None and found.moved
    assert "1 path(s) differ: a.py" in found.detail


def test_a_conflict_the_agent_resolved_was_not_judged(world: tuple[Path, str, str]) -> None:
    work, _, judged = world
    before = commit(work, {"a.py": CODE.replace("return 1", "return 3")}, "a conflicting change")
    commit(work, {"a.py": CODE.replace("return 1", "return 2")}, "resolved by the agent")
    tick(work)
    found = check(work, judged, before)
    assert found is not None and found.moved
    assert f"the judged commit {judged[:12]} does not merge cleanly onto {before[:12]}" in found.detail
    assert "2 commit(s)" in found.detail


def test_ticking_another_task_too_is_not_the_judged_work(world: tuple[Path, str, str]) -> None:
    work, base, judged = world
    git(work, "merge", "-q", "--squash", "task")
    commit(work, {"docs/roadmap.md": ROADMAP.replace("- [ ]", "- [x]")}, "tick both")
    found = check(work, judged, base)
    assert found is not None and found.moved and "docs/roadmap.md" in found.detail


def test_a_base_that_did_not_move_refuses_the_claim(world: tuple[Path, str, str]) -> None:
    work, base, judged = world
    found = check(work, judged, base)
    assert found is not None and not found.moved
    assert f"did not move from {base[:12]}" in found.detail
