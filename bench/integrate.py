"""Bench: integrate 20 small tasks, one after another, into a local bare remote.

git-harn against the plain git sequence doing the same steps in an
integration worktree: fetch, rebase the task branch onto the fresh base,
``switch --discard-changes -C``, ``merge --squash``, tick the roadmap,
commit, push. Every task after the first needs a real rebase, because the
base moved when the previous one landed. Two figures for git-harn: one
``git harn integrate <branch>`` process per task, and one
``git harn integrate <branch>...`` call for all the tasks.

Run: python bench/integrate.py [tasks]   (target ratio <= 1.5)
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASKS = int(sys.argv[1]) if len(sys.argv) > 1 else 20


def sh(cwd: Path, *argv: str) -> None:
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)


def git(cwd: Path, *args: str) -> None:
    sh(cwd, "git", *args)


def hermetic(tmp: Path) -> None:
    config = tmp / "gitconfig"
    config.write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    os.environ.update(HOME=str(tmp), GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1",
                      XDG_DATA_HOME=str(tmp / "data"), LC_ALL="C")
    os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    # An installed git-harn runs from compiled bytecode; let the first run write it.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")


def fixture(tmp: Path, name: str) -> Path:
    """A bare remote with a roadmap of TASKS tasks and a clone with one branch per task."""
    remote, seed, work = tmp / f"{name}.git", tmp / f"{name}-seed", tmp / name
    git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
    seed.mkdir()
    (seed / "docs").mkdir()
    lines = [f"- [ ] 1.{i} Task number {i}\n" for i in range(1, TASKS + 1)]
    (seed / "docs" / "roadmap.md").write_text("# Roadmap\n\n" + "".join(lines))
    (seed / "README.md").write_text("bench\n")
    git(tmp, "init", "-q", "-b", "main", str(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", str(remote), "main")
    git(tmp, "clone", "-q", str(remote), str(work))
    git(work, "config", "harn.worktreeRoot", str(tmp / f"{name}-worktrees"))
    for i in range(1, TASKS + 1):
        git(work, "switch", "-q", "-c", f"roadmap-1.{i}", "origin/main")
        (work / f"task{i}.txt").write_text(f"task {i}\n")
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"task {i}")
    git(work, "switch", "-q", "main")
    return work


def harn_one(work: Path, i: int) -> None:
    sh(work, sys.executable, "-m", "git_harn", "integrate", f"roadmap-1.{i}", "--base", "main")


def harn_batch(work: Path) -> None:
    branches = [f"roadmap-1.{i}" for i in range(1, TASKS + 1)]
    sh(work, sys.executable, "-m", "git_harn", "integrate", *branches, "--base", "main")


def plain_all(work: Path) -> None:
    wt = _plain_worktree(work)
    for i in range(1, TASKS + 1):
        plain_one(work, wt, i)


def plain_one(work: Path, wt: Path, i: int) -> None:
    branch = f"roadmap-1.{i}"
    git(work, "fetch", "-q", "origin")
    git(wt, "switch", "-q", "--discard-changes", "--detach", branch)
    git(wt, "rebase", "-q", "origin/main")
    git(work, "branch", "-f", branch, _head(wt))
    git(wt, "switch", "-q", "--discard-changes", "-C", f"integrate-1-{i}", "origin/main")
    git(wt, "merge", "-q", "--squash", branch)
    roadmap = wt / "docs" / "roadmap.md"
    roadmap.write_text(roadmap.read_text().replace(f"- [ ] 1.{i} ", f"- [x] 1.{i} "))
    git(wt, "add", "docs/roadmap.md")
    git(wt, "commit", "-q", "--no-verify", "-m", f"Task number {i}\n\nHarnery-Task: 1.{i}")
    git(wt, "push", "-q", "origin", f"integrate-1-{i}:main")


def _head(wt: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=wt, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def timed(step: Callable[[], None]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child processes) of ``step``."""
    start, cpu = time.perf_counter(), _children_cpu()
    step()
    return time.perf_counter() - start, _children_cpu() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def race(harn_work: Path, plain_work: Path) -> tuple[list[float], list[float]]:
    """Task by task, alternating, so a busy machine slows both sides alike.
    Returns [wall, cpu] totals for git-harn and for plain git."""
    wt = _plain_worktree(plain_work)
    harn, plain = [0.0, 0.0], [0.0, 0.0]
    for i in range(1, TASKS + 1):
        for total, step in ((harn, lambda: harn_one(harn_work, i)),  # noqa: B023 (called at once)
                            (plain, lambda: plain_one(plain_work, wt, i))):  # noqa: B023
            wall, cpu = timed(step)
            total[0] += wall
            total[1] += cpu
    return harn, plain


def _plain_worktree(work: Path) -> Path:
    wt = work.parent / f"{work.name}-integrate"
    git(work, "worktree", "add", "-q", "--detach", str(wt), "origin/main")
    return wt


def batch_race(tmp: Path) -> tuple[list[float], list[float]]:
    """All the tasks in one git-harn call against all of them in plain git,
    each side on its own fixture."""
    harn_work, plain_work = fixture(tmp, "harn-batch"), fixture(tmp, "plain-batch")
    harn = list(timed(lambda: harn_batch(harn_work)))
    plain = list(timed(lambda: plain_all(plain_work)))
    return harn, plain


def show(title: str, name: str, harn: list[float], plain: list[float]) -> None:
    print(f"{TASKS} tasks integrated one after another into a local bare remote, {title} (per task)")
    print(f"  {'':28} {'wall ms':>9} {'cpu ms':>9}")
    for label, (wall, cpu) in ((name, harn), ("plain git sequence", plain)):
        print(f"  {label:28} {wall / TASKS * 1000:9.1f} {cpu / TASKS * 1000:9.1f}")
    print(f"  {'ratio':28} {harn[0] / plain[0]:9.2f} {harn[1] / plain[1]:9.2f}   (target <= 1.5)")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="git-harn-bench-") as raw:
        tmp = Path(raw)
        hermetic(tmp)
        harn_one(fixture(tmp, "warm"), 1)  # compile git-harn's bytecode outside the timing
        harn, plain = race(fixture(tmp, "harn"), fixture(tmp, "plain"))
        batch, plain_batch = batch_race(tmp)
    show("one process per task", "git harn integrate <b>", harn, plain)
    show("one call for all", "git harn integrate <b>...", batch, plain_batch)


if __name__ == "__main__":
    main()
