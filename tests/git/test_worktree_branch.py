"""``worktree_branch``, read with libgit2, answers as ``git symbolic-ref -q
HEAD`` does in a task worktree: the branch ref, or None when detached or no
repository (issue 25 item 5: one git process less after every stage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_harn.git.branches import worktree_branch
from tests.kit.harn import git, make_repo


def test_the_branch_of_a_worktree_as_git_names_it(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main")
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", "-b", "roadmap-1.1", str(linked))
    assert worktree_branch(linked) == git(linked, "symbolic-ref", "-q", "HEAD") == "refs/heads/roadmap-1.1"
    assert worktree_branch(main) == git(main, "symbolic-ref", "-q", "HEAD")
    git(linked, "switch", "-q", "--detach")
    assert worktree_branch(linked) is None
    git(linked, "switch", "-q", "--orphan", "unborn")  # a branch not made yet is still the one checked out
    assert worktree_branch(linked) == git(linked, "symbolic-ref", "-q", "HEAD") == "refs/heads/unborn"
    (tmp_path / "plain").mkdir()
    assert worktree_branch(tmp_path / "plain") is None
    assert worktree_branch(tmp_path / "gone") is None


def test_detach_and_attach_move_head_as_git_switch_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The task worktree is detached for the integration and put back on its
    branch after it: HEAD alone changes while the branch stays where it was
    (no process); a branch the integration moved is checked out by git."""
    from git_harn.git.branches import attach, detach

    main = make_repo(tmp_path / "main")
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", "-b", "roadmap-1.1", str(linked))
    tip = git(linked, "rev-parse", "HEAD")
    with monkeypatch.context() as no_git:
        no_git.setenv("PATH", str(tmp_path / "no-git-here"))  # HEAD alone changes: no git runs
        detach(linked)
        assert worktree_branch(linked) is None
        attach(linked, "roadmap-1.1")
        detach(linked)
    assert git(linked, "rev-parse", "HEAD") == tip and git(linked, "status", "--porcelain") == ""
    attach(linked, "roadmap-1.1")
    assert git(linked, "symbolic-ref", "HEAD") == "refs/heads/roadmap-1.1"
    assert git(linked, "rev-parse", "HEAD") == tip and git(linked, "status", "--porcelain") == ""

    detach(linked)
    (main / "new.txt").write_text("moved\n")
    git(main, "add", "new.txt")
    moved = git(main, "commit-tree", git(main, "write-tree"), "-p", tip, "-m", "moved")
    git(main, "update-ref", "refs/heads/roadmap-1.1", moved, tip)  # as a rebase moves it
    attach(linked, "roadmap-1.1")
    assert git(linked, "symbolic-ref", "HEAD") == "refs/heads/roadmap-1.1"
    assert git(linked, "rev-parse", "HEAD") == moved
    assert (linked / "new.txt").read_text() == "moved\n" and git(linked, "status", "--porcelain") == ""


def test_attach_refuses_a_branch_checked_out_in_another_worktree_as_git_switch_does(tmp_path: Path) -> None:
    """While the task worktree is detached, someone may check its branch out
    elsewhere; putting it back must not leave one branch in two worktrees."""
    from git_harn.errors import GitFailure
    from git_harn.git.branches import attach, detach

    main = make_repo(tmp_path / "main")
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", "-b", "task", str(linked))
    detach(linked)
    git(main, "switch", "-q", "task")
    with pytest.raises(GitFailure, match="already checked out"):
        attach(linked, "task")
    assert worktree_branch(linked) is None
    assert git(main, "symbolic-ref", "HEAD") == "refs/heads/task"
    listed = git(main, "worktree", "list", "--porcelain")
    assert listed.count("branch refs/heads/task") == 1
