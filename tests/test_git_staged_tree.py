"""The integration commits the tree its index holds: read in-process where
libgit2 can read the index, by ``git write-tree`` where it cannot (a split
index, a sparse index), the same tree either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git, make_repo

from git_harn.git.checkout import staged_tree


def _staged_change(repo: Path) -> None:
    (repo / "new.txt").write_text("staged\n")
    git(repo, "add", "new.txt")


def test_the_staged_tree_is_git_write_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    _staged_change(repo)
    assert staged_tree(repo) == git(repo, "write-tree")


def test_a_split_index_gives_the_same_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "core.splitIndex", "true")
    _staged_change(repo)
    git(repo, "update-index", "--split-index")
    assert list((repo / ".git").glob("sharedindex.*"))  # the index is split
    assert staged_tree(repo) == git(repo, "write-tree")


def test_a_sparse_index_gives_the_same_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"keep/a.txt": "a\n", "away/b.txt": "b\n"})
    done = git(repo, "sparse-checkout", "set", "--cone", "--sparse-index", "keep", check=False)
    if git(repo, "config", "index.sparse", check=False) != "true":
        pytest.skip(f"this git makes no sparse index: {done}")
    (repo / "keep" / "new.txt").write_text("staged\n")
    git(repo, "add", "keep/new.txt")
    assert staged_tree(repo) == git(repo, "write-tree")
