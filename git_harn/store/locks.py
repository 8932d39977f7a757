"""Per-run locks and the merge lock under <common git dir>/harnery/locks/.

A lock is a file created with O_EXCL holding its owner (pid, process start
time, host). A lock whose owner died on this host is broken with a warning.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from git_harn.clock import precise_iso, waited
from git_harn.errors import Busy
from git_harn.files import atomic_write, loads_json
from git_harn.notices import warn

if TYPE_CHECKING:  # only named: the watchdog process loads this module, and no pygit2
    from git_harn.git import Repo


def locks_dir(repo: Repo) -> Path:
    return repo.common_dir / "harnery" / "locks"


RUN_LOCK_PREFIX, LOCK_SUFFIX = "run-", ".lock"


def run_lock_name(run_id: str) -> str:
    """The one spelling of a run's lock file name."""
    return f"{RUN_LOCK_PREFIX}{run_id}{LOCK_SUFFIX}"


def run_of_lock(name: str) -> str | None:
    """The run id a lock file name names, None when it is no run's lock."""
    if not name.startswith(RUN_LOCK_PREFIX) or not name.endswith(LOCK_SUFFIX):
        return None
    return name[len(RUN_LOCK_PREFIX):-len(LOCK_SUFFIX)]


SYNC_LOCK = "sync.lock"  # held by a git harn sync for its whole length


def sync_lock_path(repo: Repo) -> Path:
    return locks_dir(repo) / SYNC_LOCK


def run_lock_path(repo: Repo, run_id: str) -> Path:
    return locks_dir(repo) / run_lock_name(run_id)


def _process_start(pid: int) -> str | None:
    """Start time of ``pid`` (guards against pid reuse), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()
    if fields[0] in ("Z", "X"):
        return None  # a zombie has finished; only its exit status is left
    return fields[19]


def agents_of(owner: dict[str, object]) -> list[dict[str, object]]:
    """The commands a lock's holder started and named in it (``agents``; one
    ``agent`` in locks written before there could be several)."""
    found = owner.get("agents")
    agents = [a for a in found if isinstance(a, dict)] if isinstance(found, list) else []
    legacy = owner.get("agent")
    return agents + ([legacy] if isinstance(legacy, dict) else [])


def owner_alive(owner: dict[str, object]) -> bool:
    """The holder is alive, or a command it started still runs (a killed
    ``git harn run`` or workflow leaves its agent writing to the workspace)."""
    if any(_pid_alive({**owner, **agent}) for agent in agents_of(owner)):
        return True
    return _pid_alive(owner)


def _pid_alive(owner: dict[str, object]) -> bool:
    if owner.get("host") != socket.gethostname():
        return True  # never judge another machine's process
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return False
    if Path("/proc").is_dir():
        start = _process_start(pid)
        return start is not None and (start == "" or start == owner.get("start"))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_owner(path: Path) -> dict[str, object] | None:
    try:
        data = loads_json(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_owner(path: Path) -> dict[str, object] | None:
    """The owner a lock file names (None: no such lock; {}: unreadable)."""
    return _read_owner(path)


def process_owner() -> dict[str, object]:
    """This process, as a lock (or any file it leaves behind) names its owner."""
    return {
        "pid": os.getpid(),
        "start": _process_start(os.getpid()),
        "host": socket.gethostname(),
        "group": os.getpgrp(),
        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _try_create(path: Path, purpose: str) -> bool:
    return create_exclusive(path, {**process_owner(), "purpose": purpose})


def create_exclusive(path: Path, owner: dict[str, object]) -> bool:
    """Create the lock file at ``path`` naming ``owner``; False if it exists."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    except FileNotFoundError:
        # The folder vanished (a repository cleaned by hand): make it once more and retry, bounded.
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
    with os.fdopen(fd, "w") as handle:
        json.dump(owner, handle)
    return True


# Owners of dead locks this process broke, by lock path: what tells a later
# step (reclaim judging a git lock file in the workspace) that a dead run
# was at work there, after its own lock file is gone.
BROKEN: dict[str, dict[str, object]] = {}


def broken_owner(path: Path) -> dict[str, object] | None:
    """The dead owner of the lock at ``path`` this process broke, if it did."""
    return BROKEN.get(str(path))


