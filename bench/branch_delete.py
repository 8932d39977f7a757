"""`git branch -D` of a kept `harnery/ws/<id>` branch whose run has ended,
with git-harn's hooks installed, against hooks that only exit in the same
slots (issue 45 item 15: 749 ms against 4 ms, four Python starts).

One repository of ended run records (written with `git fast-import`, as
bench/status_last.py does), `git harn hooks install`, the refs packed (so
git deletes the branch in two transactions: the hook runs four times).
Before each round the branch is made again on main, untimed; the two hook
folders take turns. Prints the median, min and max of each, the median of
the per-round differences and ratios with their min and max.
Target: at most 2 ms over hooks that only exit. A third set, hooks whose
reference-transaction starts one `git for-each-ref` of one ref in each
prepared and committed call (the least a hook can do to learn whether the
branch's run is live, which the guard and the reconcile must know), shows
the floor any such hook pays.

Run from a checkout: python bench/branch_delete.py [--records 10000] [--rounds 15]
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

BRANCH = "harnery/ws/r000000"  # the branch of the first, ended, run


def exit_only_hooks(folder: Path) -> Path:
    folder.mkdir()
    for name in ("reference-transaction", "post-checkout", "pre-auto-gc"):
        hook = folder / name
        hook.write_text("#!/bin/sh\nexit 0\n")
        hook.chmod(0o755)
    return folder


def one_git_hooks(folder: Path) -> Path:
    """The floor: in the same slots, one git process where git-harn's hook must ask git anything."""
    exit_only_hooks(folder)
    (folder / "reference-transaction").write_text(
        "#!/bin/sh\ncase $1 in prepared|committed) "
        "git for-each-ref refs/harnery/live/r000000 >/dev/null ;; esac\nexit 0\n")
    return folder


def timed_delete(repo: Path, hooks: Path) -> float:
    git(repo, "branch", BRANCH, "main")
    git(repo, "pack-refs", "--all")
    began = time.perf_counter()
    subprocess.run(["git", "-c", f"core.hooksPath={hooks}", "branch", "-q", "-D", BRANCH], cwd=repo, check=True)
    return time.perf_counter() - began


def spread(times: list[float]) -> str:
    return f"{statistics.median(times) * 1000:.1f} ms (min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    root = sandbox()
    try:
        repo = build(root / "repo", args.records)
        subprocess.run([*HARN, "hooks", "install"], cwd=repo, check=True, capture_output=True)
        ours, empty = repo / ".git" / "hooks", exit_only_hooks(root / "exit-only")
        least = one_git_hooks(root / "one-git")
        timed_delete(repo, ours), timed_delete(repo, empty), timed_delete(repo, least)  # warm-up
        mine, theirs, floor = [], [], []
        for _ in range(args.rounds):
            mine.append(timed_delete(repo, ours))
            theirs.append(timed_delete(repo, empty))
            floor.append(timed_delete(repo, least))
        added = [(a - b) * 1000 for a, b in zip(mine, theirs, strict=True)]
        least_added = [(a - b) * 1000 for a, b in zip(floor, theirs, strict=True)]
        ratios = [a / b for a, b in zip(mine, theirs, strict=True)]
        print(f"git branch -D {BRANCH} (ended run, {args.records:,} records), {args.rounds} rounds each:")
        print(f"  git-harn hooks        {spread(mine)}")
        print(f"  hooks that only exit  {spread(theirs)}")
        print(f"  one git a call        {spread(floor)}")
        print(f"  added per round       median {statistics.median(added):.1f} ms "
              f"(min {min(added):.1f}, max {max(added):.1f}; target <= 2 ms)")
        print(f"  floor per round       median {statistics.median(least_added):.1f} ms "
              f"(min {min(least_added):.1f}, max {max(least_added):.1f}: one git process in each working call)")
        print(f"  ratio per round       median {statistics.median(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    finally:
        cleanup(root)


if __name__ == "__main__":
    main()
