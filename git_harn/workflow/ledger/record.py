"""Workflow records: one commit chain per run under refs/harnery/workflows/<id>
(the chain kind is ``store/workflows``).

Each event is a commit whose tree holds ``workflow.json`` (the result so
far) and whose message is ``<event>: <summary>`` with ``Harnery-Workflow:``,
``Harnery-Event:``, ``Harnery-State:`` and ``Harnery-Host:`` trailers,
written with CAS against the tip that was read [P3]. Like run records they
travel with fetch and push (``git harn sync``, which merges them with the
runner's host as the record's owner), so the stored result names the
operator's home folder as ``~``: a path under it says where, not whose.

The record names its runner (``runner``: host, clone, pid, process start
time, process group) and carries a heartbeat, renewed by every event and,
when nothing else happened, every ``journal.HEARTBEAT_SECONDS`` (the
events are written by ``ledger/journal.py``). A record still
``workflow-running`` whose runner is provably dead on this host (pid gone,
or reused: another start time) is shown ``interrupted (runner gone)``;
another host's whose heartbeat is older than ``harn.workflowStaleAfter``
seconds is shown ``stale`` [L3].
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from git_harn.clock import epoch_of, now_iso
from git_harn.errors import BadInput, TooLarge
from git_harn.files import loads_json, read_regular_file
from git_harn.git import Oid, Repo
from git_harn.git.branches import commit_time
from git_harn.git.identity import host_name
from git_harn.store import lease as leases
from git_harn.store import workflows as store
from git_harn.store.chain import Unreadable
from git_harn.store.clone import this_clone
from git_harn.store.locks import settle_command
from git_harn.store.procs import judgeable, pid_dead
from git_harn.tasks.roadmap import work_key
from git_harn.workflow.model.result import (
    IN_PROGRESS,
    INTERRUPTED,
    Skipped,
    StoredWorkflow,
    TaskResult,
    WorkflowList,
    WorkflowResult,
)
from git_harn.workflow.model.state import RESUME_FLAGS
from git_harn.workspace.resume import workspaces_on

DEFAULT_STALE_AFTER = 1800.0  # harn.workflowStaleAfter: another host's runner silent this long is stale
STALE_AFTER_KEY = "harn.workflowStaleAfter"
# what list and show say of a record still marked running
LIVE, GONE, STALE, UNKNOWN = "live", "gone", "stale", "unknown"


def new_workflow_id() -> str:
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"wf-{stamp}{int(now * 1000) % 1000:03d}Z-{secrets.token_hex(3)}"


def workflow_ref(workflow_id: str) -> str:
    return store.WORKFLOWS_PREFIX + workflow_id


def runner_fields(repo: Repo, owner: dict[str, Any]) -> dict[str, Any]:
    """The runner as its record names it: what proves it dead or alive later."""
    clone = this_clone(repo)
    now = now_iso()
    return {"host": host_name(repo), "clone": clone["id"], "commonDir": clone["commonDir"],
            "pid": owner["pid"], "start": owner["start"], "group": owner["group"],
            "startedAt": now, "heartbeatAt": now}


def run_folder(repo: Repo, workflow_id: str) -> Path:
    """Where a run keeps its prompts, reports, logs, stage times and page."""
    return repo.common_dir / "harnery" / "workflow" / workflow_id


# --- each stage's span as it ends, for a run killed before it could record it ---

STAGE_TIMES = ".stage-times.jsonl"  # in the run folder (a dot: no stage file to link to)
_STAGE_TIMES_LIMIT = 64 * 1024 * 1024
_ALIVE_EVERY = 1.0  # seconds: how often the runner marks the file as its last sign of life


class StageTimes:
    """The timelines of a run's running tasks, one line per stage start
    (which is the previous stage's end): the task's whole timeline so far.
    A record event is written when a task starts and ends, never per stage
    (a record commit each); a runner killed mid-task (SIGKILL, power) leaves
    its stages here. The runner also marks the file every second, so its
    time says when the runner was last alive: where the stage it was in
    ends on the page, and in the record once the run is settled."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / STAGE_TIMES
        self._lock = threading.Lock()
        self._marked = 0.0

    def note(self, run_id: str, timeline: list[dict[str, Any]]) -> None:
        line = json.dumps({"runId": run_id, "timeline": timeline}, sort_keys=True, separators=(",", ":")) + "\n"
        with self._lock:  # one line whole, however long, whatever the threads
            fd = self._own_file()
            if fd is None:
                return  # the span is lost (the record keeps the task's timeline): the run goes on
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)

    def _own_file(self) -> int | None:
        """The file opened for appending, only while it is a file of its own
        (regular, one link): the run folder is in the shared git dir, where
        a stage may put a named pipe (which would block this open for ever:
        O_NONBLOCK), a hard link to a file of the operator's, or a folder.
        Such a thing is removed and the file made anew; None when it cannot be."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        for fresh in (False, True):
            try:
                fd = os.open(self.path, flags | os.O_CREAT | (os.O_EXCL if fresh else 0), 0o600)
            except OSError:
                fd = None
            if fd is not None:
                found = os.fstat(fd)
                if stat.S_ISREG(found.st_mode) and found.st_nlink == 1:
                    return fd
                os.close(fd)
            if not fresh:
                with suppress(OSError):
                    os.unlink(self.path)
        return None

    def alive(self) -> None:
        """Mark the file (at most every second): the runner lives now."""
        now = time.monotonic()
        if now - self._marked < _ALIVE_EVERY:
            return
        self._marked = now
        with suppress(OSError, NotImplementedError):  # no stage has started yet: nothing to mark
            os.utime(self.path, follow_symlinks=False)


def stage_times(folder: Path) -> tuple[dict[str, list[dict[str, Any]]], float | None]:
    """run id -> the timeline its last line kept, and when the runner was
    last alive (the file's time); a line cut by a kill is left out."""
    path = folder / STAGE_TIMES
    try:
        raw = read_regular_file(path, _STAGE_TIMES_LIMIT)
        marked = os.lstat(path).st_mtime
    except (OSError, TooLarge):
        return {}, None
    kept: dict[str, list[dict[str, Any]]] = {}
    for line in (raw or b"").splitlines():
        try:
            entry = loads_json(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("runId"), str) and isinstance(entry.get("timeline"), list):
            kept[entry["runId"]] = [span for span in entry["timeline"] if isinstance(span, dict)]
    return kept, marked


def with_stage_times(body: dict[str, Any], folder: Path) -> tuple[dict[str, Any], float | None]:
    """A record still running as the run folder knows it better: each task
    not ended gets the timeline its runner last kept there (when longer
    than the record's). Also when the runner was last alive (None: the
    folder keeps nothing, or the record ended)."""
    if body.get("outcome") != IN_PROGRESS:
        return body, None
    kept, marked = stage_times(folder)
    if not kept:
        return body, None
    tasks = []
    for task in body.get("tasks") or []:
        if isinstance(task, dict) and task.get("finishedAt") is None:
            spans = kept.get(str(task.get("runId")))
            if spans is not None and len(spans) > len(task.get("timeline") or []):
                task = {**task, "timeline": spans}
        tasks.append(task)
    return {**body, "tasks": tasks}, marked


@dataclass
class Stored:
    workflowId: str
    body: dict[str, Any]
    tip: Oid
    time: int


_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def read(repo: Repo, workflow_id: str) -> Stored:
    if not _ID.fullmatch(workflow_id) or ".." in workflow_id or workflow_id.endswith((".lock", ".")):
        raise BadInput(f"invalid workflow id {workflow_id!r}")
    found = store.read(repo, workflow_id)
    if found is None:
        raise BadInput(f"unknown workflow id: {workflow_id}")
    return Stored(workflow_id, found.record, found.tip, commit_time(repo, found.tip))


def list_all(repo: Repo) -> Iterator[Stored | tuple[str, str]]:
    """Every record (oldest first by id); an unreadable one as (ref, error)."""
    for found in store.list_all(repo):
        if isinstance(found, Unreadable):
            yield found.ref, found.error
        else:
            workflow_id = str(found.record["workflowId"])
            yield Stored(workflow_id, found.record, found.tip, commit_time(repo, found.tip))


def latest(repo: Repo) -> Stored:
    found = [s for s in list_all(repo) if isinstance(s, Stored)]
    if not found:
        raise BadInput("no workflow records yet (git harn workflow run makes one)")
    return max(found, key=lambda s: (str(s.body.get("startedAt", "")), s.workflowId))


def events(repo: Repo, workflow_id: str) -> list[dict[str, Any]]:
    """The record's events, newest first: both sides of a chain that sync merged."""
    return [{"commit": str(e.oid), "time": e.time, "event": e.trailers.get("Harnery-Event", ""),
             "subject": e.subject} for e in store.history(repo, workflow_id)]


# --- a stored record read back as typed values (what settling and reclaim use) ----------


@dataclass(frozen=True)
class Runner:
    """The runner a record names: which process ran the run, on which host, in which clone."""

    pid: int | None
    start: str | None  # when that process started, so a reused pid is never taken for it
    host: str | None
    clone: str | None  # the id of the clone it ran in (store.clone.this_clone)
    common_dir: str | None
    heartbeat_at: str | None = None  # when it last said it was alive

    @classmethod
    def of(cls, doc: object) -> Runner | None:
        """None: the record was written before records named their runner."""
        if not isinstance(doc, dict):
            return None
        return cls(_int(doc.get("pid")), _text(doc.get("start")), _text(doc.get("host")), _text(doc.get("clone")),
                   _text(doc.get("commonDir")), _text(doc.get("heartbeatAt")))


@dataclass(frozen=True)
class RecordedTask:
    """A task of a record that made a workspace (it has a run id)."""

    task_id: str
    run_id: str  # its workspace's run
    branch: str | None
    addendum: int | None  # addendum <n> of the task, or None

    @property
    def key(self) -> str:
        return work_key(self.task_id, self.addendum)


@dataclass(frozen=True)
class RecordedRun:
    """A stored record as what settles it reads: each member checked once, here,
    so nothing past this edge asks a dict whether a member is there or what type it is."""

    workflow_id: str
    outcome: str | None
    remote: str | None
    base: str | None
    with_claims: bool  # it ran with claims on its remote
    runner: Runner | None
    tasks: tuple[RecordedTask, ...]  # one per workspace, first recorded first
    claims_held: tuple[str, ...] = ()  # the claims it made and had not released, as it last recorded

    @property
    def in_progress(self) -> bool:
        return self.outcome == IN_PROGRESS

    @classmethod
    def of(cls, stored: Stored) -> RecordedRun:
        body = stored.body
        settings = body.get("settings")
        with_claims = isinstance(settings, dict) and bool(settings.get("claims"))
        return cls(stored.workflowId, _text(body.get("outcome")), _text(body.get("remote")),
                   _text(body.get("base")), with_claims, Runner.of(body.get("runner")), _recorded_tasks(body),
                   _claims_held(body.get("claims")))


def _recorded_tasks(body: dict[str, Any]) -> tuple[RecordedTask, ...]:
    seen: set[str] = set()
    found = []
    for task in body.get("tasks") or []:
        if not isinstance(task, dict):
            continue
        task_id, run_id = task.get("taskId"), task.get("runId")
        if isinstance(task_id, str) and isinstance(run_id, str) and run_id not in seen:
            seen.add(run_id)
            found.append(RecordedTask(task_id, run_id, _text(task.get("branch")), _int(task.get("addendum"))))
    return tuple(found)


def _claims_held(claims: object) -> tuple[str, ...]:
    """The claims made and neither released nor kept (workflow.claims)."""
    if not isinstance(claims, dict):
        return ()
    done = {str(t) for t in claims.get("released") or []}
    done |= {str(k.get("taskId")) for k in claims.get("kept") or [] if isinstance(k, dict)}
    return tuple(str(t) for t in claims.get("made") or [] if str(t) not in done)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- a stored record as a result again (to close it) ----------------------------


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def load_result(body: dict[str, Any]) -> WorkflowResult:
    """The stored document as a result, so that a closing event is written by
    the same code as every other (members this version does not know stay out)."""
    fields = _known(WorkflowResult, body)
    fields["tasks"] = [TaskResult(**_known(TaskResult, t)) for t in body.get("tasks") or []
                       if isinstance(t, dict)]
    fields["skipped"] = [Skipped(**_known(Skipped, s)) for s in body.get("skipped") or [] if isinstance(s, dict)]
    return WorkflowResult(**fields)


# --- is its runner alive? ----------------------------------------------------------


def stale_after(repo: Repo, given: float | None) -> float:
    if given is not None:
        if given <= 0:
            raise BadInput("--stale-after must be a positive number of seconds")
        return given
    return float(repo.config_int(STALE_AFTER_KEY, int(DEFAULT_STALE_AFTER)))


class Liveness:
    """Whether the runners of records still marked running are alive, read once
    for a listing: this clone's runner leases, this host's processes, and
    other hosts' heartbeats."""

    def __init__(self, repo: Repo, stale_after: float) -> None:
        self.here = host_name(repo)
        self.stale_after = stale_after
        self.leases = {left.workflow_id: left for left in leases.leases(repo)}

    def of(self, body: dict[str, Any]) -> str | None:
        """None for a record that ended; else live, gone, stale or unknown."""
        if body.get("outcome") != IN_PROGRESS:
            return None
        runner = Runner.of(body.get("runner"))
        if runner is None:
            return UNKNOWN  # written before records named their runner
        held = self.leases.get(str(body.get("workflowId")))
        if held is not None:
            return GONE if held.dead() else LIVE
        if pid_dead(runner.pid, runner.start, runner.host, self.here):
            return GONE
        if judgeable(runner.host, self.here):
            return LIVE
        beat = epoch_of(runner.heartbeat_at)
        return STALE if beat is None or time.time() - beat > self.stale_after else LIVE



def settle_step(body: dict[str, Any]) -> str | None:
    """What to run for a record whose runner is gone: the command that settles it."""
    if body.get("runnerState") != GONE:
        return None
    return settle_command(str(body["workflowId"]))


def outcome_text(outcome: object, state: object, heartbeat: object) -> str:
    """The OUTCOME a person reads: the stored one, or what became of its runner."""
    if state == GONE:
        return "interrupted (runner gone)"
    if state == STALE:
        beat = epoch_of(heartbeat)
        age = "ever" if beat is None else f"{(time.time() - beat) / 60:.0f} min"
        return f"stale (no heartbeat for {age})"
    return str(outcome or "")


# --- what list and show read ----------------------------------------------------------


def listing(repo: Repo, stale: float | None) -> WorkflowList:
    """``workflow list``: every record, and for one still marked running,
    whether its runner is alive (``runnerState``)."""
    result = WorkflowList()
    alive = Liveness(repo, stale_after(repo, stale))
    for item in list_all(repo):
        if not isinstance(item, Stored):
            result.unreadable.append({"ref": item[0], "error": item[1]})
            continue
        body = derived(item.body, alive.of(item.body))
        result.workflows.append({
            "workflowId": item.workflowId, "startedAt": str(body.get("startedAt", "")),
            "finishedAt": body.get("finishedAt"), "base": str(body.get("base", "")),
            "remote": str(body.get("remote", "")), "outcome": str(body.get("outcome", "")),
            "recordedOutcome": body["recordedOutcome"], "runnerState": body["runnerState"],
            "heartbeatAt": (body.get("runner") or {}).get("heartbeatAt"),
            "summary": str(body.get("summary", "")), "recordedSummary": body["recordedSummary"],
            "usage": body.get("usage")})
    result.workflows.sort(key=lambda w: (w["startedAt"], w["workflowId"]))
    return result


def shown(repo: Repo, workflow_id: str | None, stale: float | None) -> StoredWorkflow:
    """``workflow show``: the record (default: the newest) and its events,
    with ``runnerState`` as ``list`` gives it."""
    stored = read(repo, workflow_id) if workflow_id else latest(repo)
    alive = Liveness(repo, stale_after(repo, stale))
    body = derived(stored.body, alive.of(stored.body))
    body["tasks"] = [_with_next_now(repo, task) for task in body.get("tasks") or []]
    return StoredWorkflow(body, events(repo, stored.workflowId))


def _acts_on_branch(command: str) -> bool:
    """Whether a task's advised step needs its branch (or a workspace on it):
    discard, integrate, a resume of partial branches (``state.advice``). A
    plain relaunch needs nothing and is never taken for done."""
    words = command.split()
    return words[2:4] == ["workflow", "discard"] or words[2:3] == ["integrate"] or RESUME_FLAGS[0] in words


def _with_next_now(repo: Repo, task: Any) -> Any:
    """A task as ``show`` gives it: its recorded next step, unless that step
    acts on a branch that is gone with every workspace on it (the step was
    done, or something else retired the branch): then ``next`` says so and
    ``recordedNext`` keeps what the record advised."""
    if not isinstance(task, dict):
        return task
    step, branch = task.get("next") or {}, task.get("branch")
    command = step.get("command") if isinstance(step, dict) else None
    if not (isinstance(command, str) and isinstance(branch, str) and branch and _acts_on_branch(command)):
        return task
    if repo.ref_oid(f"refs/heads/{branch}") is not None or workspaces_on(repo, branch):
        return task
    return {**task, "recordedNext": step,
            "next": {"command": None, "why": f"{branch} is gone, with every workspace on it: the recorded "
                                             f"step ({command}) was done, or something else retired it"}}


def derived(body: dict[str, Any], state: str | None) -> dict[str, Any]:
    """The record as list and show give it: ``runnerState``, and for a
    record still marked running whose runner is provably dead, the outcome
    and summary it has in fact (``workflow-interrupted``, runner gone), so
    that a dashboard reading ``outcome`` never shows it running for ever
    [L3]. What the record says is kept in ``recordedOutcome`` and
    ``recordedSummary``; ``workflow settle`` (the next step) records it."""
    found = dict(body)
    found["runnerState"] = state
    found["recordedOutcome"] = str(body.get("outcome", ""))
    found["recordedSummary"] = str(body.get("summary", ""))
    if state == GONE:
        found["outcome"] = INTERRUPTED
        found["summary"] = (f"{outcome_text(body.get('outcome'), state, None)}; "
                            f"next: {settle_command(str(body.get('workflowId', '')))}")
    return found
