"""Crashes that take git down too, and a second clone on the same host.

A *gate* is a git filter that blocks until the test opens it: git runs it
in the middle of ``git add -A`` (a clean filter) or of a checkout (a smudge
filter, as in ``reset --hard`` or ``merge --squash``), while git holds its
index lock. The test waits until git is stuck there, then freezes the whole
process group of the ``git harn`` it started (SIGSTOP) and kills every
process in it (SIGKILL), as an out-of-memory kill or a container stop does.
No waiting is unbounded; nothing but the group the test started is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from tests.kit.harn import git, harn, make_repo, record

GATE_WAIT_TICKS = 400  # the filter gives up after about 20 s on its own


@dataclass
class Gate:
    """A filter script that blocks while ``opened`` is missing, and says
    when it is blocked by creating ``blocked``."""

    script: Path
    opened: Path
    blocked: Path

    def open(self) -> None:
        self.opened.write_text("open\n")

    def close(self) -> None:
        self.opened.unlink(missing_ok=True)
        self.blocked.unlink(missing_ok=True)


def make_gate(folder: Path, only_if: str = "true") -> Gate:
    """A gate; it blocks only where the shell test ``only_if`` holds (else
    the filter passes the content through at once)."""
    folder.mkdir(parents=True, exist_ok=True)
    gate = Gate(folder / "gate.sh", folder / "gate-open", folder / "gate-blocked")
    gate.script.write_text(
        "#!/bin/sh\n"
        f"{only_if} || exec cat\n"
        f"[ -e '{gate.opened}' ] || : > '{gate.blocked}'\n"
        "i=0\n"
        f"while [ ! -e '{gate.opened}' ] && [ $i -lt {GATE_WAIT_TICKS} ]; do sleep 0.05; i=$((i+1)); done\n"
        "exec cat\n"
    )
    gate.script.chmod(0o755)
    gate.open()
    return gate


def use_gate(repo: Path, gate: Gate, kind: str) -> None:
    """Files matching ``*.gate`` go through ``gate`` as their ``kind`` (clean or smudge) filter."""
    git(repo, "config", f"filter.gate.{kind}", str(gate.script))


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(state, process group, command name) of ``pid``; None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = raw[raw.index("(") + 1:raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2:].split()
    return fields[0], int(fields[2]), name


def group_members(pgid: int) -> list[tuple[int, str]]:
    """Live (not zombie) processes of process group ``pgid``: (pid, command name)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        info = _stat(int(entry))
        if info is not None and info[1] == pgid and info[0] not in ("Z", "X"):
            found.append((int(entry), info[2]))
    return found


@dataclass
class Killed:
    code: int
    out: str
    err: str
    members: list[tuple[int, str]]  # what the group held when it was frozen


def kill_group_when_blocked(cwd: Path, args: list[str], gate: Gate, seconds: float = 30) -> Killed:
    """Run ``git harn <args>`` as the leader of its own process group; once
    ``gate`` is blocked (git is mid-operation, its lock held), freeze the
    group and SIGKILL every process in it."""
    gate.close()
    proc = subprocess.Popen(["git", "harn", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ), start_new_session=True)
    pgid = proc.pid
    deadline = time.monotonic() + seconds
    try:
        while not gate.blocked.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, f"git harn ended before it reached the gate: {proc.communicate()}"
        assert gate.blocked.exists(), "git never reached the gate"
        os.killpg(pgid, signal.SIGSTOP)
        members = group_members(pgid)
        os.killpg(pgid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        while group_members(pgid) and time.monotonic() < deadline + 10:
            time.sleep(0.02)  # every process of the group is dead, not only the leader
        gate.open()
    assert not group_members(pgid), "the killed process group lives on"
    return Killed(proc.returncode, out, err, members)


# --- two clones of one remote on this host -----------------------------------


@dataclass
class TwoClones:
    remote: Path
    a: Path
    b: Path


def two_clones(tmp_path: Path, files: dict[str, str] | None = None) -> TwoClones:
    """Clone A and clone B of one bare remote, side by side on this host."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a = make_repo(tmp_path / "a", files)
    git(a, "remote", "add", "origin", str(remote))
    git(a, "push", "-q", "origin", "main")
    git(a, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    git(b, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    return TwoClones(remote, a, b)


def share_records(clones: TwoClones) -> None:
    """Push A's records and fetch them into B, as a user sharing them would."""
    git(clones.a, "push", "-q", "origin", "refs/harnery/*:refs/harnery/*")
    git(clones.b, "fetch", "-q", "origin", "refs/harnery/*:refs/harnery/*")


def start_in(repo: Path, run_id: str, *extra: str) -> Path:
    result = harn(repo, "start", run_id, *extra)
    assert result.code == 0, result.err
    return Path(record(repo, run_id)["path"])


def admin_of(worktree: Path) -> Path:
    """The linked worktree's own git dir (``<common dir>/worktrees/<name>``)."""
    return Path(git(worktree, "rev-parse", "--absolute-git-dir"))


def integration_setup(tmp_path: Path, seed_files: dict[str, str]) -> tuple[Path, Path]:
    """A bare remote seeded with ``seed_files`` (a roadmap among them), and
    the operator's clone of it: (remote, work)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = make_repo(tmp_path / "seed", seed_files)
    git(seed, "remote", "add", "origin", str(remote))
    git(seed, "push", "-q", "origin", "main")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(remote), str(work))
    git(work, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    return remote, work


def make_task(repo: Path, task_id: str, files: dict[str, str]) -> str:
    """Branch ``roadmap-<id>`` off origin/main with one commit of ``files``."""
    branch = f"roadmap-{task_id}"
    git(repo, "switch", "-q", "-c", branch, "origin/main")
    for name, content in files.items():
        (repo / name).write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"work on {task_id}")
    git(repo, "switch", "-q", "main")
    return branch


def squashes_of(remote: Path, task_id: str) -> int:
    """How many commits on the remote's main land task ``task_id``."""
    return len(git(remote, "log", "--format=%H", f"--grep=^Harnery-Task: {task_id}$", "main").split())
