"""Start-up cost: `git harn status` with one workspace against
`python -c "import pygit2, click"`. Target ratio ≤ 1.3 (issue 25; it was ≤ 1.5)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HARN, cleanup, paired_samples, repo_with_files, report, run_quiet, sandbox  # noqa: E402


def main() -> None:
    root = sandbox()
    try:
        repo = repo_with_files(root / "repo", 10)
        run_quiet([*HARN, "start", "one"], repo)
        ours, theirs = paired_samples(
            lambda: run_quiet([*HARN, "status"], repo),
            lambda: run_quiet([sys.executable, "-c", "import pygit2, click"], repo), runs=21)
        report("startup, status with one workspace", ours, theirs, "<= 1.3")
    finally:
        cleanup(root)


if __name__ == "__main__":
    main()
