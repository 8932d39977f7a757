"""What `proc.run_bounded` adds to each child it runs, against
`subprocess.run(..., capture_output=True)`, which waits with a blocking
`communicate` and no time limit.

Children of three lengths (`true`, and `sleep` of 20 and 70 ms: a wait that
polls with a growing sleep wakes late by up to its last sleep), interleaved,
so load on the machine hits both alike. Prints the median, min and max per
child and the median added by run_bounded. Target: at most 2 ms added.

Run from a checkout: python bench/children.py [--runs N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import paired_samples, report  # noqa: E402

from git_harn.proc import run_bounded  # noqa: E402

CHILDREN = (["true"], ["sleep", "0.02"], ["sleep", "0.07"])


def bounded(argv: list[str]) -> None:
    done = run_bounded(argv, Path.cwd(), timeout=60)
    assert done.exit_code == 0, done


def plain(argv: list[str]) -> None:
    subprocess.run(argv, capture_output=True, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    runs = parser.parse_args().runs
    for argv in CHILDREN:
        ours, theirs = paired_samples(lambda a=argv: bounded(a), lambda a=argv: plain(a), runs=runs)
        report(f"run_bounded({' '.join(argv)!r})", ours, theirs, "<= 2 ms added")
        ours.sort()
        theirs.sort()
        added = (ours[len(ours) // 2] - theirs[len(theirs) // 2]) * 1000
        print(f"  added       {added:.1f} ms per child")


if __name__ == "__main__":
    main()
