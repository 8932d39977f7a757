"""Validation evidence: run the gate commands on a branch tip and note the outcome.

The commands come from git config ``harn.gate`` (multi-valued, each value
split like a shell splits words, never run by one) or else from ``[gates]
commands`` in ``.harn/workflow.toml`` as committed at the BASE revision:
the task branch's copy is never read, because the agent under judgement
could have edited it. The outcome is a ``gates`` member of the JSON note on
the exact tip commit; evidence counts only for that commit.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from git_harn.clock import now_iso
from git_harn.errors import BadInput, GitFailure
from git_harn.files import loads_json, private_dir
from git_harn.git import Oid, Repo
from git_harn.git.checkout import reset_scratch
from git_harn.git.env import child_env
from git_harn.git.identity import host_name
from git_harn.git.worktrees import add_detached, prune_registration, registered_worktrees, remove_scratch
from git_harn.notices import info
from git_harn.proc import run_bounded, split_command, tail
from git_harn.results import Result
from git_harn.store import mac, notes
from git_harn.store.locks import hold_worktrees, owner_alive, process_owner
from git_harn.tasks.branches import Base, Branch, resolve_base, resolve_branch
from git_harn.tasks.config import (
    WORKFLOW_FILE,
    configured_env_names,
    gate_argv_lists,
    gate_env_names,
    parse_toml,
    settings_at,
)
from git_harn.text import jsonable
from git_harn.workspace import sandbox as sandboxing

DEFAULT_TIMEOUT = 900
NOTE_KIND = "gates"


@dataclass
class GateOutcome:
    argv: list[str]
    exitCode: int | None
    timedOut: bool
    seconds: float
    outputTail: str
    error: str | None = None


@dataclass
class GatesResult(Result):
    SCHEMA: ClassVar[str] = "gates-result"

    branch: str
    commit: str
    base: dict[str, str]
    source: str
    where: str  # always "temporary" now; "worktree" may appear in notes written by older versions
    passed: bool
    startedAt: str
    finishedAt: str
    host: str
    commands: list[GateOutcome] = field(default_factory=list)
    schemaVersion: int = 1

    @property
    def outcome(self) -> str:
        return "gates-passed" if self.passed else "gates-failed"


def gate_commands(repo: Repo, base: Base) -> tuple[list[list[str]], str]:
    """(argv lists, where they came from). git config wins over the file."""
    configured = repo.config_all("harn.gate")
    if configured:
        return [split_command(line, "git config harn.gate") for line in configured], "git config harn.gate"
    raw = _file_at(repo, base.oid, WORKFLOW_FILE)
    if raw is None:
        return [], f"{WORKFLOW_FILE} (absent at {base.rev})"
    where = f"{WORKFLOW_FILE} at {base.rev}"
    commands = gate_argv_lists(parse_toml(raw, where), where)
    return commands, f"{where} ({str(base.oid)[:12]})"


def gate_secrets(repo: Repo, base: Base) -> tuple[str, ...]:
    """The secret-looking variables the gates may have: git config
    ``harn.gateEnv`` (multi-valued) and ``[gates] env`` at the base."""
    names = configured_env_names(repo, "harn.gateEnv")
    raw = _file_at(repo, base.oid, WORKFLOW_FILE)
    if raw is not None:
        where = f"{WORKFLOW_FILE} at {base.rev}"
        names += gate_env_names(parse_toml(raw, where), where)
    return tuple(dict.fromkeys(names))


def _file_at(repo: Repo, commit: Oid, path: str) -> bytes | None:
    return repo.read_file(commit, path)


def gate_timeout(repo: Repo, given: float | None) -> float:
    timeout = given if given is not None else repo.config_int("harn.gateTimeout", DEFAULT_TIMEOUT)
    if timeout <= 0:
        raise BadInput("the gate timeout must be a positive number of seconds")
    return float(timeout)


def gates_run(repo: Repo, branch: str, base: str | None, timeout: float | None) -> GatesResult:
    """``git harn gates run``: inputs checked, then the gates on the tip, in the sandbox
    the operator's config or the base's ``.harn/workflow.toml`` asks for."""
    resolved = resolve_base(repo, base)
    return run_gates(repo, resolve_branch(repo, branch), resolved, gate_timeout(repo, timeout),
                     policy=gate_policy(repo, resolved))


def gate_policy(repo: Repo, base: Base) -> sandboxing.Policy:
    """The sandbox of ``git harn gates run``: as a workflow run on ``base`` has it."""
    settings = settings_at(repo, base.oid, base.rev)
    asked = sandboxing.Asked() if settings is None else sandboxing.Asked(
        None, settings.sandbox, settings.gateNetwork, settings.stageDiskLimit, settings.stageProcessLimit)
    return sandboxing.policy_of(repo, asked)


def run_gates(repo: Repo, branch: Branch, base: Base, timeout: float,
              on_start: Callable[[int], None] | None = None,
              checkouts: GateCheckouts | None = None, policy: sandboxing.Policy | None = None) -> GatesResult:
    """Run every gate command on the branch tip and note the outcome on it.
    ``on_start`` gets each command's process group (so a caller can stop it);
    ``checkouts``: a caller's kept checkouts, else one made and removed here."""
    commands, source = gate_commands(repo, base)
    if not commands:
        raise BadInput(f"no gate commands configured (git config harn.gate, or [gates] commands in "
                       f"{WORKFLOW_FILE} at {base.rev})")
    own = checkouts is None
    kept = GateCheckouts(repo) if checkouts is None else checkouts
    try:
        return _run_in(repo, branch, base, timeout, on_start, kept, commands, source, policy)
    finally:
        if own:
            kept.close()


