"""A year of agent runs: git-harn's commands over 100, 10,000 and 100,000
ended run records, each timed against the same command at 100 records.

Every repository is built the same way: ended (released) single-event run
records written through the store, three live workspaces made by `git harn
start`, `git harn hooks install`, synced to a bare remote with `git harn
sync`, and the repository and the remote gc'd. Building 100,000 records
takes minutes, so the repositories are kept in a cache folder (see
--cache) and reused while the code of the record format (store/runs.py,
store/record.py) is unchanged; each round tidies away the runs it made
(named bench-*, with their live index entries), so every round sees the
same repository. A repository built before the live index gets its index
from the first command that lists live runs, in the warm-up round.

Each row of ROWS is one command: what to do untimed before and after it,
the plain-git way of doing the same job (when there is one), and its
target. A new command is one more Row; a step that needs more of the
repository than the build gives (an archive, a second clone) prepares it
in its ``prepare`` and undoes it in ``restore`` or ``tidy``. Rounds are
interleaved (row by row, size by size, the order of the sizes turning each
round) after one warm-up round, so load on the machine hits every size
alike. A row prints the median, min and max of each size, and the ratio to
the same command at 100 records: the median of the per-round ratios, with
their min and max. At the end, one Markdown table for docs/speed.md.

Run from a checkout: python bench/scale.py [--sizes 100,10000,100000]
[--rounds 5] [--only status,sync] [--cache DIR] [--rebuild]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = (100, 10_000, 100_000)
BASE_SIZE = 100  # every ratio is against the same command at this size
LIVE = ("live-1", "live-2", "live-3")
ENDED = "r000000"  # an ended run whose id `log <id>` and `status <id>` name
BUILD_VERSION = "1"  # bump when the recipe below changes
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
HARN = [sys.executable, "-m", "git_harn"]


class CommandFailed(Exception):
    """A timed or prepared command failed: the row says so, the bench goes on."""


# --- the world: one cached repository per size ----------------------------------


@dataclass
class World:
    size: int
    root: Path

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    @property
    def remote(self) -> Path:
        return self.root / "remote.git"

    def workspace(self, name: str) -> Path:
        """The folder `git harn start <name>` made (under harn.worktreeRoot/<repo-key>/)."""
        return next((self.root / "worktrees").glob(f"*/{name}"))


def run(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, check=False)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise CommandFailed(f"{' '.join(argv[:4])}… exit {done.returncode}: {lines[-1] if lines else ''}")
    return done.stdout


def git(world: World, *args: str) -> str:
    """Bench bookkeeping: plain git with no hooks, in the repository."""
    return run(["git", *NO_HOOKS, *args], world.repo)


def harn(world: World, *args: str) -> str:
    return run([*HARN, *args], world.repo)


def environment(cache: Path) -> None:
    """A fixed HOME and git config under the cache (the cached repositories
    name these paths), and `git-harn` on PATH running this checkout's code,
    as the installed hooks call it."""
    home, bin_dir = cache / "home", cache / "bin"
    home.mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir(exist_ok=True)
    config = home / ".gitconfig"
    config.write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
                      "[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n[harn]\n\thost = bench\n")
    shim = bin_dir / "git-harn"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH='{ROOT}' exec '{sys.executable}' -m git_harn \"$@\"\n")
    shim.chmod(0o755)
    os.environ.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1",
                      XDG_DATA_HOME=str(cache / "data"), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                      PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                      PYTHONPYCACHEPREFIX=str(cache / "pycache"))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in [k for k in os.environ if k.startswith(("HARN_", "GIT_TRACE"))]:
        del os.environ[key]


def recipe_key() -> str:
    """Changes when the recipe or the record store's code does: a cached
    repository is only reused while git-harn would still write it the same way."""
    digest = hashlib.sha256(BUILD_VERSION.encode())
    for name in ("runs.py", "record.py"):
        digest.update((ROOT / "git_harn" / "store" / name).read_bytes())
    return digest.hexdigest()[:12]


def fill(repo_path: Path, count: int) -> None:
    """``count`` released runs, one event each, written by the store."""
    from git_harn.git import open_repo
    from git_harn.store import runs as store
    from git_harn.store.ids import new_workspace_id
    from git_harn.store.record import RELEASED, RunRecord

    repo = open_repo(repo_path)
    base = {"ref": "refs/heads/main", "oid": str(repo.resolve_commit("HEAD"))}
    for i in range(count):
        run_id = f"r{i:06d}"
        record = RunRecord(
            runId=run_id, workspaceId=new_workspace_id(), state=RELEASED, path=f"/gone/{run_id}",
            branch=f"harnery/ws/{run_id}", base=base, host="bench", createdAt="2026-01-01T00:00:00Z",
            updatedAt="", attempts=1, lastOutcome=RELEASED, reason="worktree removed; branch deleted")
        store.write(repo, record, RELEASED, "bench", None)


def scratch_folder() -> Path:
    """Loose objects and refs are written fastest in memory; the packed
    result is then copied to the cache, where the commands are timed."""
    shm = Path("/dev/shm")
    return Path(tempfile.mkdtemp(prefix="git-harn-scale-", dir=shm if shm.is_dir() else None))


def build(world: World) -> None:
    began = time.perf_counter()
    print(f"building {world.size:,} records in {world.root} …", flush=True)
    shutil.rmtree(world.root, ignore_errors=True)
    world.root.mkdir(parents=True)
    scratch = scratch_folder()
    try:
        seed = scratch / "repo"
        seed.mkdir()
        run(["git", "init", "-q", "-b", "main"], seed)
        for i in range(10):
            (seed / f"f{i}.txt").write_text(f"file {i}\n")
        run(["git", "add", "-A"], seed)
        run(["git", "commit", "-q", "-m", "fixture"], seed)
        fill(seed, world.size)
        run(["git", "gc", "-q"], seed)
        shutil.copytree(seed, world.repo, symlinks=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    git(world, "config", "harn.worktreeRoot", str(world.root / "worktrees"))
    harn(world, "hooks", "install")
    for name in LIVE:
        harn(world, "start", name)
    run(["git", "init", "-q", "--bare", str(world.remote)], world.root)
    git(world, "remote", "add", "origin", str(world.remote))
    git(world, "push", "-q", "origin", "main")
    harn(world, "sync")
    git(world, "gc", "-q")
    run(["git", "gc", "-q"], world.remote)
    (world.root / "built").write_text(recipe_key())
    print(f"  built in {time.perf_counter() - began:.0f} s", flush=True)


def world_for(cache: Path, size: int, rebuild: bool) -> World:
    world = World(size, cache / f"records-{size}")
    marker = world.root / "built"
    if rebuild or not marker.is_file() or marker.read_text() != recipe_key():
        build(world)
    harn(world, "hooks", "install")  # the hooks of the code being measured
    tidy(world)
    return world


def tidy(world: World) -> None:
    """Remove what the rows made (runs named bench-*: records, their
    tracking refs and their copies on the remote; branches and worktrees),
    so every round and every invocation sees the repository as built."""
    git(world, "worktree", "prune")
    for listed in git(world, "worktree", "list", "--porcelain").split("\n\n"):
        path = listed.partition("\n")[0].removeprefix("worktree ")
        if "/bench-" in path:
            git(world, "worktree", "remove", "--force", path)
    here = git(world, "for-each-ref", "--format=%(refname)", "refs/harnery/runs/bench-",
               "refs/harnery/live/bench-", "refs/harnery-remotes/origin/runs/bench-", "refs/heads/harnery/ws/bench-",
               "refs/heads/harnery/salvage/bench-", "refs/heads/bench-", f"refs/heads/harnery/ws/{ENDED}")
    there = run(["git", "for-each-ref", "--format=%(refname)", "refs/harnery/runs/bench-"], world.remote)
    for folder, names in ((world.repo, here), (world.remote, there)):
        lines = "".join(f"delete {name}\n" for name in names.split())
        if lines:
            subprocess.run(["git", *NO_HOOKS, "update-ref", "--stdin"], cwd=folder, input=lines,
                           text=True, check=True)
    shutil.rmtree(world.root / "worktrees-plain", ignore_errors=True)


# --- rows ----------------------------------------------------------------------


Action = Callable[[World, str], object]  # (world, a name unique to this round)


def nothing(world: World, name: str) -> None:
    pass


@dataclass
class Step:
    """One timed command with what must happen, untimed, around it."""

    action: Action
    prepare: Action = nothing
    restore: Action = nothing


@dataclass
class Row:
    name: str
    ours: Step
    plain: Step | None = None
    plain_name: str = ""
    target: str = ""  # "ratio <= 1.2", "+5 ms over plain", or "" (no target)
    repeat: int = 1  # timings per round and size: a command of a few ms needs more to show its median
    failed: dict[int, str] = field(default_factory=dict)
    times: dict[int, list[float]] = field(default_factory=dict)
    plain_times: dict[int, list[float]] = field(default_factory=dict)


def harn_step(*args: str) -> Step:
    return Step(lambda w, _n: harn(w, *args))


def start_step(world: World, name: str) -> None:
    harn(world, "start", name)


def cleanup_step(world: World, name: str) -> None:
    harn(world, "cleanup", name, "--yes")


def preserve_dirty(world: World, name: str) -> None:
    """A workspace that cleanup preserved for its uncommitted file: what reclaim is for."""
    harn(world, "start", name)
    (world.workspace(name) / "work.txt").write_text(f"unfinished work of {name}\n")
    done = subprocess.run([*HARN, "cleanup", name, "--yes"], cwd=world.repo, capture_output=True, check=False)
    if done.returncode != 3:
        raise CommandFailed(f"cleanup of a dirty workspace exited {done.returncode}, not 3 (preserved)")


def plain_worktree(world: World, name: str) -> None:
    path = world.root / "worktrees-plain" / name
    git(world, "worktree", "add", "-q", "-b", f"bench-{name}", str(path), "main")


def plain_remove(world: World, name: str) -> None:
    git(world, "worktree", "remove", str(world.root / "worktrees-plain" / name))
    git(world, "branch", "-q", "-d", f"bench-{name}")


# Which hooks a plain git command runs: git-harn's (installed), none, or
# hooks that only exit (what git spends starting any hook at all).
HARN_HOOKS, NONE, EMPTY = "harn", "none", "empty"


def hooks_option(world: World, hooks: str) -> tuple[str, ...]:
    if hooks == NONE:
        return NO_HOOKS
    if hooks == EMPTY:
        empty = world.root.parent / "empty-hooks"
        if not empty.is_dir():
            empty.mkdir()
            for hook in ("reference-transaction", "post-checkout", "pre-auto-gc"):
                (empty / hook).write_text("#!/bin/sh\nexit 0\n")
                (empty / hook).chmod(0o755)
        return ("-c", f"core.hooksPath={empty}")
    return ()


def worktree_add(hooks: str) -> Step:
    def add(world: World, name: str) -> None:
        path = str(world.root / "worktrees-plain" / name)
        run(["git", *hooks_option(world, hooks), "worktree", "add", "-q", "-b", f"bench-{name}", path, "main"],
            world.repo)
    return Step(add, restore=plain_remove)


def branch_delete(hooks: str, branch: Callable[[str], str]) -> Step:
    def make(world: World, name: str) -> None:
        git(world, "branch", branch(name), "main")

    def delete(world: World, name: str) -> None:
        run(["git", *hooks_option(world, hooks), "branch", "-q", "-D", branch(name)], world.repo)
    return Step(delete, prepare=make)


def kept_branch(_name: str) -> str:
    """The workspace branch of an ended run, kept, its tip on main: the
    guard must read that run's record to let it go."""
    return f"harnery/ws/{ENDED}"


