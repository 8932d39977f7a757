"""What git-harn's hooks add to an ordinary `git commit` [H3].

Two repositories, one with `git harn hooks install` and one without; 200
commits each, interleaved so both see the same machine load. Prints the
median time per commit, the median added by the hooks and the ratio.
Target: at most 5 ms added per commit (median), ratio at most 1.1.

Run from a checkout: python bench/hooks.py [--commits N] [--files N]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def environment(sandbox: Path) -> None:
    """Hermetic git, and `git-harn` on PATH running this checkout's code."""
    bin_dir = sandbox / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "git-harn"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH='{ROOT}' exec '{sys.executable}' -m git_harn \"$@\"\n")
    shim.chmod(0o755)
    config = sandbox / "gitconfig"
    config.write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n"
                      "[init]\n\tdefaultBranch = main\n[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n")
    os.environ.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", GIT_CONFIG_GLOBAL=str(config),
                      GIT_CONFIG_NOSYSTEM="1", HOME=str(sandbox))
    for key in [k for k in os.environ if k.startswith("HARN_")]:
        del os.environ[key]


def make_repo(path: Path, hooks: str, files: int) -> Path:
    """hooks: "none", "harn" (git harn hooks install) or "empty" (a
    reference-transaction hook that only exits: the floor any such hook costs)."""
    path.mkdir()
    git(path, "init", "-q")
    (path / "file.txt").write_text("0\n")
    for n in range(files):
        folder = path / "src" / f"d{n % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"file {n}\n" * 20)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    hook = path / ".git" / "hooks" / "reference-transaction"
    if hooks == "harn":
        git(path, "harn", "hooks", "install")
        assert hook.is_file()
    elif hooks == "empty":
        hook.write_text("#!/bin/sh\nexit 0\n")
        hook.chmod(0o755)
    return path


def one_commit(repo: Path, n: int) -> float:
    """Seconds one `git commit` of a changed file takes (staging is not timed)."""
    (repo / "file.txt").write_text(f"{n + 1}\n")
    git(repo, "add", "file.txt")
    start = time.perf_counter()
    git(repo, "commit", "-q", "-m", f"commit {n}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--files", type=int, default=0,
                        help="extra tracked files (a bigger repository makes a slower commit)")
    options = parser.parse_args()
    commits = options.commits
    with tempfile.TemporaryDirectory(prefix="git-harn-bench-") as tmp:
        sandbox = Path(tmp)
        environment(sandbox)
        repos = {kind: make_repo(sandbox / kind, kind, options.files) for kind in ("none", "harn", "empty")}
        times: dict[str, list[float]] = {kind: [] for kind in repos}
        order = list(repos)
        for n in range(commits):
            random.shuffle(order)  # no repository always goes first
            for kind in order:
                times[kind].append(one_commit(repos[kind], n))
    median = {kind: statistics.median(values) for kind, values in times.items()}
    base = median["none"]
    print(f"commits: {commits} each, interleaved; {options.files + 1} tracked file(s)")
    print(f"git commit, no hooks:                  median {base * 1000:.2f} ms")
    print(f"git commit, an empty reference-transaction hook: median {median['empty'] * 1000:.2f} ms "
          f"(+{(median['empty'] - base) * 1000:.2f} ms: the cost of git starting any hook)")
    print(f"git commit, git-harn hooks:            median {median['harn'] * 1000:.2f} ms")
    added_ms = (median["harn"] - base) * 1000
    print(f"added per commit: {added_ms:.2f} ms (target <= 5 ms); ratio {median['harn'] / base:.3f} "
          "(target <= 1.1)")


if __name__ == "__main__":
    main()