def _run_in(repo: Repo, branch: Branch, base: Base, timeout: float, on_start: Callable[[int], None] | None,
            checkouts: GateCheckouts, commands: list[list[str]], source: str,
            policy: sandboxing.Policy | None = None) -> GatesResult:
    started = now_iso()
    with checkouts.checkout(branch.tip) as (where, path):
        # The gates run the code under judgement: no secret unless [gates] env names it.
        env = child_env({"HARN_GATE_COMMIT": str(branch.tip), "HARN_GATE_BRANCH": branch.name},
                        gate_secrets(repo, base))
        room = _gate_room(repo, path, policy)
        outcomes = []
        for n, argv in enumerate(commands):
            if n:  # each gate judges the tip as committed, not what the last one (or anyone) left [T4]
                reset_scratch(path, branch.tip)
            outcomes.append(_run_one(argv, path, timeout, env, on_start, policy, room))
    result = GatesResult(
        branch=branch.name, commit=str(branch.tip), base={"rev": base.rev, "oid": str(base.oid)},
        source=source, where=where, passed=all(o.exitCode == 0 for o in outcomes),
        startedAt=started, finishedAt=now_iso(), host=host_name(repo), commands=outcomes)
    notes.merge_signed(repo, branch.tip, NOTE_KIND, _as_note(result))
    return result


def _gate_room(repo: Repo, checkout: Path, policy: sandboxing.Policy | None) -> sandboxing.Room | None:
    """What a gate may write under the sandbox: its own checkout (network per ``harn.gateNetwork``)."""
    if policy is None or not policy.active:
        return None
    shown = [p for p in (repo.workdir, repo.common_dir) if p is not None]
    return sandboxing.gate_room(checkout, shown, policy.gateNetwork, policy.writable)


def _run_one(argv: list[str], path: Path, timeout: float, env: dict[str, str],
             on_start: Callable[[int], None] | None = None, policy: sandboxing.Policy | None = None,
             room: sandboxing.Room | None = None) -> GateOutcome:
    run = sandboxing.confine(policy, room, argv, env, path)
    done = run_bounded(run, path, timeout=timeout, env=env, on_start=on_start)
    if sandboxing.bwrapped(policy, run, argv):
        done.exit_code = sandboxing.as_unconfined(done.exit_code)
    output = tail(done.stdout + done.stderr)
    error = done.start_error or (f"timed out after {timeout:g}s" if done.timed_out else None)
    return GateOutcome(list(argv), done.exit_code, done.timed_out, round(done.seconds, 3), output, error)


def _as_note(result: GatesResult) -> dict[str, Any]:
    note: dict[str, Any] = jsonable(result)
    return note


SCRATCH_PREFIX = "git-harn-gates-"
OWNER_FILE = "owner.json"


def abandoned_checkouts(repo: Repo) -> list[tuple[Path, dict[str, Any]]]:
    """The holder folders of the scratch checkouts a killed ``gates run`` or
    workflow run left behind, with their owner: ours by name, registered
    as worktrees, with an owner file naming a process that is gone."""
    found = []
    for path in registered_worktrees(repo):
        holder = path.parent
        if path.name != "tree" or not holder.name.startswith(SCRATCH_PREFIX):
            continue
        try:
            owner = loads_json((holder / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not provably ours and abandoned: leave it
        if isinstance(owner, dict) and not owner_alive(owner):
            found.append((holder, owner))
    return found


def sweep_abandoned_checkouts(repo: Repo) -> list[str]:
    """Remove the scratch checkouts dead processes left [P6]; the holder
    folders removed."""
    gone = []
    for holder, _ in abandoned_checkouts(repo):
        _remove_checkout(repo, holder, holder / "tree")
        gone.append(str(holder))
    return gone


def _new_checkout(repo: Repo, tip: Oid, under: Path | None = None) -> tuple[Path, Path]:
    """(its holder folder, the checkout): a detached checkout of ``tip`` in a
    folder of its own (0700, a random name; under ``under``, a run's private
    folder, when given, so it is no name in the shared temp folder), with an
    owner file that names this process, so that a sweep removes it once this
    process is gone [P6]."""
    holder = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=private_dir(under) if under is not None else None))
    checkout = holder / "tree"
    try:
        (holder / OWNER_FILE).write_text(json.dumps(process_owner()))
        with hold_worktrees(repo):
            add_detached(repo, checkout, tip)
    except BaseException:
        _remove_checkout(repo, holder, checkout)
        raise
    return holder, checkout


