"""``worktree_branch``, read with libgit2, answers as ``git symbolic-ref -q
HEAD`` does in a task worktree: the branch ref, or None when detached or no
repository (issue 25 item 5: one git process less after every stage)."""

from __future__ import annotations

from pathlib import Path

from helpers import git, make_repo

from git_harn.git.branches import worktree_branch


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
