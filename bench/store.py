"""`git harn status --all --json` over 5,000 run records and over 500; the time
should grow no worse than linearly (ratio 5,000/500 ≤ 12)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HARN, cleanup, median_seconds, repo_with_files, run_quiet, sandbox  # noqa: E402

from git_harn.git import open_repo  # noqa: E402
from git_harn.store import runs as store  # noqa: E402
from git_harn.store.ids import new_workspace_id  # noqa: E402
from git_harn.store.record import RELEASED, RunRecord  # noqa: E402


def fill(repo_path: Path, count: int) -> None:
    repo = open_repo(repo_path)
    base = {"ref": "refs/heads/main", "oid": str(repo.resolve_commit("HEAD"))}
    for i in range(count):
        record = RunRecord(
            runId=f"r{i:05d}", workspaceId=new_workspace_id(), state=RELEASED,
            path=f"/nowhere/r{i:05d}", branch=f"harnery/ws/r{i:05d}", base=base, host="bench",
            createdAt="2026-01-01T00:00:00Z", updatedAt="", attempts=1, lastOutcome=RELEASED)
        store.write(repo, record, "released", "bench", None)


def timed(root: Path, count: int) -> float:
    repo = repo_with_files(root / f"repo{count}", 10)
    fill(repo, count)
    return median_seconds(lambda: run_quiet([*HARN, "status", "--all", "--json"], repo))


def main() -> None:
    root = sandbox()
    try:
        small, large = timed(root, 500), timed(root, 5000)
        print(f"store: status --all --json over 500 records {small * 1000:.1f} ms, "
              f"over 5,000 {large * 1000:.1f} ms, ratio {large / small:.2f} (target <= 12)")
    finally:
        cleanup(root)


if __name__ == "__main__":
    main()
