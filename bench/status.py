"""`git harn status --json` over 100 workspaces of a 2,000-file repository with
5 dirty files each, against the shell way: `git worktree list --porcelain`
then `git -C <worktree> status --porcelain` for each. Target ratio ≤ 1.0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HARN, cleanup, git, paired_samples, repo_with_files, report, run_quiet, sandbox  # noqa: E402

WORKSPACES = 100


def build(root: Path) -> Path:
    repo = repo_with_files(root / "repo", 2000)
    for i in range(WORKSPACES):
        run_quiet([*HARN, "start", f"w{i:03d}"], repo)
    document = json.loads(subprocess.run([*HARN, "status", "--json"], cwd=repo, check=True,
                                         capture_output=True, text=True).stdout)
    for workspace in document["workspaces"]:
        path = Path(workspace["path"])
        for j in range(3):
            (path / "d00" / f"f{j:05d}.txt").write_text("changed\n")
        (path / "new1.txt").write_text("new\n")
        (path / "new2.txt").write_text("new\n")
    return repo


def shell_way(repo: Path) -> None:
    listing = git(repo, "worktree", "list", "--porcelain")
    for line in listing.splitlines():
        if line.startswith("worktree "):
            run_quiet(["git", "-C", line[len("worktree "):], "status", "--porcelain"], repo)


def main() -> None:
    root = sandbox()
    try:
        repo = build(root)
        ours, theirs = paired_samples(lambda: run_quiet([*HARN, "status", "--json"], repo),
                                      lambda: shell_way(repo))
        report("status, 100 workspaces x 2,000 files", ours, theirs, "<= 1.0, goal <= 0.5")
    finally:
        cleanup(root)


if __name__ == "__main__":
    main()
