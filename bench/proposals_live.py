"""`git harn workflow list --json` in a clone that has made 2,000 proposals,
all ended (merged), against the same listing in a clone that has made none:
the live listing reads no ended proposal (the live index,
store/proposals.py), so its cost must not grow with them. Target ratio
<= 1.1. The chains' refs are packed, as a clone's stand after its first gc."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HARN, cleanup, git, paired_samples, report, run_quiet, sandbox  # noqa: E402

ENDED = 2000


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", "start")
    return path


def _with_ended(path: Path) -> Path:
    """``ENDED`` merged proposals, one chain each (one git fast-import), and
    the index marker a clone that writes proposals has."""
    lines = []
    for n in range(ENDED):
        key = f"{n + 1}.1"
        raw = json.dumps({"key": key, "taskId": key, "state": "merged", "remote": "origin", "base": "main",
                          "landingBranch": f"harnery/land/{key}", "head": "0" * 40}).encode()
        lines += [f"commit refs/harnery/proposals/{key}".encode(), b"committer b <b@b> 0 +0000", b"data 7",
                  b"merged\n", b"M 100644 inline proposal.json", b"data %d" % len(raw), raw, b""]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=b"\n".join(lines) + b"\n", check=True)
    empty = git(path, "commit-tree", "-m", "live index", git(path, "hash-object", "-t", "tree", "/dev/null").strip())
    git(path, "update-ref", "refs/harnery/proposals-live-index/v1", empty.strip())
    git(path, "pack-refs", "--all")  # as a clone's refs stand after its first gc
    return path


def main() -> None:
    root = sandbox()
    try:
        many = _with_ended(_repo(root / "many"))
        none = _repo(root / "none")
        ours, theirs = paired_samples(lambda: run_quiet([*HARN, "workflow", "list", "--json"], many),
                                      lambda: run_quiet([*HARN, "workflow", "list", "--json"], none))
        report(f"workflow list, {ENDED:,} ended proposals against none", ours, theirs, "<= 1.1")
        every, _ = paired_samples(lambda: run_quiet([*HARN, "workflow", "list", "--all", "--json"], many),
                                  lambda: None, runs=3)
        print(f"  for scale: workflow list --all (reads all {ENDED:,}) {sorted(every)[1] * 1000:.0f} ms")
    finally:
        cleanup(root)


if __name__ == "__main__":
    main()
