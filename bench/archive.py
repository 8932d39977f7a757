"""The archive at scale: `git harn gc --older-than 0` of N ended records.

For each size: N released single-event run records written through the
store (as bench/scale.py builds them), the repository gc'd; then `git harn
gc --older-than 0` (timed once), the refs left under refs/harnery counted,
`git gc --prune=now` run and the packed bytes per archived record taken
(size-pack after, less the same repository built with no record, over N);
and `git harn status --all --last 50` timed in interleaved rounds against
the same command at the first size, printing the median ratio with min and
max.

Run from a checkout: python bench/archive.py [--sizes 100,100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale import fill  # noqa: E402 (the one way the scale bench writes records)

HARN = [sys.executable, "-m", "git_harn"]


def run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def size_pack(repo: Path) -> int:
    """Bytes of the repository's packs and loose objects (git count-objects -v)."""
    fields = dict(line.split(": ") for line in run(["git", "count-objects", "-v"], repo).splitlines())
    return (int(fields["size-pack"]) + int(fields["size"])) * 1024


def build(root: Path, count: int) -> Path:
    repo = root / f"records-{count}"
    repo.mkdir(parents=True)
    run(["git", "init", "-q", "-b", "main"], repo)
    (repo / "f.txt").write_text("file\n")
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "fixture"], repo)
    run(["git", "config", "harn.worktreeRoot", str(root / "worktrees")], repo)
    began = time.perf_counter()
    fill(repo, count)
    run(["git", "gc", "-q"], repo)
    print(f"  {count:,} records written in {time.perf_counter() - began:.0f} s", flush=True)
    return repo


def prune(repo: Path) -> None:
    run(["git", "reflog", "expire", "--expire=now", "--all"], repo)
    run(["git", "gc", "-q", "--prune=now"], repo)


def timed(repo: Path, *args: str) -> float:
    began = time.perf_counter()
    run([*HARN, *args], repo)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,100000")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    root = Path(tempfile.mkdtemp(prefix="git-harn-bench-archive-"))
    try:
        empty = build(root, 0)
        prune(empty)
        baseline = size_pack(empty)
        repos = {}
        for count in sizes:
            repo = build(root, count)
            took = timed(repo, "gc", "--older-than", "0")
            refs = len(run(["git", "for-each-ref", "--format=%(refname)", "refs/harnery/"], repo).split())
            prune(repo)
            per = (size_pack(repo) - baseline) / max(count, 1)
            print(f"{count:>7,} records: gc {took:.1f} s; refs under refs/harnery after: {refs}; "
                  f"{per:.0f} bytes per archived record after git gc --prune=now", flush=True)
            repos[count] = repo
        times: dict[int, list[float]] = {count: [] for count in sizes}
        for number in range(options.rounds + 1):
            for count in sizes[number % len(sizes):] + sizes[:number % len(sizes)]:
                took = timed(repos[count], "status", "--all", "--last", "50")
                if number:
                    times[count].append(took)
        base = times[sizes[0]]
        for count in sizes:
            ratios = [t / b for t, b in zip(times[count], base, strict=True)]
            print(f"status --all --last 50 at {count:>7,}: median {statistics.median(times[count]) * 1000:.0f} ms "
                  f"[{min(times[count]) * 1000:.0f}-{max(times[count]) * 1000:.0f}], ratio "
                  f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
