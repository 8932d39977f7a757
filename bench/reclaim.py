"""Bench: `git harn reclaim` against the plain-git way of salvaging and removing.

A repository of 10,000 files; a workspace with 1,000 of them modified and
1,000 new untracked files. Times `git harn reclaim <run-id>` (salvage, restore,
cleanup) against what an operator would type by hand:

    git add -A; git commit --no-verify; git branch <salvage>;
    git reset --hard HEAD~1; git clean -fd; git worktree remove; git branch -D

Each round gets a fresh workspace; the two alternate which goes first.
Prints the median, min and max of each side and the ratio of the medians.
Run: python bench/reclaim.py [rounds]   (default 7)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

FILES = 10_000
MODIFIED = 1_000
UNTRACKED = 1_000

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HARN, cleanup, git, report, sandbox  # noqa: E402


def fixture(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(FILES):
        folder = repo / f"d{i % 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text(f"file {i}\n" * 8)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fixture")
    git(repo, "config", "harn.worktreeRoot", str(root / "worktrees"))
    # The plain way's `git commit` starts `gc --auto` in the background once
    # enough objects are loose; it would then slow whichever round came next.
    git(repo, "config", "gc.auto", "0")
    return repo


def make_dirty(worktree: Path, tag: str) -> None:
    """Content unique to ``tag``, so every round writes its objects afresh."""
    for i in range(0, FILES, FILES // MODIFIED):
        path = worktree / f"d{i % 100:02d}" / f"f{i:05d}.txt"
        path.write_text(path.read_text() + f"changed in {tag}\n")
    for i in range(UNTRACKED):
        folder = worktree / f"new{i % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"n{i:05d}.txt").write_text(f"new {i} in {tag}\n")


def timed(argv: list[str], cwd: Path) -> float:
    os.sync()  # the set-up's writes reach the disk first: neither side pays for the other's writeback
    begin = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - begin


def harn_round(repo: Path, n: int) -> float:
    run_id = f"bench-{n}"
    subprocess.run([*HARN, "start", run_id], cwd=repo, check=True, capture_output=True)
    worktree = Path(git(repo, "worktree", "list", "--porcelain").split("worktree ")[-1].splitlines()[0])
    make_dirty(worktree, run_id)
    elapsed = timed([*HARN, "reclaim", run_id], repo)
    assert not worktree.exists(), "reclaim did not release the workspace"
    return elapsed


def plain_round(repo: Path, root: Path, n: int) -> float:
    worktree = root / "plain" / str(n)
    branch = f"plain-ws-{n}"
    git(repo, "worktree", "add", "-q", "-b", branch, str(worktree))
    make_dirty(worktree, branch)
    steps = [
        (["git", "add", "-A"], worktree),
        (["git", "commit", "-q", "--no-verify", "-m", "salvage"], worktree),
        (["git", "branch", f"plain-salvage-{n}"], worktree),
        (["git", "reset", "-q", "--hard", "HEAD~1"], worktree),
        (["git", "clean", "-q", "-fd"], worktree),
        (["git", "worktree", "remove", str(worktree)], repo),
        (["git", "branch", "-q", "-D", branch], repo),
    ]
    return sum(timed(argv, cwd) for argv, cwd in steps)


def rounds_of(root: Path, rounds: int) -> tuple[list[float], list[float]]:
    repo = fixture(root)
    harn_times, plain_times = [], []
    for n in range(rounds):
        # Alternate which goes first, so neither always meets a warmer cache.
        if n % 2:
            harn_times.append(harn_round(repo, n))
            plain_times.append(plain_round(repo, root, n))
        else:
            plain_times.append(plain_round(repo, root, n))
            harn_times.append(harn_round(repo, n))
    return harn_times, plain_times


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    root = sandbox()
    try:
        harn_times, plain_times = rounds_of(root, rounds)
    finally:
        cleanup(root)
    report(f"reclaim: {FILES} files, {MODIFIED} modified, {UNTRACKED} untracked", harn_times,
           plain_times, "<= 1.1, goal <= 1.0")

if __name__ == "__main__":
    main()