class GateCheckouts:
    """Detached checkouts of the tip the gates run in, never the agent's own
    worktree, even when it is clean at the tip: ignored files,
    assume-unchanged or skip-worktree entries and other local state there
    would reach the gates, and the evidence must be about the tip alone.

    One ``gates run`` makes one and removes it; a workflow run keeps its own
    from one gate run to the next: a checkout in use is one thread's; a free one is made an exact
    checkout of the next tip (``reset_scratch``: its index and worktree state
    dropped, every tracked file written, all else removed), where a new
    checkout cost a ``git worktree add`` and a ``git worktree remove`` a task.
    ``close`` removes them; a killed run's are swept by their owner file."""

    def __init__(self, repo: Repo, under: Path | None = None) -> None:
        self._repo = repo
        self._under = under  # a run's private folder to hold them (None: the temp folder)
        self._lock = threading.Lock()
        self._free: list[tuple[Path, Path]] = []
        self._made: list[tuple[Path, Path]] = []
        sweep_abandoned_checkouts(repo)

    @contextlib.contextmanager
    def checkout(self, tip: Oid) -> Iterator[tuple[str, Path]]:
        held = self._take(tip)
        try:
            yield "temporary", held[1]
        finally:
            with self._lock:
                self._free.append(held)

    def _take(self, tip: Oid) -> tuple[Path, Path]:
        with self._lock:
            held = self._free.pop() if self._free else None
        if held is not None:
            try:
                reset_scratch(held[1], tip)
                return held
            except (GitFailure, OSError) as exc:
                # what a gate left there (a lock file of a git it ran, say)
                # stops git: that checkout goes, and a new one takes its place
                info(f"the gates' checkout {held[1]} could not be reused ({exc}); making a new one")
                self._forget(held)
        made = _new_checkout(self._repo, tip, self._under)
        with self._lock:
            self._made.append(made)
        return made

    def _forget(self, held: tuple[Path, Path]) -> None:
        with self._lock:
            self._made.remove(held)
        _remove_checkout(self._repo, *held)

    def close(self) -> None:
        with self._lock:
            made, self._made, self._free = self._made, [], []
        for holder, checkout in made:
            _remove_checkout(self._repo, holder, checkout)


def _remove_checkout(repo: Repo, holder: Path, checkout: Path) -> None:
    """Our own detached checkout of a committed tip: nothing in it is the only copy of anything."""
    with hold_worktrees(repo):
        remove_scratch(repo, checkout)
        shutil.rmtree(holder, ignore_errors=True)
        prune_registration(repo, checkout)


@dataclass
class TipGates:
    """What the gates note on a tip is worth here."""

    note: dict[str, Any] | None = None  # the note, believed: well formed, for this tip, its MAC verified
    problem: str | None = None  # why a gates note there was disregarded
    unverified: bool = False  # a well-formed note for this tip whose MAC does not verify here


def tip_evidence(repo: Repo, tip: Oid) -> TipGates:
    """The gates note recorded on exactly ``tip``, believed only when its MAC
    verifies on this machine [P5]. Notes are plain refs anyone can write: one
    that breaks ``schemas/gates-result.schema.json`` counts as no evidence;
    a well-formed one without a MAC this machine made is unverified (the
    gates run again wherever git-harn would have used it)."""
    value = notes.read_note(repo, tip).get(NOTE_KIND)
    if value is None:
        return TipGates()
    from git_harn.schemas import schema_errors  # jsonschema only when a note is there

    short = str(tip)[:12]
    problems = schema_errors(value, "gates-result")
    if problems:
        return TipGates(problem=f"the gates note on {short} is malformed ({problems[0]})")
    if value["commit"] != str(tip):
        return TipGates(problem=f"the gates note on {short} was recorded for {value['commit'][:12]}")
    why = mac.unverified(NOTE_KIND, str(tip), value)
    if why is not None:
        return TipGates(problem=f"the gates note on {short} is unverified here: {why}", unverified=True)
    return TipGates(note=mac.without_mac(value))
