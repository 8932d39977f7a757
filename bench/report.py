"""Bench: `git harn workflow report` of a 50-task run against the plain-git
way of getting the same facts out (`git show <record>:workflow.json` into a
file), and the page itself: how long drawing it takes in one process and how
large it is (issue 27: under a second, under 1 MB).

The record is the tests' 50-task run (tests/kit/report_records.py: four lanes, every
task with a crash retried in place, two review rounds with findings, a wait,
gates and usage), stored as a workflow record with plain git.
Run: python bench/report.py [rounds]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from _common import HARN, cleanup, git, paired_samples, report, run_quiet, sandbox  # noqa: E402

from tests.kit.report_records import WORKFLOW_ID, run_doc, store_record  # noqa: E402

TASKS = 50


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    root = sandbox()
    try:
        repo = root / "repo"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        doc = run_doc(TASKS)
        store_record(repo, doc)
        page, plain = root / "report.html", root / "workflow.json"
        ref = f"refs/harnery/workflows/{WORKFLOW_ID}"

        def ours() -> None:
            run_quiet([*HARN, "workflow", "report", WORKFLOW_ID, "--output", str(page)], repo)

        def theirs() -> None:
            plain.write_text(git(repo, "show", f"{ref}:workflow.json"))

        mine, other = paired_samples(ours, theirs, rounds)
        report(f"workflow report, {TASKS} tasks, vs git show of the record", mine, other, "none")
        drawing = draw(doc, rounds)
        print(f"  drawing the page in one process: median {drawing[0] * 1000:.0f} ms "
              f"(min {drawing[1] * 1000:.0f}, max {drawing[2] * 1000:.0f}; target < 1000 ms)")
        print(f"  the page: {page.stat().st_size:,} bytes (target < 1,000,000); "
              f"the record: {plain.stat().st_size:,} bytes")
    finally:
        cleanup(root)


def draw(doc: dict[str, object], rounds: int) -> tuple[float, float, float]:
    """Median, min and max seconds of reading the chart and rendering the page."""
    from git_harn.workflow.page import render
    from git_harn.workflow.page.chart import chart

    times = []
    for _ in range(rounds):
        begin = time.perf_counter()
        render.page(doc, chart(doc), {}, "bench")
        times.append(time.perf_counter() - begin)
    return statistics.median(times), min(times), max(times)


if __name__ == "__main__":
    main()
