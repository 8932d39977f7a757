"""git dies when it lists worktrees while another git is half-way through
adding or removing one ("failed to read …/worktrees/<name>/commondir:
Success"). Parallel tasks hit that window (a gate's scratch checkout being
added while a sibling task fetches); the commands that only read the list
before acting are run again instead of failing the task. The worktree list
itself is read from the admin files (no git process), so it is not caught
in that window at all."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from git_harn.errors import GitFailure
from git_harn.git.repo import open_repo
from git_harn.git.worktrees import add_detached, registered_worktrees, remove_scratch
from tests.kit.harn import git, make_repo, ref

T = TypeVar("T")


def _half_written(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo = make_repo(tmp_path / "repo")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    commondir = repo / ".git" / "worktrees" / "linked" / "commondir"
    content = commondir.read_bytes()
    commondir.write_bytes(b"")  # as `git worktree add` leaves it between open and write
    assert git(repo, "worktree", "list", check=False) == ""  # plain git dies here
    assert content
    return repo, linked, commondir


def _finished_later(path: Path, content: bytes, call: Callable[[], T]) -> T:
    """Run ``call`` while another writer finishes ``path`` 0.2 s later, as the
    other git would."""
    finish = threading.Timer(0.2, path.write_bytes, args=(content,))
    finish.start()
    try:
        return call()
    finally:
        finish.join()


def _fetch_here(repo: Path) -> str:
    return open_repo(repo)._git("fetch", "-q", ".", "HEAD:refs/remotes/here/main")


def test_a_listing_during_a_half_written_add_is_run_again(tmp_path: Path) -> None:
    repo, linked, commondir = _half_written(tmp_path)
    listed = _finished_later(commondir, b"../..\n", lambda: registered_worktrees(open_repo(repo)))
    assert linked.resolve() in {p.resolve() for p in listed}


def test_a_fetch_during_a_half_written_add_is_run_again(tmp_path: Path) -> None:
    repo, _, commondir = _half_written(tmp_path)
    _finished_later(commondir, b"../..\n", lambda: _fetch_here(repo))
    assert git(repo, "rev-parse", "refs/remotes/here/main") == git(repo, "rev-parse", "HEAD")


def test_a_fetch_while_an_added_worktree_still_has_its_placeholder_head_is_run_again(tmp_path: Path) -> None:
    """`worktree add` writes the new HEAD as the null id first; a fetch that
    walks every worktree's HEAD then dies with "bad object worktrees/<name>/HEAD"."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    head = repo / ".git" / "worktrees" / "linked" / "HEAD"
    real = head.read_bytes()
    head.write_bytes(b"0" * 40 + b"\n")
    assert git(repo, "fetch", "-q", ".", "HEAD:refs/remotes/plain/main", check=False) == ""  # plain git dies
    assert ref(repo, "refs/remotes/plain/main") is None
    _finished_later(head, real, lambda: _fetch_here(repo))
    assert git(repo, "rev-parse", "refs/remotes/here/main") == git(repo, "rev-parse", "HEAD")


def test_a_worktree_that_stays_broken_still_fails_in_bounded_time(tmp_path: Path) -> None:
    repo, _, _ = _half_written(tmp_path)
    started = time.monotonic()
    with pytest.raises(GitFailure, match="commondir"):
        open_repo(repo)._git("worktree", "list")  # git itself, run again, then given up
    assert time.monotonic() - started < 5


def test_the_listing_reads_no_commondir_and_lists_a_half_written_worktree(tmp_path: Path) -> None:
    """The list is read from the admin files, not from a git that dies on
    the empty commondir: the worktree is listed, as git lists it once written."""
    repo, linked, _ = _half_written(tmp_path)
    assert linked.resolve() in {p.resolve() for p in registered_worktrees(open_repo(repo))}


def test_listing_while_checkouts_come_and_go(tmp_path: Path) -> None:
    """The real race: one thread adds and removes detached checkouts the way
    the gates do, another lists and fetches the whole time; nothing fails."""
    repo_path = make_repo(tmp_path / "repo")
    repo = open_repo(repo_path)
    tip = repo.resolve_commit("HEAD")
    stop = threading.Event()
    churned: list[int] = []

    def churn() -> None:
        n = 0
        while not stop.is_set():
            path = tmp_path / f"scratch-{n % 3}" / "tree"
            add_detached(repo, path, tip)
            remove_scratch(repo, path)
            n += 1
        churned.append(n)

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            registered_worktrees(repo)
            repo._git("fetch", "-q", ".", "HEAD:refs/remotes/here/main")
    finally:
        stop.set()
        worker.join()
    assert churned and churned[0] > 0