def plain_sync(world: World, _name: str) -> None:
    git(world, "fetch", "-q", "origin", "+refs/harnery/*:refs/harnery-remotes/origin/*")
    git(world, "push", "-q", "origin", "refs/harnery/*:refs/harnery/*")


def synced(world: World, _name: str) -> None:
    harn(world, "sync")


ROWS = [
    Row("git harn status (live only)", harn_step("status"),
        Step(lambda w, _n: git(w, "for-each-ref", "refs/harnery/runs/")), "git for-each-ref refs/harnery/runs/",
        "ratio <= 1.2"),
    Row("git harn status --all", harn_step("status", "--all")),
    Row("git harn status --all --last 50", harn_step("status", "--all", "--last", "50"), target="ratio <= 1.2"),
    Row("git harn start", Step(start_step, restore=cleanup_step), Step(plain_worktree, restore=plain_remove),
        "git worktree add -b", "ratio <= 1.2"),
    Row("git harn cleanup --yes", Step(cleanup_step, prepare=start_step),
        Step(plain_remove, prepare=plain_worktree), "git worktree remove + git branch -d", "ratio <= 1.2"),
    Row("git harn reclaim", Step(lambda w, n: harn(w, "reclaim", n), prepare=preserve_dirty),
        target="ratio <= 1.2"),
    Row("git worktree add, hooks installed", worktree_add(HARN_HOOKS), worktree_add(NONE), "without hooks",
        "+5 ms over plain", repeat=5),
    Row("git worktree add, hooks that only exit", worktree_add(EMPTY), worktree_add(NONE), "without hooks",
        repeat=5),
    Row("git branch -D of a branch, hooks installed", branch_delete(HARN_HOOKS, lambda n: f"bench-{n}"),
        branch_delete(NONE, lambda n: f"bench-{n}"), "without hooks", "+5 ms over plain", repeat=5),
    Row("git branch -D of a branch, hooks that only exit", branch_delete(EMPTY, lambda n: f"bench-{n}"),
        branch_delete(NONE, lambda n: f"bench-{n}"), "without hooks", repeat=5),
    Row("git branch -D of a kept harnery/ws/* branch, hooks installed", branch_delete(HARN_HOOKS, kept_branch),
        branch_delete(NONE, kept_branch), "without hooks", "ratio <= 1.2"),
    Row("git harn sync, nothing changed", Step(synced, prepare=synced), Step(plain_sync, prepare=synced),
        "git fetch + git push", "ratio <= 1.2"),
    Row("git harn log <id>", harn_step("log", ENDED), target="ratio <= 1.2"),
    Row("git harn status <id>", harn_step("status", ENDED), target="ratio <= 1.2"),
]


