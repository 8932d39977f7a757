"""`git harn status --all --last 50` over many ended run records not yet
archived, against the same command over 100 (issue 45 item 15).

The records are written with `git fast-import` (one released run a
commit, dated a second apart, as the store writes them: run.json and the
trailers), so 100,000 of them take seconds, not the hour the store's own
writer takes; a first `git harn status` builds the live index. Then the
two repositories are timed in interleaved rounds, and the ratio of each
round printed as its median, min and max. Target: ratio <= 1.2.

Run from a checkout: python bench/status_last.py [--records 100000] [--rounds 7]
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

from _common import HARN, cleanup, git, paired_samples, report, sandbox  # noqa: E402

BASE = 100
START = 1_760_000_000  # the first record's time; each next one a second later


def fast_import_stream(count: int, base_oid: str) -> bytes:
    from git_harn.clock import iso_of
    from git_harn.store import chain
    from git_harn.store.record import RELEASED, RunRecord
    from git_harn.store.runs import RUNS

    out = []
    for i in range(count):
        run_id, when = f"r{i:06d}", START + i
        record = RunRecord(
            runId=run_id, workspaceId=f"ws-{i:06d}", state=RELEASED, path=f"/gone/{run_id}",
            branch=f"harnery/ws/{run_id}", base={"ref": "refs/heads/main", "oid": base_oid}, host="bench",
            createdAt=iso_of(when), updatedAt=iso_of(when), attempts=1, lastOutcome=RELEASED,
            reason="worktree removed; branch deleted")
        content = record.to_json().encode()
        text = chain.message(RUNS, run_id, RELEASED, "bench",
                             [("Harnery-State", RELEASED), ("Harnery-Host", "bench")]).encode()
        out.append(b"commit %s\ncommitter git-harn <git-harn@localhost> %d +0000\ndata %d\n%s\n"
                   b"M 100644 inline %s\ndata %d\n%s\n\n"
                   % (RUNS.ref(run_id).encode(), when, len(text), text, RUNS.file.encode(), len(content), content))
    return b"".join(out)


def build(path: Path, count: int) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "fixture")
    head = git(path, "rev-parse", "HEAD").strip()
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=fast_import_stream(count, head), check=True)
    git(path, "pack-refs", "--all")
    subprocess.run([*HARN, "status"], cwd=path, check=True, capture_output=True)  # builds the live index once
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--last", type=int, default=50)
    args = parser.parse_args()
    root = sandbox()
    try:
        began = time.perf_counter()
        big, small = build(root / "big", args.records), build(root / "small", BASE)
        print(f"built {args.records:,} and {BASE} records in {time.perf_counter() - began:.0f} s")
        argv = [*HARN, "status", "--all", "--last", str(args.last)]

        def listed(repo: Path) -> int:
            done = subprocess.run(argv, cwd=repo, check=True, capture_output=True, text=True)
            return len(done.stdout.splitlines())

        assert listed(big) == listed(small) == args.last + 1  # the header and N rows
        ours, theirs = paired_samples(lambda: listed(big), lambda: listed(small), args.rounds)
        report(f"status --all --last {args.last}, {args.records:,} records against {BASE}", ours, theirs,
               "ratio <= 1.2")
        ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
        print(f"  per round   ratio median {statistics.median(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    finally:
        cleanup(root)


if __name__ == "__main__":
    main()
