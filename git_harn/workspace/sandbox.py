"""The sandbox agents and gates run in, and the bounds of one stage [T3].

``harn.sandbox`` is ``auto`` (the default: bubblewrap when ``bwrap`` runs on
this machine, else none), ``bwrap`` (bubblewrap or the run does not start)
or ``off``. Under bubblewrap the whole file system is read-only except what
the stage must write (``agent_paths``, ``gate_paths``); ``/tmp`` is a
private tmpfs that still shows, read-only, whatever the stage needs from
under the real ``/tmp``; the stage gets a PID namespace of its own, so
nothing it starts outlives it, and no capability, so it cannot remount
what is read-only even as root.

Like every setting that weakens a guard, these are read from the
operator's own git config (system, global, ``git -c``), the base commit's
``.harn/workflow.toml`` or the command line, never from the repository's
own config, which an agent in a worktree can write.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from git_harn.errors import BadInput
from git_harn.git import Repo
from git_harn.git.config import as_bool
from git_harn.store import mac

AUTO, BWRAP, OFF = "auto", "bwrap", "off"
MODES = (AUTO, BWRAP, OFF)
DEFAULT_MODE = AUTO
BWRAP_PROGRAM = "bwrap"
# The paths the coding agent CLIs keep their state in: writable inside the sandbox when they exist.
AGENT_STATE = ("~/.claude", "~/.claude.json", "~/.codex")
# RLIMIT_NPROC counts every process (and thread) of the user, the stage's and all else: a bound on a
# fork bomb, high enough that a desktop's own processes leave a stage room to work.
DEFAULT_PROCESS_LIMIT = 8192
DEFAULT_DISK_LIMIT = 10 << 30  # bytes a worktree may hold after a stage
TMP = Path("/tmp")
PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Policy:
    """How this run confines its stages: the setting, what it came to, and the bounds."""

    mode: str = DEFAULT_MODE  # the setting: auto | bwrap | off
    bwrap: str | None = None  # the bubblewrap that runs here, when used
    why: str = ""  # when not used: why not (one line)
    gateNetwork: bool = True
    processLimit: int = DEFAULT_PROCESS_LIMIT
    diskLimit: int = DEFAULT_DISK_LIMIT
    writable: tuple[str, ...] = ()  # harn.sandboxWritable: paths every stage may write

    @property
    def active(self) -> bool:
        return self.bwrap is not None

    def words(self) -> str:
        """What the stages run in, for ``workflow check`` and the run's start."""
        if self.active:
            net = "" if self.gateNetwork else ", gates without network"
            return f"bubblewrap ({self.bwrap}{net})"
        return f"none ({self.why})"

    def shown(self) -> dict[str, object]:
        return {"mode": self.mode, "active": self.active, "program": self.bwrap, "why": self.why or None,
                "gateNetwork": self.gateNetwork, "processLimit": self.processLimit, "diskLimit": self.diskLimit,
                "writable": list(self.writable)}

    def warning(self) -> str | None:
        """The one line a run starts with when its stages run unconfined, or None."""
        if self.active:
            return None
        return (f"agents and gates run without a sandbox ({self.why}): they can write anything "
                f"the operator can; see docs/security-and-permissions.md")


