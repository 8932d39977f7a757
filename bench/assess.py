"""Bench: `git harn assess` against the plain-git way of gathering the same evidence.

Builds a repository with a task branch of many commits and files and a dirty
worktree, then times `git harn assess --json` against the git commands an
operator would run by hand (rev-list counts, merge-base, diff --name-only,
status, log for trailers, show of the ExecPlan, the notes ref). Prints the
medians and the ratio. Run: python bench/assess.py [rounds]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def build(root: Path) -> tuple[Path, Path]:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Bench")
    git(repo, "config", "user.email", "bench@example.com")
    for i in range(2000):
        target = repo / f"src/pkg{i % 40}/mod{i}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"x = {i}\n")
    (repo / "docs/execplans").mkdir(parents=True)
    (repo / "docs/roadmap.md").write_text("- [ ] 1.2 Task\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    worktree = root / "wt"
    git(repo, "worktree", "add", "-q", "-b", "roadmap-1.2", str(worktree), "main")
    for c in range(50):
        for i in range(c * 4, c * 4 + 4):
            (worktree / f"src/pkg{i % 40}/mod{i}.py").write_text(f"x = {i} + 1\n")
        if c == 0:
            (worktree / "docs/execplans").mkdir(parents=True, exist_ok=True)
            (worktree / "docs/execplans/1.2.md").write_text("Status: IN PROGRESS\n")
        git(worktree, "add", "-A")
        git(worktree, "commit", "-q", "-m", f"step {c}\n\nHarnery-Task: 1.2")
    (worktree / "src/pkg0/mod0.py").write_text("dirty\n")
    return repo, worktree


def plain_git(repo: Path, worktree: Path) -> None:
    git(repo, "rev-parse", "roadmap-1.2", "main")
    git(repo, "merge-base", "roadmap-1.2", "main")
    git(repo, "rev-list", "--left-right", "--count", "roadmap-1.2...main")
    git(repo, "diff", "--name-only", "main...roadmap-1.2")
    git(repo, "worktree", "list", "--porcelain")
    git(worktree, "status", "--porcelain")
    git(repo, "log", "--format=%(trailers:key=Harnery-Task)", "main..roadmap-1.2")
    git(repo, "show", "roadmap-1.2:docs/execplans/1.2.md")
    subprocess.run(["git", "show", "refs/harnery/notes"], cwd=repo, capture_output=True, check=False)


def harn(repo: Path) -> None:
    subprocess.run([sys.executable, "-m", "git_harn", "assess", "roadmap-1.2", "--json"], cwd=repo,
                   check=True, capture_output=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                         "HOME": str(repo.parent)})


def median_seconds(action: object, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory(prefix="git-harn-bench-") as tmp:
        repo, worktree = build(Path(tmp))
        by_hand = median_seconds(lambda: plain_git(repo, worktree), rounds)
        ours = median_seconds(lambda: harn(repo), rounds)
    print(f"assess (2000 files, 50 commits, 200 changed paths, dirty worktree), median of {rounds}:")
    print(f"  plain git (9 commands): {by_hand * 1000:7.1f} ms")
    print(f"  git harn assess --json: {ours * 1000:7.1f} ms")
    print(f"  ratio: {ours / by_hand:.2f}x")


if __name__ == "__main__":
    main()
