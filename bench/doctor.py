"""`git harn doctor --json` on a clone with 100,000 ended run records and 50
workspaces (25 of them preserved with uncommitted work), against the plain
way of seeing the same: `git for-each-ref refs/harnery/runs/`, `git worktree
list --porcelain`, `git status --porcelain` and `du -s` in each workspace.
Target: doctor under 2 s.

The ended records are written with `git fast-import` (one commit per record,
its tree holding `run.json` as store/runs.py writes it), then packed, as a
year of runs would be after `git gc`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HARN, cleanup, git, paired_samples, repo_with_files, report, run_quiet, sandbox  # noqa: E402

from git_harn.store.record import RELEASED, RunRecord  # noqa: E402

ENDED = 100_000
WORKSPACES = 50


def _ended_records(repo: Path) -> None:
    base = {"ref": "refs/heads/main", "oid": git(repo, "rev-parse", "HEAD").strip()}
    chunks = []
    for i in range(ENDED):
        run_id = f"e{i:06d}"
        body = RunRecord(runId=run_id, workspaceId=f"ws-{i:024x}", state=RELEASED, path=f"/nowhere/{run_id}",
                         branch=f"harnery/ws/{run_id}", base=base, host="bench", createdAt="2026-01-01T00:00:00Z",
                         updatedAt="2026-01-01T00:00:00Z", attempts=1, lastOutcome=RELEASED).to_json().encode()
        message = (f"released: bench\n\nHarnery-Run: {run_id}\nHarnery-Event: released\n"
                   f"Harnery-State: {RELEASED}\nHarnery-Host: bench\n").encode()
        chunks.append(b"commit refs/harnery/runs/%s\ncommitter git-harn <h@localhost> 1767225600 +0000\n"
                      b"data %d\n%s\nM 100644 inline run.json\ndata %d\n%s\n\n"
                      % (run_id.encode(), len(message), message, len(body), body))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(chunks), check=True)
    git(repo, "pack-refs", "--all")


def build(root: Path) -> Path:
    repo = repo_with_files(root / "repo", 500)
    _ended_records(repo)
    run_quiet([*HARN, "hooks", "install"], repo)
    for i in range(WORKSPACES):
        run_quiet([*HARN, "start", f"w{i:02d}"], repo)
    for i in range(0, WORKSPACES, 2):
        path = root / "data" / "git-harn" / "worktrees"
        folder = next(path.glob(f"*/w{i:02d}"))
        (folder / "wip.txt").write_text("unfinished\n" * 1000)
        subprocess.run([*HARN, "cleanup", f"w{i:02d}", "--yes"], cwd=repo, capture_output=True, check=False)
    return repo


def plain_way(repo: Path) -> None:
    git(repo, "for-each-ref", "--format=%(refname)", "refs/harnery/runs/")
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            folder = line[len("worktree "):]
            run_quiet(["git", "-C", folder, "status", "--porcelain"], repo)
            run_quiet(["du", "-s", folder], repo)


def doctor(repo: Path) -> None:
    done = subprocess.run([*HARN, "doctor", "--json"], cwd=repo, capture_output=True, check=False)
    assert done.returncode == 1, done.stderr  # the preserved workspaces are findings


def main() -> None:
    root = sandbox()
    try:
        repo = build(root)
        begin = time.perf_counter()
        doctor(repo)  # the first one reads every ended record once, and caches their tips
        first = time.perf_counter() - begin
        ours, theirs = paired_samples(lambda: doctor(repo), lambda: plain_way(repo), runs=5)
        report(f"doctor, {ENDED:,} ended records and {WORKSPACES} workspaces", ours, theirs, "doctor < 2 s")
        print(f"  doctor      {'under' if statistics.median(ours) < 2 else 'OVER'} 2 s; the first run, which "
              f"reads every ended record once: {first:.1f} s")
    finally:
        cleanup(root)


if __name__ == "__main__":
    main()