@functools.cache
def probe(program: str = BWRAP_PROGRAM) -> tuple[str | None, str]:
    """(the bubblewrap that runs here, why not): tried once per process with
    the very options a stage gets, so a kernel that refuses them says so here."""
    found = shutil.which(program)
    if found is None:
        return None, f"{program} is not installed (Debian: apt-get install bubblewrap)"
    argv = [found, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--unshare-pid", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "true"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{found} cannot run here: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"{found} cannot run here: {said[-1] if said else f'exit {done.returncode}'}"
    return found, ""


def decide(mode: str, gate_network: bool = True, process_limit: int = DEFAULT_PROCESS_LIMIT,
           disk_limit: int = DEFAULT_DISK_LIMIT, where: str = "harn.sandbox",
           writable: tuple[str, ...] = ()) -> Policy:
    """The policy for ``mode``; BadInput when bubblewrap was asked for and cannot run."""
    if mode not in MODES:
        raise BadInput(f"{where} must be one of {', '.join(MODES)}, not {mode!r}")
    found, why = (None, f"{where} = off") if mode == OFF else probe()
    if found is None and mode == BWRAP:
        raise BadInput(f"{where} = bwrap, but {why}")
    return Policy(mode, found, why, gate_network, process_limit, disk_limit, writable)


@dataclass(frozen=True)
class Asked:
    """What the command line and the base's ``.harn/workflow.toml`` say (None: nothing)."""

    flag: str | None = None  # --sandbox
    mode: str | None = None  # [workflow] sandbox
    gateNetwork: bool | None = None
    diskLimit: str | None = None
    processLimit: int | None = None


def policy_of(repo: Repo, asked: Asked) -> Policy:
    """The command line over the operator's git config over the base's file over
    the defaults; the repository's own config is never read [T1]."""
    configured = repo.operator_config("harn.sandbox")
    mode, where = ((asked.flag, "--sandbox") if asked.flag is not None
                   else (configured, "harn.sandbox") if configured is not None
                   else (asked.mode or DEFAULT_MODE, "workflow.sandbox"))
    net = repo.operator_config("harn.gateNetwork")
    gate_network = (as_bool("harn.gateNetwork", net) if net is not None
                    else asked.gateNetwork if asked.gateNetwork is not None else True)
    disk = repo.operator_config("harn.stageDiskLimit")
    disk_limit = (parse_size(disk, "harn.stageDiskLimit") if disk is not None
                  else parse_size(asked.diskLimit, "workflow.stageDiskLimit") if asked.diskLimit is not None
                  else DEFAULT_DISK_LIMIT)
    procs = repo.operator_config("harn.stageProcessLimit")
    if procs is not None and (not procs.isdigit() or int(procs) < 1):
        raise BadInput(f"harn.stageProcessLimit must be a positive number of processes, not {procs!r}")
    process_limit = int(procs) if procs is not None else asked.processLimit or DEFAULT_PROCESS_LIMIT
    writable = tuple(repo.operator_config_all("harn.sandboxWritable"))
    for path in writable:
        if not (path.startswith("/") or path.startswith("~/")):
            raise BadInput(f"harn.sandboxWritable must name absolute paths (or ~/...), not {path!r}")
    return decide(mode, gate_network, process_limit, disk_limit, where, writable)


def parse_size(value: str, where: str) -> int:
    """``10g``, ``512m``, ``4096``: a size as git writes one (k, m, g suffixes, 1024 each)."""
    text = value.strip().lower()
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) <= 0:
        raise BadInput(f"{where} must be a positive size such as 10g or 512m, not {value!r}")
    return int(digits) * scale


# --- what one stage may write -------------------------------------------------------------


@dataclass
class Room:
    """The paths of one stage: written where ``writable``, except ``sealed`` on top."""

    cwd: Path
    writable: list[Path] = field(default_factory=list)
    sealed: list[Path] = field(default_factory=list)  # read-only, though inside a writable path
    shown: list[Path] = field(default_factory=list)  # read-only, needed from under /tmp
    network: bool = True


def admin_folder(worktree: Path) -> Path | None:
    """The admin folder a linked worktree's ``.git`` file names (None: not a linked worktree)."""
    try:
        text = (worktree / ".git").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    named = Path(text.removeprefix("gitdir:").strip())
    return Path(os.path.normpath(named if named.is_absolute() else worktree / named))


def _checkout_room(checkout: Path, repo_paths: Iterable[Path]) -> Room:
    """A linked worktree writable, its ``.git`` file and its admin folder's pointers not."""
    room = Room(cwd=checkout, writable=[checkout], sealed=[checkout / ".git"], shown=list(repo_paths))
    admin = admin_folder(checkout)
    if admin is not None:
        room.writable.append(admin)
        room.sealed += [admin / "commondir", admin / "gitdir", admin / "config.worktree"]
    return room


def _expanded(paths: Iterable[str]) -> list[Path]:
    return [Path(os.path.expanduser(p)) for p in paths]


def agent_room(worktree: Path, common_dir: Path, repo_paths: Iterable[Path], report_folder: Path,
               extra_writable: Sequence[str] = ()) -> Room:
    """An agent's: its worktree and admin folder, the objects and the branches (never
    the config, hooks, info, packed-refs or any other ref), its report folder and the
    agent CLIs' state."""
    room = _checkout_room(worktree, repo_paths)
    logs = common_dir / "logs" / "refs" / "heads"
    logs.mkdir(parents=True, exist_ok=True)  # a first commit on a branch writes its reflog here
    room.writable += [common_dir / "objects", common_dir / "refs" / "heads", logs, report_folder]
    room.sealed.append(common_dir / "objects" / "info")
    room.writable += _expanded((*AGENT_STATE, *extra_writable))
    return room


def gate_room(checkout: Path, repo_paths: Iterable[Path], network: bool, extra_writable: Sequence[str] = ()) -> Room:
    """A gate's: its own checkout, and the network only when ``harn.gateNetwork`` allows it."""
    room = _checkout_room(checkout, repo_paths)
    room.writable += _expanded(extra_writable)
    room.network = network
    return room