# --- timing and the report -----------------------------------------------------------


def timed(step: Step, world: World, name: str) -> float:
    step.prepare(world, name)
    begin = time.perf_counter()
    try:
        step.action(world, name)
        return time.perf_counter() - begin
    finally:
        step.restore(world, name)


def one_round(rows: list[Row], worlds: list[World], number: int, keep: bool) -> None:
    turn = number % len(worlds)
    order = worlds[turn:] + worlds[:turn]  # no size always goes first
    for index, row in enumerate(rows):
        for world in order:
            if world.size in row.failed:
                continue
            for again in range(row.repeat):
                name = f"bench-{number}-{index}-{again}"
                try:
                    ours = timed(row.ours, world, name)
                    theirs = timed(row.plain, world, name + "p") if row.plain is not None else None
                except CommandFailed as exc:
                    row.failed[world.size] = str(exc)
                    tidy(world)
                    break
                if keep:
                    row.times.setdefault(world.size, []).append(ours)
                    if theirs is not None:
                        row.plain_times.setdefault(world.size, []).append(theirs)
    for world in worlds:
        tidy(world)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds >= 0.1 else f"{seconds * 1000:.1f} ms"


def spread(times: Sequence[float]) -> str:
    return f"{ms(statistics.median(times))} [{ms(min(times))}–{ms(max(times))}]"


