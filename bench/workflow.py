"""Bench: ``git harn workflow run`` over a 20-task roadmap, two ways.

1. Serial, agents that each make one small commit (the scripted stage agents
   shipped in ``git_harn/demo/agents/``: plan commits the ExecPlan, implement
   commits the work, two reviewers approve): ``git harn workflow run``
   against a plain Python script (no shell) doing the same git steps one task
   after another: fetch, ``worktree add``, the same agent commands (the two
   reviewers at once, as the workflow runs them), the gate, rebase, squash,
   tick the roadmap, push, ``worktree remove``. Target ratio <= 1.3, and the cost
   per task at 50 tasks within 10 % of the cost at 5.
2. The same 20 tasks with agents that each sleep 0.5 s first, under
   ``--parallel 4``: wall time against the ideal, the agents' time / 4 plus
   the serial integrations. The agents' time is measured by the agents
   themselves, per task plan + implement + the longer of the two concurrent
   reviews; the serial integrations are the plain script's integration steps
   (fetch, rebase, squash, tick, push), per task, from the serial rounds.
   Target <= 1.2.

Rounds interleave the sides (serial git-harn, serial plain, parallel
git-harn), each on fresh fixtures; the figures are medians with min and max.

Run: python bench/workflow.py [rounds] [--tasks N] [--no-parallel]
(default 3 rounds of 20 tasks; --tasks 5 and --tasks 50 show whether the
cost per task grows with the run)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import HARN, cleanup, sandbox

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "git_harn" / "demo" / "agents"
_ARGS = argparse.ArgumentParser(description="git harn workflow run against a plain script")
_ARGS.add_argument("rounds", nargs="?", type=int, default=3, help="interleaved rounds (default 3)")
_ARGS.add_argument("--tasks", type=int, default=20, help="tasks in the roadmap (default 20)")
_ARGS.add_argument("--no-parallel", action="store_true", help="only the serial comparison")
_OPTIONS = _ARGS.parse_args()
TASKS = _OPTIONS.tasks
PARALLEL = 4
SLEEP = 0.5
ROUNDS = _OPTIONS.rounds
GATE = ["true"]

def sleepy_agent(tmp: Path) -> Path:
    """A wrapper that sleeps, runs a shipped agent in-process, and logs how long it took."""
    path = tmp / "sleepy.py"
    path.write_text(
        "import json, os, runpy, sys, time\n"
        "start = time.time()\n"
        "log, pause, agent = sys.argv[1], float(sys.argv[2]), sys.argv[3]\n"
        "time.sleep(pause)\n"
        "sys.argv = [agent]\n"
        "code = 0\n"
        "try:\n"
        "    runpy.run_path(agent, run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    code = exc.code or 0\n"
        "with open(log, 'a') as f:\n"
        "    f.write(json.dumps({'task': os.environ['HARN_TASK_ID'], 'stage': os.environ['HARN_STAGE'],\n"
        "                        'reviewer': os.environ.get('HARN_REVIEWER'), 'start': start,\n"
        "                        'end': time.time()}) + '\\n')\n"
        "sys.exit(code)\n")
    return path


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def agent_argv(stage: str, sleepy: tuple[Path, Path] | None) -> list[str]:
    script = str(AGENTS / f"{stage}.py")
    if sleepy is None:
        return [sys.executable, script]
    wrapper, log = sleepy
    return [sys.executable, str(wrapper), str(log), str(SLEEP), script]


def config_text(sleepy: tuple[Path, Path] | None) -> str:
    def argv(words: list[str]) -> str:
        return "[" + ", ".join(json.dumps(w) for w in words) + "]"

    return ("[workflow]\nreviewRounds = 1\nstageTimeout = 120\n\n"
            + "".join(f"[agents.{stage}]\ncommand = {argv(agent_argv(stage, sleepy))}\n\n"
                      for stage in ("plan", "implement", "review"))
            + f"[gates]\ncommands = [{argv(GATE)}]\n")


def fixture(tmp: Path, name: str, sleepy: tuple[Path, Path] | None = None) -> Path:
    """A bare remote whose main holds a roadmap of TASKS tasks and the workflow
    configuration, and a clone to work in."""
    remote, seed, work = tmp / f"{name}.git", tmp / f"{name}-seed", tmp / name
    git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
    (seed / "docs").mkdir(parents=True)
    (seed / ".harn").mkdir()
    lines = [f"- [ ] 1.{i} Task number {i}\n" for i in range(1, TASKS + 1)]
    (seed / "docs" / "roadmap.md").write_text("# Roadmap\n\n" + "".join(lines))
    (seed / "README.md").write_text("bench\n")
    (seed / ".harn" / "workflow.toml").write_text(config_text(sleepy))
    git(tmp, "init", "-q", "-b", "main", str(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", str(remote), "main")
    git(tmp, "clone", "-q", str(remote), str(work))
    git(work, "config", "harn.worktreeRoot", str(tmp / f"{name}-worktrees"))
    return work


def harn_run(work: Path, *flags: str, tasks: int = TASKS) -> float:
    begin = time.perf_counter()
    # the sleepy agents log beside the fixture: under the sandbox only the paths an operator names are writable
    env = dict(os.environ, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="harn.sandboxWritable",
               GIT_CONFIG_VALUE_0=str(work.parent))
    done = subprocess.run([*HARN, "workflow", "run", "--json", *flags], cwd=work, capture_output=True, text=True,
                          check=False, env=env)
    seconds = time.perf_counter() - begin
    summary = json.loads(done.stdout)["summary"] if done.stdout.strip() else done.stderr
    if done.returncode != 0 or summary != f"{tasks} task{'s' if tasks > 1 else ''}: {tasks} done":
        raise SystemExit(f"git harn workflow run failed ({done.returncode}): {summary}")
    return seconds


# --- the plain way: the same steps, one task after another -----------------------


def run_agent(stage: str, wt: Path, task: str, report: Path, reviewer: str | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ, HARN_TASK_ID=task, HARN_TASK_TITLE=f"Task number {task.split('.')[1]}",
               HARN_STAGE=stage, HARN_REPORT=str(report))
    if reviewer:
        env["HARN_REVIEWER"] = reviewer
    child = subprocess.Popen(agent_argv(stage, None), cwd=wt, env=env, stdin=subprocess.PIPE, text=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert child.stdin is not None
    child.stdin.write(json.dumps({"task": {"id": task}, "stage": stage}))
    child.stdin.close()
    return child


def believe(child: subprocess.Popen[str], report: Path, key: str, value: object) -> None:
    if child.wait() != 0 or json.loads(report.read_text()).get(key) != value:
        raise SystemExit(f"plain: agent report {report} not believed")


def plain_task(work: Path, i: int, integrations: list[float]) -> None:
    task, branch = f"1.{i}", f"roadmap-1.{i}"
    wt = work.parent / f"{work.name}-wt-{i}"
    reports = work.parent / f"{work.name}-reports"
    reports.mkdir(exist_ok=True)
    git(work, "fetch", "-q", "origin")
    git(work, "worktree", "add", "-q", "-b", branch, str(wt), "origin/main")
    for stage in ("plan", "implement"):
        report = reports / f"{task}-{stage}.json"
        believe(run_agent(stage, wt, task, report), report, "ok", True)
    subprocess.run(GATE, cwd=wt, check=True)
    pair = [(run_agent("review", wt, task, reports / f"{task}-r{n}.json", str(n)), reports / f"{task}-r{n}.json")
            for n in (1, 2)]
    for child, report in pair:
        believe(child, report, "verdict", "approve")
    begin = time.perf_counter()
    git(wt, "fetch", "-q", "origin")
    git(wt, "rebase", "-q", "origin/main")
    git(wt, "reset", "-q", "--soft", "origin/main")  # the squash
    roadmap = wt / "docs" / "roadmap.md"
    roadmap.write_text(roadmap.read_text().replace(f"- [ ] {task} ", f"- [x] {task} "))
    git(wt, "add", "docs/roadmap.md")
    git(wt, "commit", "-q", "--no-verify", "-m", f"Task number {i}\n\nHarnery-Task: {task}")
    git(wt, "push", "-q", "origin", "HEAD:refs/heads/main")
    integrations.append(time.perf_counter() - begin)
    git(work, "worktree", "remove", str(wt))
    git(work, "branch", "-q", "-D", branch)


def plain_run(work: Path, integrations: list[float]) -> float:
    begin = time.perf_counter()
    for i in range(1, TASKS + 1):
        plain_task(work, i, integrations)
    seconds = time.perf_counter() - begin
    roadmap = git(work.parent / f"{work.name}.git", "show", "main:docs/roadmap.md")
    assert roadmap.count("- [x] ") == TASKS, roadmap
    return seconds


def agents_seconds(log: Path) -> float:
    """Per task: plan + implement + the longer of the two concurrent reviews, summed."""
    spans: dict[str, dict[str, float]] = {}
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        stage, took = entry["stage"], entry["end"] - entry["start"]
        per = spans.setdefault(entry["task"], {})
        per[stage] = max(per.get(stage, 0.0), took) if stage == "review" else per.get(stage, 0.0) + took
    assert len(spans) == TASKS, sorted(spans)
    return sum(sum(per.values()) for per in spans.values())


def spread(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    return (f"{statistics.median(values) * scale:.2f}{unit} "
            f"(min {min(values) * scale:.2f}{unit}, max {max(values) * scale:.2f}{unit})")


def main() -> None:
    tmp = sandbox()
    try:
        harn_run(fixture(tmp, "warm"), "--max-tasks", "1", tasks=1)  # compile bytecode outside the timing
        serial: dict[str, list[float]] = {"harn": [], "plain": [], "ratio": []}
        parallel: dict[str, list[float]] = {"wall": [], "ideal": [], "agents": [], "ratio": []}
        integrations: list[float] = []
        for n in range(ROUNDS):
            harn = harn_run(fixture(tmp, f"harn{n}"))
            mine: list[float] = []
            plain = plain_run(fixture(tmp, f"plain{n}"), mine)
            integrations += mine
            serial["harn"].append(harn)
            serial["plain"].append(plain)
            serial["ratio"].append(harn / plain)
            if _OPTIONS.no_parallel:
                print(f"round {n + 1}: serial {harn:.2f} s vs plain {plain:.2f} s", flush=True)
                continue
            log = tmp / f"agents{n}.log"
            wall = harn_run(fixture(tmp, f"par{n}", (sleepy_agent(tmp), log)), "--parallel", str(PARALLEL))
            agents = agents_seconds(log)
            ideal = agents / PARALLEL + statistics.median(mine) * TASKS
            parallel["wall"].append(wall)
            parallel["agents"].append(agents)
            parallel["ideal"].append(ideal)
            parallel["ratio"].append(wall / ideal)
            print(f"round {n + 1}: serial {harn:.2f} s vs plain {plain:.2f} s; "
                  f"parallel {wall:.2f} s vs ideal {ideal:.2f} s", flush=True)
    finally:
        cleanup(tmp)
    print(f"\n{TASKS} tasks, agents making one small commit each, serial ({ROUNDS} interleaved rounds)")
    print(f"  git harn workflow run   {spread(serial['harn'], unit=' s')}")
    print(f"  plain Python script     {spread(serial['plain'], unit=' s')}")
    print(f"  per task                {spread(serial['harn'], scale=1000 / TASKS, unit=' ms')} "
          f"(plain {spread(serial['plain'], scale=1000 / TASKS, unit=' ms')})")
    print(f"  ratio                   {spread(serial['ratio'])}   (target <= 1.3)")
    if _OPTIONS.no_parallel:
        return
    print(f"\n{TASKS} tasks, agents sleeping {SLEEP} s each, --parallel {PARALLEL}")
    print(f"  wall                    {spread(parallel['wall'], unit=' s')}")
    print(f"  agents' time            {spread(parallel['agents'], unit=' s')} "
          f"(per task plan + implement + the longer review)")
    print(f"  serial integrations     {spread(integrations, scale=TASKS, unit=' s')} (plain steps x {TASKS})")
    print(f"  ideal                   {spread(parallel['ideal'], unit=' s')}")
    print(f"  wall / ideal            {spread(parallel['ratio'])}   (target <= 1.2)")


if __name__ == "__main__":
    main()
