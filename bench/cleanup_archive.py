"""`git harn cleanup --yes` past the archive threshold, with many ended
records due (older than harn.archiveAfter) and not yet archived, against
the plain-git way of removing a workspace (`git worktree remove` + `git
branch -D`), issue 45 item 15: one cleanup among five took 255 s at
100,000 records, folding them all at once.

The records are written with `git fast-import` (bench/status_last.py),
dated 2025, so all are due. Each round starts a run (untimed), then times
its cleanup, which folds one bounded batch; and a plain worktree made the
same way, removed with git. Prints the median, min and max of each, the
per-round ratio's median, min and max, and the records archived in all.
Target: every cleanup well under a second (a batch, not the backlog).

Run from a checkout: python bench/cleanup_archive.py [--records 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import HARN, cleanup, git, sandbox  # noqa: E402
from status_last import build  # noqa: E402

RUNS = "refs/harnery/runs/"


def refs_left(repo: Path) -> int:
    return len(git(repo, "for-each-ref", "--format=%(refname)", RUNS).split())


def spread(times: list[float]) -> str:
    return f"{statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = sandbox()
    try:
        repo = build(root / "repo", args.records)
        git(repo, "config", "harn.worktreeRoot", str(root / "worktrees"))
        git(repo, "gc", "-q")
        before = refs_left(repo)
        ours, theirs = [], []
        for n in range(args.rounds):
            subprocess.run([*HARN, "start", f"bench-{n}"], cwd=repo, check=True, capture_output=True)
            began = time.perf_counter()
            subprocess.run([*HARN, "cleanup", f"bench-{n}", "--yes"], cwd=repo, check=True, capture_output=True)
            ours.append(time.perf_counter() - began)
            plain = root / f"plain-{n}"
            git(repo, "worktree", "add", "-q", "-b", f"plain-{n}", str(plain))
            began = time.perf_counter()
            git(repo, "worktree", "remove", str(plain))
            git(repo, "branch", "-q", "-D", f"plain-{n}")
            theirs.append(time.perf_counter() - began)
        ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
        print(f"cleanup --yes with {args.records:,} ended records due, {args.rounds} rounds:")
        print(f"  git harn cleanup         {spread(ours)}")
        print(f"  worktree remove + branch -D  {spread(theirs)}")
        print(f"  ratio per round          median {statistics.median(ratios):.1f} "
              f"(min {min(ratios):.1f}, max {max(ratios):.1f})")
        print(f"  record refs archived     {before - refs_left(repo) + args.rounds:,} "
              f"of {before:,} (the rest on later cleanups, or by git harn gc)")
    finally:
        cleanup(root)


if __name__ == "__main__":
    main()
