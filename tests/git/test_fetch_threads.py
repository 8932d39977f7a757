"""Fetches into one repository from several threads of one process (a
workflow's tasks and its runner) run one after another: none fails on
another's ref lock and waits out a pause to try again."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from git_harn.git import open_repo, remote
from git_harn.git.run import run_git as real_run_git
from tests.kit.harn import git, make_repo, ref


def test_threads_of_one_process_fetch_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    upstream = make_repo(tmp_path / "upstream")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(upstream), str(work))
    handle = open_repo(work)
    monkeypatch.setattr(remote, "FETCH_PAUSES", (60.0,))  # a fetch that lost a race would stall the test
    in_flight, most = [0], [0]
    guard = threading.Lock()

    def counting_run_git(args, cwd, **kwargs):  # type: ignore[no-untyped-def]
        # The real git, counted: how many fetches run at the same moment.
        if args and args[0] == "fetch":
            with guard:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])
            try:
                return real_run_git(args, cwd, **kwargs)
            finally:
                with guard:
                    in_flight[0] -= 1
        return real_run_git(args, cwd, **kwargs)

    monkeypatch.setattr(remote, "run_git", counting_run_git)
    tips: list[str] = []
    committing = threading.Lock()

    def fetcher(name: str) -> None:
        for n in range(6):
            with committing:  # the tracking ref must move; one commit upstream at a time
                git(upstream, "commit", "-q", "--allow-empty", "-m", f"{name} {n}")
            tips.append(str(remote.fetch_branch(handle, "origin", "main", "refs/remotes/origin/main")))

    threads = [threading.Thread(target=fetcher, args=(name,)) for name in ("a", "b", "c")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert len(tips) == 18 and most[0] == 1
    assert ref(work, "refs/remotes/origin/main") == git(upstream, "rev-parse", "main")
