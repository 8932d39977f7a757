"""Shared bench helpers: temporary repositories, timing, ratio lines."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

HARN = [sys.executable, "-m", "git_harn"]


def sandbox() -> Path:
    """A temporary folder with its own HOME and git identity."""
    root = Path(tempfile.mkdtemp(prefix="git-harn-bench-"))
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    os.environ.update(HOME=str(home), XDG_DATA_HOME=str(root / "data"), GIT_CONFIG_NOSYSTEM="1",
                      GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
    # The git-harn of this checkout, whether or not it is installed.
    source = str(Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    # An installed git-harn runs from compiled bytecode; let the first run write it.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return root


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def repo_with_files(path: Path, count: int) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for i in range(count):
        folder = path / f"d{i % 50:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text(f"file {i}\n" * 4)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "fixture")
    return path


def median_seconds(action: Callable[[], object], runs: int = 5) -> float:
    action()  # warm the page cache
    times = []
    for _ in range(runs):
        begin = time.perf_counter()
        action()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def run_quiet(argv: list[str], cwd: Path) -> None:
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def paired_samples(ours: Callable[[], object], theirs: Callable[[], object],
                   runs: int = 7) -> tuple[list[float], list[float]]:
    """Warm both, then alternate them, so load on the machine hits both alike."""
    ours()
    theirs()
    mine: list[float] = []
    other: list[float] = []
    for _ in range(runs):
        for action, times in ((ours, mine), (theirs, other)):
            begin = time.perf_counter()
            action()
            times.append(time.perf_counter() - begin)
    return mine, other


def _spread(times: Sequence[float]) -> str:
    return (f"{statistics.median(times) * 1000:.1f} ms "
            f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f})")


def report(name: str, ours: Sequence[float], theirs: Sequence[float], target: str) -> None:
    """One line per side: the median with the min and max of its rounds, then
    the ratio of the medians."""
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"{name}, {len(ours)} rounds each:")
    print(f"  git-harn    {_spread(ours)}")
    print(f"  plain way   {_spread(theirs)}")
    print(f"  ratio       {ratio:.2f} of the medians (target {target})")


def cleanup(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
