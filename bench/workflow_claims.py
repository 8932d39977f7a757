"""Bench: two machines on one roadmap with task claims, against one machine
running two tasks at once.

20 tasks whose stage agents each sleep 0.5 s (then run the shipped scripted
agents: plan commits the ExecPlan, implement commits the work, two
reviewers approve), builtin integration. Side one: two clones of one bare
remote, each running ``git harn workflow run --claims`` (one task at a
time), both started at once; wall time until both have finished, and the
20 tasks must be done between them, each exactly once. Side two: one clone
running ``git harn workflow run --parallel 2`` without claims. Rounds
interleave the sides, each on fresh fixtures; the figures are medians with
the min and max of the rounds. Target: two runners / one runner <= 1.2.

Run: python bench/workflow_claims.py [rounds]   (default 3)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import HARN, cleanup, report, sandbox
from workflow import TASKS, config_text, git, sleepy_agent

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3


def fixture(tmp: Path, name: str, clones: int) -> list[Path]:
    """A bare remote with the roadmap and a claims-ready configuration, and ``clones`` clones."""
    wrapper, log = sleepy_agent(tmp), tmp / f"{name}-agents.log"
    remote, seed = tmp / f"{name}.git", tmp / f"{name}-seed"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
    (seed / "docs").mkdir(parents=True)
    (seed / ".harn").mkdir()
    lines = [f"- [ ] 1.{i} Task number {i}\n" for i in range(1, TASKS + 1)]
    (seed / "docs" / "roadmap.md").write_text("# Roadmap\n\n" + "".join(lines))
    (seed / "README.md").write_text("bench\n")
    (seed / ".harn" / "workflow.toml").write_text(config_text((wrapper, log)))
    git(tmp, "init", "-q", "-b", "main", str(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", str(remote), "main")
    works = []
    for n in range(clones):
        work = tmp / f"{name}-clone{n}"
        git(tmp, "clone", "-q", str(remote), str(work))
        git(work, "config", "harn.worktreeRoot", str(tmp / f"{name}-worktrees{n}"))
        git(work, "config", "harn.host", f"bench-host-{n}")
        works.append(work)
    return works


def runs_at_once(works: list[Path], *flags: str) -> tuple[float, list[dict[str, Any]]]:
    begin = time.perf_counter()
    procs = [subprocess.Popen([*HARN, "workflow", "run", "--json", *flags], cwd=work, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for work in works]
    outs = [proc.communicate() for proc in procs]
    seconds = time.perf_counter() - begin
    docs = []
    for proc, (out, err) in zip(procs, outs, strict=True):
        if proc.returncode != 0:
            raise SystemExit(f"git harn workflow run failed ({proc.returncode}): {err.strip()[-300:]}")
        docs.append(json.loads(out))
    return seconds, docs


def landed_once(docs: list[dict[str, Any]]) -> None:
    done = [t["taskId"] for doc in docs for t in doc["tasks"] if t["status"] == "done"]
    if sorted(done) != sorted(f"1.{i}" for i in range(1, TASKS + 1)):
        raise SystemExit(f"not every task landed exactly once: {sorted(done)}")


def two_runners(tmp: Path, name: str) -> float:
    seconds, docs = runs_at_once(fixture(tmp, name, 2), "--claims")
    landed_once(docs)
    return seconds


def one_runner(tmp: Path, name: str) -> float:
    seconds, docs = runs_at_once(fixture(tmp, name, 1), "--parallel", "2")
    landed_once(docs)
    return seconds


def main() -> None:
    tmp = sandbox()
    try:
        warm = fixture(tmp, "warm", 1)[0]
        subprocess.run([*HARN, "workflow", "run", "--max-tasks", "1", "--claims"], cwd=warm, check=True,
                       capture_output=True)  # compile bytecode outside the timing
        ours: list[float] = []
        theirs: list[float] = []
        for n in range(ROUNDS):
            ours.append(two_runners(tmp, f"two{n}"))
            theirs.append(one_runner(tmp, f"one{n}"))
            print(f"round {n + 1}: two runners with claims {ours[-1]:.2f} s, one runner --parallel 2 "
                  f"{theirs[-1]:.2f} s", flush=True)
    finally:
        cleanup(tmp)
    report(f"{TASKS} tasks, agents sleeping 0.5 s: two runners on two clones with claims (git-harn) "
           "against one runner --parallel 2 (plain way)", ours, theirs, "<= 1.2")


if __name__ == "__main__":
    main()
