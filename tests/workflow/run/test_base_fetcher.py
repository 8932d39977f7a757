"""The run's base fetches on their own (workflow/run/fetcher.py): numbered in
the order they finish, a landing's fetch handed from a task's thread to the
loop's, the queue refilled only from a newer view of the base, an error
handed to whoever takes the fetch [T4]."""

from __future__ import annotations

import shutil
import threading
from itertools import pairwise
from pathlib import Path

import pytest

from git_harn.errors import GitFailure
from git_harn.git import Oid, open_repo
from git_harn.workflow.run.fetcher import BaseFetcher, Fetched
from tests.kit.harn import git, make_repo, ref


def _clone(tmp_path: Path) -> tuple[Path, Path, BaseFetcher]:
    upstream = make_repo(tmp_path / "upstream")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(upstream), str(work))
    start = Oid(git(work, "rev-parse", "origin/main"))
    return upstream, work, BaseFetcher(open_repo(work), "origin", "main", start)


def _commit(upstream: Path, message: str) -> str:
    git(upstream, "commit", "-q", "--allow-empty", "-m", message)
    return git(upstream, "rev-parse", "main")


def test_a_fetch_brings_the_remote_tip_and_the_generations_count_the_fetches_that_finished(
        tmp_path: Path) -> None:
    upstream, work, fetcher = _clone(tmp_path)
    first = _commit(upstream, "one")
    assert fetcher.fetch().result(60) == Fetched(1, Oid(first))
    assert ref(work, "refs/remotes/origin/main") == first
    second = _commit(upstream, "two")
    assert fetcher.fetch().result(60) == Fetched(2, Oid(second))


def test_fetches_from_many_threads_are_numbered_in_the_order_they_finished(tmp_path: Path) -> None:
    """Tasks landing at once: a higher generation always saw the base at least
    as far on as a lower one, so the newest generation holds the last commit."""
    upstream, work, fetcher = _clone(tmp_path)
    seen: list[Fetched] = []
    committing = threading.Lock()

    def lands(name: str) -> None:
        for n in range(4):
            with committing:  # one commit upstream at a time
                _commit(upstream, f"{name} {n}")
            seen.append(fetcher.fetch().result(120))

    threads = [threading.Thread(target=lands, args=(name,)) for name in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads)
    assert sorted(f.generation for f in seen) == list(range(1, 13))
    by_generation = sorted(seen)
    for older, newer in pairwise(by_generation):
        assert git(work, "merge-base", str(older.oid), str(newer.oid)) == str(older.oid), (older, newer)
    assert str(by_generation[-1].oid) == git(upstream, "rev-parse", "main")


def test_a_landings_fetch_started_in_the_tasks_thread_is_the_one_the_loop_takes(tmp_path: Path) -> None:
    upstream, _, fetcher = _clone(tmp_path)
    tip = _commit(upstream, "landed")
    thread = threading.Thread(target=fetcher.landed, args=("run-1",))
    thread.start()
    thread.join(60)
    assert fetcher.after("run-1").result(60) == Fetched(1, Oid(tip))  # no second fetch for it
    assert fetcher.after("run-1").result(60).generation == 2  # taken once: a later ask fetches anew
    assert fetcher.after("run-2").result(60).generation == 3  # a task that started none: fetched now


def test_the_base_moves_only_to_a_newer_fetch(tmp_path: Path) -> None:
    upstream, _, fetcher = _clone(tmp_path)
    start = fetcher.base
    _commit(upstream, "one")
    older = fetcher.fetch().result(60)
    _commit(upstream, "two")
    newer = fetcher.fetch().result(60)
    assert fetcher.base == start  # a fetch alone never moves it
    assert fetcher.newer(newer) and fetcher.base == newer.oid
    assert not fetcher.newer(older) and fetcher.base == newer.oid  # an older view is never refilled from
    assert not fetcher.newer(newer)  # nor the same one twice


def test_a_failed_fetch_is_raised_by_its_result_and_counts_for_nothing(tmp_path: Path) -> None:
    upstream, _, fetcher = _clone(tmp_path)
    moved = tmp_path / "moved"
    shutil.move(str(upstream), str(moved))
    with pytest.raises(GitFailure, match="git fetch origin failed"):
        fetcher.after("run-1").result(60)  # raised where the loop takes it, as if it had fetched itself
    shutil.move(str(moved), str(upstream))
    tip = _commit(upstream, "back")
    assert fetcher.fetch().result(60) == Fetched(1, Oid(tip))