def _break_if_dead(path: Path, label: str) -> bool:
    """Remove a lock whose owner is dead. True if the lock is gone now."""
    owner = _read_owner(path)
    if owner is None:
        return True
    if not owner:
        # Being written this instant, or garbage: judge by age.
        try:
            if time.time() - path.stat().st_mtime < 5:
                return False
        except FileNotFoundError:
            return True
    elif owner_alive(owner):
        return False
    aside = path.with_name(f"{path.name}.broken-{os.getpid()}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return True
    if _read_owner(aside) != owner:
        # Someone replaced the dead lock with a live one meanwhile: put it back.
        with suppress(FileExistsError):
            os.link(aside, path)
        os.unlink(aside)
        return False
    os.unlink(aside)
    if owner:
        BROKEN[str(path)] = owner
    warn(f"broke the {label} lock left by dead process {owner.get('pid', '?')}")
    return True


def _busy_message(path: Path, label: str) -> str:
    owner = _read_owner(path) or {}
    return (
        f"the {label} lock is held by pid {owner.get('pid', '?')} on {owner.get('host', '?')} "
        f"since {owner.get('since', '?')} ({owner.get('purpose', '?')}){_still_running(path, owner)}"
    )


def _still_running(path: Path, owner: dict[str, object]) -> str:
    """The command a dead holder left running, and the command that stops it."""
    alive = [a for a in agents_of(owner) if _pid_alive({**owner, **a})]
    if not alive or _pid_alive(owner):
        return ""
    agent = alive[0]
    group = agent.get("group", agent.get("pid"))
    workflow = _runner_workflow(path.parent, owner)
    kill = f"kill -TERM -- -{group}" if group == agent.get("pid") else f"kill -TERM {agent.get('pid')}"
    stop = (f"'{settle_command(workflow)}' ends what its dead run left" if workflow is not None else
            f"stop it with '{kill}'")
    return f"; its command, pid {agent.get('pid')} (process group {group}), still runs: {stop}"


def settle_command(workflow_id: str) -> str:
    """The one command that settles what a dead workflow run left [L3]."""
    return f"git harn workflow settle {workflow_id}"


def _runner_workflow(folder: Path, owner: dict[str, object]) -> str | None:
    """The workflow whose runner held a lock: the runner lease (``runner-*``)
    naming the same process."""
    for lease in folder.glob("runner-*.lock"):
        found = _read_owner(lease) or {}
        if found.get("pid") == owner.get("pid") and found.get("start") == owner.get("start"):
            workflow = found.get("workflowId")
            return workflow if isinstance(workflow, str) else None
    return None


def run_busy(repo: Repo, run_id: str) -> str | None:
    """What holds the run's lock now (its purpose: run, cleanup …), or None."""
    owner = _read_owner(run_lock_path(repo, run_id))
    if owner is None or not owner or not owner_alive(owner):
        return None
    return str(owner.get("purpose") or "busy")


def live_run_locks(repo: Repo) -> dict[str, dict[str, object]]:
    """Run id -> owner of every run lock a live process holds (or whose
    command still runs): the runs at work in this clone now. Only lock files
    are read, never the records."""
    found: dict[str, dict[str, object]] = {}
    with suppress(FileNotFoundError):
        for path in locks_dir(repo).glob(run_lock_name("*")):
            owner, run_id = _read_owner(path), run_of_lock(path.name)
            if owner and owner_alive(owner) and run_id is not None:
                found[run_id] = owner
    return found


def note_stage(path: Path, stage: str) -> None:
    """Say in the holder's lock what it is at (a workflow task's stage), so
    that whoever settles a killed run knows where each task stood."""
    owner = _read_owner(path)
    if not owner or owner.get("pid") != os.getpid():
        return
    owner["stage"] = stage
    atomic_write(path, json.dumps(owner).encode())


def note_agent(path: Path, pid: int) -> None:
    """Add a command the holder started (pid, start time, process group) to
    its lock, so the lock outlives a killed git-harn for as long as that
    command runs; the ones that ended meanwhile are dropped."""
    owner = _read_owner(path)
    if not owner or owner.get("pid") != os.getpid():
        return
    try:
        group = os.getpgid(pid)
    except OSError:
        group = pid
    alive = [a for a in agents_of(owner) if _pid_alive({**owner, **a})]
    owner.pop("agent", None)
    owner["agents"] = [*alive, {"pid": pid, "start": _process_start(pid), "group": group}]
    atomic_write(path, json.dumps(owner).encode())


# One waiting room per lock file in this process: a workflow's tasks are
# threads, and one that waits for a lock another task of the run holds (the
# merge lock, the worktrees lock) is woken the moment that task lets go,
# where polling the file would find it up to a poll late. Only the thread
# that holds the room tries the file, which another process may hold.
_ROOMS: dict[str, threading.RLock] = {}
_ROOMS_GUARD = threading.Lock()
POLL_SECONDS = 0.1  # between looks at a lock file another process holds


def _room(path: Path) -> threading.RLock:
    with _ROOMS_GUARD:
        return _ROOMS.setdefault(os.path.abspath(path), threading.RLock())


@contextmanager
def hold(path: Path, label: str, purpose: str, wait_seconds: float = 0.0,
         announce: bool = True) -> Iterator[None]:
    """Hold the lock at ``path`` for the block; Busy if another live process has it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_seconds
    waited_since: str | None = None  # the lock was busy: the wait is kept (clock.waiting)
    busy = ""
    room = _room(path)
    in_room = room.acquire(blocking=False)
    try:
        if not in_room and wait_seconds > 0:  # another thread of this process has it: wait to be woken
            waited_since, busy = precise_iso(), _busy_message(path, label)
            if announce:
                warn(f"waiting up to {wait_seconds:g}s: {busy}")
            in_room = room.acquire(timeout=wait_seconds)
        while not _try_create(path, purpose):
            if _break_if_dead(path, label):
                continue
            if time.monotonic() >= deadline:
                subject = "the merge lock" if label == "merge" else label
                raise Busy(f"{subject} is busy: {_busy_message(path, label)}")
            if waited_since is None:
                waited_since, busy = precise_iso(), _busy_message(path, label)
                if announce:
                    warn(f"waiting up to {wait_seconds:g}s: {busy}")
            time.sleep(POLL_SECONDS)
    except BaseException:
        if in_room:
            room.release()
        raise
    finally:
        if waited_since is not None:
            waited(f"{label.split()[0]}-lock", busy, waited_since)
    try:
        yield
    finally:
        try:
            _release(path)
        finally:
            if in_room:  # else the file came free as the wait ran out: held without the room
                room.release()


def _release(path: Path) -> None:
    """Remove the lock only while it is still ours: had it been broken and
    taken by another process, removing it would let a third one in."""
    owner = _read_owner(path)
    if owner and owner.get("pid") == os.getpid() and owner.get("start") == _process_start(os.getpid()):
        with suppress(FileNotFoundError):
            os.unlink(path)


@contextmanager
def hold_run(repo: Repo, run_id: str, purpose: str) -> Iterator[None]:
    with hold(run_lock_path(repo, run_id), f"run {run_id}", purpose):
        yield


@contextmanager
def hold_merge(repo: Repo, purpose: str, wait_seconds: float) -> Iterator[None]:
    with hold(locks_dir(repo) / "merge.lock", "merge", purpose, wait_seconds):
        yield


@contextmanager
def hold_worktrees(repo: Repo) -> Iterator[None]:
    """Serialise adding and removing worktrees: concurrent ``git worktree add``
    calls read each other's half-written admin folders and fail."""
    with hold(locks_dir(repo) / "worktrees.lock", "worktrees", "worktree add/remove", 120.0,
              announce=False):
        yield


# --- who is at work in a workspace, and whether it is provably dead ----------


def holder_mark() -> dict[str, str]:
    """This process, as a record's ``reclaiming`` or ``releasing`` mark names
    who is at work on the workspace: pid, start time, host, process group.
    git writes no pid into its lock files; this is what tells, later, that a
    lock file in the workspace's admin folder was left by a git this process
    ran (git runs in git-harn's process group)."""
    owner = process_owner()
    return {"pid": str(owner["pid"]), "start": str(owner["start"] or ""),
            "host": str(owner["host"]), "group": str(os.getpgrp())}


def holder_gone(mark: dict[str, str] | None) -> bool:
    """Whether the git-harn process a mark names is provably dead, and every
    git it ran with it: the process is gone (or its pid reused) on this host,
    and when it led its own process group, no process of that group lives.
    Without /proc nothing is provably dead."""
    if not mark or not Path("/proc").is_dir() or mark.get("host") != socket.gethostname():
        return False
    try:
        pid = int(mark.get("pid", ""))
        group = int(mark.get("group") or 0)
    except ValueError:
        return False
    if _pid_alive({"pid": pid, "start": mark.get("start"), "host": mark.get("host")}):
        return False
    return not (group == pid and group_members(group))


def _proc_entries() -> Iterator[int]:
    with suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                yield int(entry)


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from /proc."""
    found = []
    for pid in _proc_entries():
        try:
            raw = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = raw.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and fields[0] not in ("Z", "X") and fields[2] == str(pgid):
            found.append(pid)
    return found


def _ancestors() -> set[int]:
    """This process and the ones that started it (a ``git`` running
    ``git harn`` has its working folder wherever the operator is)."""
    found, pid = set(), os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def git_processes_in(folder: Path) -> list[int]:
    """git processes (but this one's own ancestors) whose working folder is
    ``folder`` or below it: a git that may hold a lock there. Processes of
    other users, which /proc does not show, are not seen."""
    top = os.path.realpath(folder)
    mine = _ancestors()
    found = []
    for pid in _proc_entries():
        if pid in mine:
            continue
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if name.startswith("git") and (cwd == top or cwd.startswith(top + os.sep)):
            found.append(pid)
    return found


def break_dead(path: Path) -> bool:
    """Remove the git-harn lock at ``path`` if its holder is dead (as the next
    command to take it would, with the same warning); True if it is gone now."""
    return _break_if_dead(path, path.name.removesuffix(".lock"))