# --- the bubblewrap command line --------------------------------------------------------


def _under_tmp(path: Path) -> bool:
    return path == TMP or TMP in path.parents


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _named_paths(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> list[Path]:
    """What the command and its environment name under /tmp: the program, its
    arguments that are paths, every path (or list of paths, like PATH) in a variable."""
    words = list(argv[1:]) + [part for value in env.values() for part in value.split(os.pathsep)]
    program = shutil.which(argv[0], path=env.get("PATH")) if os.sep not in argv[0] else str(cwd / argv[0])
    if program is not None:
        words.append(program)
    found = []
    for word in words:
        if word.startswith("/") and "\n" not in word:
            path = _real(Path(word))
            if _under_tmp(path) and path != TMP and path.exists():
                found.append(path)
    return found


def runnable(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> bool:
    """Whether ``argv[0]`` names a program that exists and may be run: otherwise
    the command is started unwrapped, to fail as a command that cannot start."""
    if os.sep in argv[0]:
        program = cwd / argv[0]
        return program.is_file() and os.access(program, os.X_OK)
    return shutil.which(argv[0], path=env.get("PATH")) is not None


def wrap(bwrap: str, room: Room, argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``argv`` run by bubblewrap in ``room``: everything read-only, a private /tmp
    that shows what the stage needs from the real one, then the writable paths,
    then the read-only ones inside them; mounts apply in this order."""
    out = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    shown = {_real(p) for p in room.shown} | set(_named_paths(argv, env, room.cwd))
    for path in sorted(p for p in shown if _under_tmp(p) and p.exists()):
        out += ["--ro-bind", str(path), str(path)]
    for path in sorted({_real(p) for p in room.writable if p.exists()}):
        out += ["--bind", str(path), str(path)]
    for path in sorted({_real(p) for p in room.sealed if os.path.lexists(p)}):
        out += ["--ro-bind", str(path), str(path)]
    # the evidence key: a stage that could read it could sign its own gates note [P5]
    out += ["--tmpfs", str(_real(mac.hidden_folder()))]
    if not room.network:
        out.append("--unshare-net")
    out += ["--unshare-pid", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--setenv", "TMPDIR", "/tmp", "--chdir", str(_real(room.cwd))]
    if "PYTHONPYCACHEPREFIX" in env:
        # A bytecode cache shared with git-harn must stay read-only (a .pyc planted there would run
        # in the host); read-only, every Python agent would compile its imports at each start.
        # Without it, Python reads the caches beside the sources, as it does by default.
        out += ["--unsetenv", "PYTHONPYCACHEPREFIX"]
    out += ["--", *argv]
    return out


def confine(policy: Policy | None, room: Room | None, argv: Sequence[str], env: Mapping[str, str],
            cwd: Path) -> list[str]:
    """The one place a stage's argv is put in the sandbox (``room``: when it is active) and
    under its process limit; unchanged when the program cannot be found, so that it fails to
    start as it would unconfined."""
    if policy is None or not runnable(argv, env, cwd):
        return list(argv)
    confined = wrap(policy.bwrap, room, argv, env) if policy.bwrap is not None and room is not None else list(argv)
    return limit_processes(confined, policy.processLimit)


def limit_processes(argv: Sequence[str], count: int) -> list[str]:
    """``argv`` run with ``RLIMIT_NPROC`` at ``count`` (never above this process's hard
    limit) by util-linux's ``prlimit``, which sets it and then executes ``argv`` in its
    place, before anything forks; without ``prlimit``, ``argv`` unchanged."""
    tool = prlimit_program()
    if tool is None:
        return list(argv)
    _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    bound = count if hard == resource.RLIM_INFINITY else min(count, hard)
    return [tool, f"--nproc={bound}:{bound}", "--", *argv]


@functools.cache
def prlimit_program() -> str | None:
    return shutil.which("prlimit")


def bwrapped(policy: Policy | None, argv: Sequence[str], original: Sequence[str]) -> bool:
    """Whether ``argv`` is ``original`` put under bubblewrap (its exit code then says a signal as 128+N)."""
    return policy is not None and policy.bwrap is not None and policy.bwrap in argv and list(argv) != list(original)


def as_unconfined(code: int | None) -> int | None:
    """The exit code of a confined command as it would be unconfined: bubblewrap
    exits 128+N for a command that signal N ended (as a shell says it), where
    the host's own child says -N; so a killed agent is still said to be killed."""
    if code is not None and 128 < code < 128 + 65:
        return 128 - code
    return code


# --- the disk a worktree holds ----------------------------------------------------------


def human(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"