def ratios(row: Row, size: int) -> list[float]:
    return [big / small for big, small in zip(row.times[size], row.times[BASE_SIZE], strict=True)]


def ratio_text(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}–{max(values):.2f}]"


def verdict(row: Row, size: int) -> str:
    """Whether the row meets its target at ``size`` (the largest)."""
    if not row.target or size not in row.times:
        return ""
    if row.target.startswith("ratio"):
        if BASE_SIZE not in row.times:
            return "?"
        return "met" if statistics.median(ratios(row, size)) <= float(row.target.split()[-1]) else "MISSED"
    over = statistics.median(row.times[size]) - statistics.median(row.plain_times[size])
    return "met" if over * 1000 <= float(row.target.split()[0].lstrip("+")) else "MISSED"


def print_row(row: Row, sizes: Sequence[int]) -> None:
    print(f"\n{row.name}" + (f"   (target: {row.target})" if row.target else ""))
    for size in sizes:
        if size in row.failed:
            print(f"  {size:>9,}  failed: {row.failed[size]}")
            continue
        line = f"  {size:>9,}  {spread(row.times[size])}"
        if size != BASE_SIZE and BASE_SIZE in row.times:
            line += f"   ratio to {BASE_SIZE}: {ratio_text(ratios(row, size))}"
        if size in row.plain_times:
            over = statistics.median(row.times[size]) - statistics.median(row.plain_times[size])
            line += f"   {row.plain_name}: {spread(row.plain_times[size])} ({over * 1000:+.1f} ms)"
        print(line)


