"""`git harn sync` over 5,000 run records.

1. 50 records changed (25 by another clone, already on the remote; 25 here,
   not pushed yet) against the plain way of moving the same refs: `git fetch`
   of refs/harnery/* into a tracking namespace plus `git push` of
   refs/harnery/* (which cannot merge, and skips what it cannot
   fast-forward). Target ratio <= 2.
2. A sync with nothing changed over 5,000 records against one over 500.
   Target ratio <= 5.

Each pair of runs is interleaved so load on the machine hits both alike; the
ratios are given as the median of the per-pair ratios, with min and max.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HARN, cleanup, git, run_quiet, sandbox  # noqa: E402

from git_harn.git import open_repo  # noqa: E402
from git_harn.store import runs as store  # noqa: E402
from git_harn.store.ids import new_workspace_id  # noqa: E402
from git_harn.store.record import ACTIVE, RunRecord  # noqa: E402

RECORDS = 5000
SMALL = 500
CHANGED_EACH_SIDE = 25
RUNS = 7


def fill(repo_path: Path, count: int) -> None:
    repo = open_repo(repo_path)
    base = {"ref": "refs/heads/main", "oid": str(repo.resolve_commit("HEAD"))}
    for i in range(count):
        record = RunRecord(
            runId=f"r{i:05d}", workspaceId=new_workspace_id(), state=ACTIVE,
            path=f"/nowhere/r{i:05d}", branch=f"harnery/ws/r{i:05d}", base=base, host="bench",
            createdAt="2026-01-01T00:00:00Z", updatedAt="", attempts=0)
        store.write(repo, record, "start", "bench", None)


def change(repo_path: Path, ids: list[int], tag: str) -> None:
    repo = open_repo(repo_path)
    for i in ids:
        def mutate(current: RunRecord | None) -> tuple[RunRecord, str, str]:
            assert current is not None
            current.attempts += 1
            current.reason = tag
            return current, "bench", tag
        store.update(repo, f"r{i:05d}", mutate)


def world(root: Path, count: int) -> tuple[Path, Path]:
    """A bare remote holding ``count`` records; the syncing clone and another writer."""
    seed = root / "seed"
    seed.mkdir(parents=True)
    git(seed, "init", "-q", "-b", "main")
    git(seed, "commit", "-q", "--allow-empty", "-m", "seed")
    fill(seed, count)
    remote = root / "remote.git"
    git(root, "clone", "-q", "--bare", str(seed), str(remote))
    # No auto gc in the remote: the push of 5,000 records would start one in
    # the background, and a local clone copying loose objects while it packs
    # them fails ("failed to copy file").
    git(remote, "config", "gc.auto", "0")
    git(seed, "push", "-q", str(remote), "refs/harnery/*:refs/harnery/*")
    here, other = root / "here", root / "other"
    for clone in (here, other):
        git(root, "clone", "-q", str(remote), str(clone))
        run_quiet([*HARN, "sync"], clone)
    return here, other


def moved(root: Path, target: Path) -> tuple[Path, Path]:
    """A copy of a world, its clones pointed at the copy's remote."""
    shutil.copytree(root, target, symlinks=True)
    for name in ("here", "other"):
        git(target / name, "remote", "set-url", "origin", str(target / "remote.git"))
    return target / "here", target / "other"


def prepare(here: Path, other: Path, round_number: int) -> None:
    """25 records changed by the other clone and pushed; 25 others changed here."""
    half = RECORDS // 2
    theirs = [(round_number * CHANGED_EACH_SIDE + k) % half for k in range(CHANGED_EACH_SIDE)]
    mine = [half + i for i in theirs]
    change(other, theirs, f"other {round_number}")
    git(other, "push", "-q", "origin", *(f"refs/harnery/runs/r{i:05d}" for i in theirs))
    change(here, mine, f"here {round_number}")


def plain(clone: Path) -> None:
    subprocess.run(["git", "fetch", "-q", "origin", "+refs/harnery/*:refs/harnery-remotes/origin/*"],
                   cwd=clone, check=True, capture_output=True)
    # Refs this clone is behind on are refused (it has no merge); the rest go.
    subprocess.run(["git", "push", "-q", "origin", "refs/harnery/*:refs/harnery/*"], cwd=clone,
                   check=False, capture_output=True)


def timed(action: Callable[[], object]) -> float:
    begin = time.perf_counter()
    action()
    return time.perf_counter() - begin


def line(name: str, ours: list[float], theirs: list[float], what: tuple[str, str], target: str) -> None:
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    print(f"{name}: {what[0]} {statistics.median(ours) * 1000:.0f} ms, {what[1]} "
          f"{statistics.median(theirs) * 1000:.0f} ms; ratio median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}; target {target})")


def main() -> None:
    root = sandbox()
    try:
        big = root / "big"
        here, other = world(big, RECORDS)
        plain_here, plain_other = moved(big, root / "big-plain")
        sync_times, plain_times = [], []
        for number in range(RUNS + 1):
            prepare(here, other, number)
            ours = timed(lambda: run_quiet([*HARN, "sync"], here))
            prepare(plain_here, plain_other, number)
            theirs = timed(lambda: plain(plain_here))
            if number:  # the first pair warms the caches
                sync_times.append(ours)
                plain_times.append(theirs)
        line("sync, 50 of 5,000 records changed", sync_times, plain_times,
             ("git harn sync", "git fetch + git push"), "<= 2")
        small_here, _ = world(root / "small", SMALL)
        for clone in (here, small_here):
            run_quiet([*HARN, "sync"], clone)
        large_times, small_times = [], []
        for number in range(RUNS + 1):
            large = timed(lambda: run_quiet([*HARN, "sync"], here))
            small = timed(lambda: run_quiet([*HARN, "sync"], small_here))
            if number:
                large_times.append(large)
                small_times.append(small)
        line("sync, nothing changed", large_times, small_times,
             ("5,000 records", "500 records"), "<= 5")
    finally:
        cleanup(root)


if __name__ == "__main__":
    main()