def markdown(rows: list[Row], sizes: Sequence[int]) -> None:
    largest = max(sizes)
    print(f"\n| command | {' | '.join(f'{s:,}' for s in sizes)} | plain git at {largest:,} | target | |")
    print("|---" * (len(sizes) + 4) + "|")
    for row in rows:
        cells = []
        for size in sizes:
            if size in row.failed or size not in row.times:
                cells.append("fails")
            elif size == BASE_SIZE or BASE_SIZE not in row.times:
                cells.append(spread(row.times[size]))
            else:
                cells.append(f"{spread(row.times[size])}, ratio {ratio_text(ratios(row, size))}")
        plain = spread(row.plain_times[largest]) if largest in row.plain_times else ""
        print(f"| {row.name} | {' | '.join(cells)} | {plain} | {row.target} | {verdict(row, largest)} |")


def load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES),
                        help=f"record counts, comma-separated (the first is {BASE_SIZE}, the base)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds, after one warm-up round")
    parser.add_argument("--only", default="", help="run only the rows whose name holds one of these words")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "git-harn-bench-scale",
                        help="where the built repositories are kept between runs")
    parser.add_argument("--rebuild", action="store_true", help="build the repositories again")
    options = parser.parse_args()
    sizes = sorted({BASE_SIZE, *(int(s) for s in options.sizes.split(","))})
    words = [w for w in options.only.split(",") if w]
    rows = [row for row in ROWS if not words or any(w in row.name for w in words)]
    environment(options.cache.resolve())
    worlds = [world_for(options.cache.resolve(), size, options.rebuild) for size in sizes]
    print(f"scale: {options.rounds} rounds after a warm-up, {len(rows)} rows, sizes "
          f"{', '.join(f'{s:,}' for s in sizes)}; load average {load()}", flush=True)
    for number in range(options.rounds + 1):
        began = time.perf_counter()
        one_round(rows, worlds, number, keep=number > 0)
        print(f"  round {number}{' (warm-up)' if number == 0 else ''}: {time.perf_counter() - began:.0f} s, "
              f"load average {load()}", flush=True)
    for row in rows:
        print_row(row, sizes)
    markdown(rows, sizes)
    print(f"\nload average at the end: {load()}")


if __name__ == "__main__":
    main()
