"""``git harn workflow watch``: a run in progress as it stands, read from
its record and its run folder, never from the runner's memory (the runner
may be another process, or on another machine: ``--sync``).

What a look reads is what changed since the last one (``Follower``): the
record's ref; on a new tip, its ``workflow.json`` and each task file whose
blob id changed (ids compared, no blob read for a task as it was), and the
commits between the two tips; and the run folder's stage-times file
(``ledger.record.StageTimes``: one line per stage start) from the offset
read to before. A look costs what changed and one tree entry per task,
never what the run wrote before: a night-long run is watched at the price
of its last second.

The record is written when a task starts and ends; a stage that starts
between is in the stage-times file first, so a task's stage, attempt and
time in it come from there when the file knows more (as ``workflow
report`` draws a run in progress). ``Frame`` is one look as words; the
command draws it in place on a terminal or prints the lines that changed.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from git_harn.clock import epoch_of
from git_harn.errors import BadInput, HarnError
from git_harn.files import loads_json, size_words
from git_harn.git import Oid, Repo
from git_harn.results import Result
from git_harn.store import chain
from git_harn.store import workflows as store
from git_harn.tasks.config import Stage
from git_harn.text import clip, one_line
from git_harn.workflow.agents.spend import cost_text, spending_text
from git_harn.workflow.ledger import record
from git_harn.workflow.model.result import IN_PROGRESS
from git_harn.workflow.model.state import STAGE_STATE, State

LOOK_EVERY = 1.0  # seconds between two looks
NEW_EVENTS_READ = 50  # commits read at most between two tips (a sync's merge of a long other side)
TAIL_READ = 8 * 1024 * 1024  # stage-times bytes read at most in one look; the rest at the next
LINE_LIMIT = 4 * 1024 * 1024  # a stage-times line longer than this is dropped, never kept growing


class Reader:
    """Everything a look reads, through one door that counts it: the
    record's blobs and commits, and the stage-times file's new bytes.
    ``bytes`` and ``reads`` are what a test measures a look by."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.bytes = 0
        self.reads = 0

    def blob(self, oid: Oid) -> bytes:
        """A blob of the record, never one larger than a record may be (the
        ref is in the shared git dir: a stage may plant a blob of gigabytes)."""
        size = self.repo.blob_size(oid)
        if size > chain.READ_LIMIT:  # what every reader of a record reads at most
            raise BadInput(f"a file of the record is larger than {size_words(chain.READ_LIMIT)} ({size} bytes): "
                           "not one the run wrote")
        data = self.repo.read_blob(oid)
        self._count(len(data))
        return data

    def new_events(self, tip: Oid, seen: Oid | None) -> list[chain.Entry]:
        """The commits ``tip`` adds to ``seen`` (at most ``NEW_EVENTS_READ``),
        newest first; only the tip on a first look."""
        if seen is None:
            commits = [self.repo.commit_info(tip)]
        else:
            commits = list(self.repo.walk(tip, [seen], limit=NEW_EVENTS_READ))
        for commit in commits:
            self._count(len(commit.message))
        return [chain.entry(commit) for commit in chain.stable_order(commits)]

    def tail(self, path: Path, offset: int) -> tuple[bytes, int]:
        """The bytes of ``path`` from ``offset`` (at most ``TAIL_READ``), and
        its size: a file that shrank was replaced, read from 0 again. A path
        that is not a regular file (an agent's link, or a named pipe, which
        O_NONBLOCK opens without waiting for a writer) reads as nothing."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return b"", 0
        try:
            size = os.fstat(fd).st_size
            if not stat.S_ISREG(os.fstat(fd).st_mode) or size <= offset:
                return b"", size
            data = os.pread(fd, min(size - offset, TAIL_READ), offset)
        finally:
            os.close(fd)
        self._count(len(data))
        return data, size

    def _count(self, size: int) -> None:
        self.bytes += size
        self.reads += 1


class Follower:
    """One run's record and run folder, read as they grow."""

    def __init__(self, repo: Repo, workflow_id: str, reader: Reader | None = None) -> None:
        self.repo = repo
        self.workflow_id = workflow_id
        self.ref = record.workflow_ref(workflow_id)
        self.times = record.run_folder(repo, workflow_id) / record.STAGE_TIMES
        self.reader = reader or Reader(repo)
        self.tip: Oid | None = None
        self.head: dict[str, Any] = {}
        self._head_blob: Oid | None = None
        self.tasks: list[dict[str, Any]] = []
        self._task_blobs: list[Oid] = []
        self.events: list[str] = []  # the record's event subjects, oldest first (the last few)
        self.spans: dict[str, list[dict[str, Any]]] = {}  # run id -> its timeline, as the run folder kept it
        self._offset = 0
        self._rest = b""  # a line the runner is still writing

    def look(self) -> None:
        self._record()
        self._stage_times()

    def _record(self) -> None:
        tip = self.repo.ref_oid(self.ref)
        if tip is None:
            if self.tip is None:
                raise BadInput(f"unknown workflow id: {self.workflow_id}")
            return  # gone meanwhile (gc archived it): what was read stands
        if tip == self.tip:
            return
        head_blob, task_blobs = store.part_ids(self.repo, tip)
        if head_blob is None:
            raise BadInput(f"{self.ref} at {str(tip)[:12]} holds no {store.WORKFLOW_FILE}: not a workflow record")
        if head_blob != self._head_blob:
            head = self._json(head_blob)
            if head.get("workflowId") != self.workflow_id:
                raise BadInput(f"{self.ref} at {str(tip)[:12]} is not the record of {self.workflow_id}")
            self.head, self._head_blob = head, head_blob
        inline = self.head.get(store.TASKS.member)
        if isinstance(inline, list):  # a record written as one file
            self.tasks = [t for t in inline if isinstance(t, dict)]
        else:
            self.tasks = [self.tasks[i] if i < len(self._task_blobs) and self._task_blobs[i] == blob
                          else self._json(blob) for i, blob in enumerate(task_blobs)]
            self._task_blobs = task_blobs
        said = [e.subject for e in reversed(self.reader.new_events(tip, self.tip))]
        self.events = (self.events + said)[-5:]
        self.tip = tip

    def _json(self, blob: Oid) -> dict[str, Any]:
        try:
            found = loads_json(self.reader.blob(blob))
        except ValueError as exc:
            raise BadInput(f"{self.ref}: a file of the record is not JSON ({exc})") from exc
        return found if isinstance(found, dict) else {}

    def _stage_times(self) -> None:
        data, size = self.reader.tail(self.times, self._offset)
        if size < self._offset:  # replaced: read it whole again
            self._offset, self._rest, self.spans = 0, b"", {}
            data, size = self.reader.tail(self.times, 0)
        self._offset += len(data)
        *lines, self._rest = (self._rest + data).split(b"\n")
        if len(self._rest) > LINE_LIMIT:  # no line the runner writes is this long: not one to wait for
            self._rest = b""
        for line in lines:
            try:
                entry = loads_json(line)
            except ValueError:
                continue  # a line cut by a kill
            if isinstance(entry, dict) and isinstance(entry.get("runId"), str) \
                    and isinstance(entry.get("timeline"), list):
                self.spans[entry["runId"]] = [s for s in entry["timeline"] if isinstance(s, dict)]


# --- one look as words ------------------------------------------------------------------


@dataclass
class Row:
    """One task as the watch shows it."""

    key: str
    state: str  # the lifecycle state (implementing, done, infra-fault …)
    stage: str  # "implement 2", "review r1", "" before its first stage
    since: float | None  # when its stage began (running) or it started (ended)
    until: float | None  # when it ended; None while it runs
    last: str  # the last thing that happened to it, in a few words

    def cells(self, now: float) -> list[str]:
        ends = self.until if self.until is not None else now
        took = "" if self.since is None else duration(max(0.0, ends - self.since))
        return [self.key, self.state, self.stage, took, self.last]

    def plain(self) -> str:
        """As a piped line: what changed, whole (no clock that ticks)."""
        at = f" at {self.stage}" if self.stage else ""
        return f"task {self.key}: {self.state}{at}" + (f": {self.last}" if self.last else "")


@dataclass
class Frame:
    workflowId: str
    upstream: str
    baseOid: str
    startedAt: float | None
    finishedAt: float | None
    runner: str | None  # live, gone, stale, unknown; None once the record ended
    landed: int
    proposed: int  # ended in an open pull request (--land pull-request): delivered, not landed
    failed: int
    # stopped with its work kept (the spending limit, a stop, an operator's look): the run's summary
    # says halted, so the count does too, never failed
    halted: int
    running: int
    waiting: list[dict[str, str]]
    faults: int
    retries: int
    cost: str  # what the run spent so far, in the words show and the page use (agents.spend)
    event: str  # the record's last event
    rows: list[Row] = field(default_factory=list)
    synced: str = ""  # --sync: what the last sync said
    syncedAt: str = ""  # and when

    @property
    def ended(self) -> bool:
        return self.runner is None or self.runner == record.GONE

    def header(self, now: float) -> list[str]:
        ends = self.finishedAt if self.finishedAt is not None else now
        took = "" if self.startedAt is None else f"  {duration(max(0.0, ends - self.startedAt))}"
        return [f"{self.workflowId}  {self.upstream}@{self.baseOid[:12]}{took}  {self._state()}",
                self._counts("  "), *self._more()]

    def _state(self) -> str:
        if self.runner is None:
            return "ended"
        return {record.LIVE: "running", record.GONE: "runner gone", record.STALE: "stale (no heartbeat)",
                record.UNKNOWN: "running (runner unknown)"}.get(self.runner, self.runner)

    def _counts(self, gap: str) -> str:
        faults = f"faults {self.faults}" + (f" (+{self.retries} retried)" if self.retries else "")
        proposed = [f"proposed {self.proposed}"] if self.proposed else []
        halted = [f"halted {self.halted}"] if self.halted else []
        return gap.join([f"landed {self.landed}", *proposed, *halted, f"failed {self.failed}",
                         f"running {self.running}", f"waiting {len(self.waiting)}", faults])

    def _more(self) -> list[str]:
        first = self.waiting[0] if self.waiting else None
        return [self.cost, *([f"waits for: {first.get('taskId')} {first.get('requires')}"] if first else []),
                f"last event: {self.event or 'none yet'}",
                *([f"sync at {self.syncedAt}: {self.synced}"] if self.synced else [])]

    def lines(self, now: float, width: int | None) -> list[str]:
        """The screen: the header, then one line a task under column heads,
        each line within ``width`` (the last column clipped)."""
        rows = [["TASK", "STATE", "STAGE", "TIME", "LAST"],
                *[[shown(cell) for cell in row.cells(now)] for row in self.rows]]
        wide = [max(len(r[i]) for r in rows) for i in range(4)]
        table = ["  ".join([r[0].ljust(wide[0]), r[1].ljust(wide[1]), r[2].ljust(wide[2]), r[3].rjust(wide[3]),
                            r[4]]).rstrip() for r in rows]
        lines = [*map(shown, self.header(now)), "", *table]
        return [clip(line, width) for line in lines] if width is not None else lines

    def plain(self) -> list[str]:
        """The lines a pipe gets, each whole: the header without its clock, one a task."""
        first = self.waiting[0] if self.waiting else None
        waits = f"; waits for: {first.get('taskId')} {first.get('requires')}" if first else ""
        counts = f"{self._counts(', ')}; {self.cost}{waits}"
        return [shown(line) for line in [f"workflow {self.workflowId} on {self.upstream}: {self._state()}", counts,
                *([f"sync: {self.synced}"] if self.synced else []), *[row.plain() for row in self.rows]]]


def shown(text: str) -> str:
    """A line as a terminal may get it: the run folder is writable by the
    agents, so a stage name there may hold an escape sequence; every
    character that is not printable is a space (one line each)."""
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)


def duration(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole // 60 % 60:02d}m"


def frame(follower: Follower, runner: str | None) -> Frame:
    head, tasks = follower.head, [_as_known(t, follower.spans) for t in follower.tasks]
    states = [State.of(t) for t in tasks]
    waiting = [w for w in head.get("waiting") or [] if isinstance(w, dict)]
    return Frame(
        workflowId=follower.workflow_id,
        upstream=f"{head.get('remote', '')}/{head.get('base', '')}",
        baseOid=str(head.get("baseOid") or ""),
        startedAt=epoch_of(head.get("startedAt")), finishedAt=epoch_of(head.get("finishedAt")),
        runner=runner,
        landed=sum(s.landed for s in states), proposed=sum(s.delivered and not s.landed for s in states),
        failed=sum(s.terminal and not s.delivered and not s.halted for s in states),
        halted=sum(s.halted for s in states),
        running=sum(s.in_flight for s in states), waiting=waiting,
        faults=sum(s.fault is not None and s is not State.INTERRUPTED for s in states),
        retries=sum(int(t.get("infraRetries") or 0) for t in tasks),
        cost=_cost(head),
        event=follower.events[-1] if follower.events else "",
        rows=[_row(t, s) for t, s in zip(tasks, states, strict=True)])


def _cost(head: dict[str, Any]) -> str:
    """The run's spending so far: against its limit when it has one (every
    stage run that ended by the last event), else its tasks' usage summed
    (the tasks ended by then), marked where unknown."""
    spending = (head.get("breakers") or {}).get("spending") if isinstance(head.get("breakers"), dict) else None
    return spending_text(spending) or f"cost {cost_text(head.get('usage'))}"


def _as_known(task: dict[str, Any], spans: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """A task still running as the run folder knows it better: its timeline
    there when longer than the record's, and the stage its last span is in."""
    if State.of(task).terminal:
        return task
    kept = spans.get(str(task.get("runId")))
    if kept is None or len(kept) <= len(task.get("timeline") or []):
        return task
    known = {**task, "timeline": kept}
    stage = str(kept[-1].get("stage") or "")
    if kept[-1].get("kind") == "stage" and stage in STAGE_STATE:
        known.update(stage=stage, state=STAGE_STATE[stage].value)
    return known


def _row(task: dict[str, Any], state: State) -> Row:
    key = str(task.get("taskId", "?")) + (f"-addendum-{task['addendum']}" if task.get("addendum") else "")
    timeline = [s for s in task.get("timeline") or [] if isinstance(s, dict)]
    stages = [s for s in timeline if s.get("kind") == "stage"]
    if state.terminal:
        detail = one_line(str(task.get("detail") or ""), 300)
        # where it stopped; a delivered task went all the way
        stage = "" if state.delivered else str(task.get("stage") or "")
        return Row(key, state.value, stage, epoch_of(task.get("startedAt")),
                   epoch_of(task.get("finishedAt")), detail)
    now_in = stages[-1] if stages and stages[-1].get("finishedAt") is None else None
    stage = ""
    if now_in is not None:
        number = now_in.get("attempt")
        stage = f"{now_in.get('stage')} " + (f"r{number}" if now_in.get("stage") == Stage.REVIEW else f"#{number}")
    before = [s for s in timeline if s is not now_in and s.get("finishedAt")]
    last = "started" if not before else _span_words(before[-1])
    since = epoch_of(now_in.get("startedAt")) if now_in is not None else epoch_of(task.get("startedAt"))
    return Row(key, state.value, stage, since, None, last)


def _span_words(span: dict[str, Any]) -> str:
    if span.get("kind") == "wait":
        return f"waited for {span.get('reason')}"
    outcome = span.get("outcome") or "ended"
    return f"{span.get('stage')} {outcome}" + (f" ({span['faultKind']})" if span.get("faultKind") else "")


# --- the watch --------------------------------------------------------------------------


class Screen(Protocol):
    """Where the looks go (a terminal drawn in place, or a pipe)."""

    def show(self, look: Frame) -> None: ...

    def wait(self, seconds: float) -> bool:
        """Until the next look; True when the person asked to leave (``q``, Ctrl-C)."""


@dataclass
class Watched(Result):
    """How a watch ended: with the run (its record as ``workflow show``
    gives it), or left by the person while the run went on."""

    SCHEMA: ClassVar[str] = "workflow-result"

    workflowId: str
    body: dict[str, Any]
    left: bool = False

    @property
    def outcome(self) -> str:
        if self.left:
            return "ok"  # the person left; the run goes on
        return str(self.body.get("outcome") or IN_PROGRESS)

    def document(self) -> dict[str, Any]:
        return self.body


def newest_running(repo: Repo, stale: float | None) -> str:
    """The newest record still running whose runner is not provably gone."""
    alive = record.Liveness(repo, record.stale_after(repo, stale))
    found = [s for s in record.list_all(repo) if isinstance(s, record.Stored)
             and alive.of(s.body) not in (None, record.GONE)]
    if not found:
        raise BadInput("no workflow is running (git harn workflow list shows the records; "
                       "git harn workflow watch <workflow-id> shows one)")
    return max(found, key=lambda s: (str(s.body.get("startedAt", "")), s.workflowId)).workflowId


def _synced(sync: Callable[[], str]) -> tuple[str, str]:
    """When one sync ran and what it said; a sync that failed is said too,
    and the watch goes on (the network of a night is not the run's)."""
    at = time.strftime("%H:%M:%S")
    try:
        return at, sync()
    except HarnError as exc:
        return at, f"failed: {one_line(exc.message)}"


def watch(repo: Repo, workflow_id: str | None, screen: Screen, stale: float | None = None,
          sync: Callable[[], str] | None = None, sync_every: float | None = None,
          reader: Reader | None = None, every: float = LOOK_EVERY) -> Watched:
    """Show ``workflow_id`` (default: the newest running run) on ``screen``
    until it ends or the person leaves. ``sync`` (every ``sync_every``
    seconds, and once first): bring another machine's record here, saying
    what it did."""
    if sync_every is not None and sync_every <= 0:
        raise BadInput("--sync must be a positive number of seconds")
    at, said = _synced(sync) if sync is not None else ("", "")
    synced = time.monotonic()
    stale_after = record.stale_after(repo, stale)
    follower = Follower(repo, workflow_id or newest_running(repo, stale), reader)
    while True:
        follower.look()
        runner = record.Liveness(repo, stale_after).of(follower.head)
        look = frame(follower, runner)
        look.synced, look.syncedAt = said, at
        screen.show(look)
        if look.ended:
            stored = record.shown(repo, follower.workflow_id, stale)
            return Watched(follower.workflow_id, stored.body)
        if screen.wait(every):
            return Watched(follower.workflow_id, follower.head, left=True)
        if sync is not None and sync_every is not None and time.monotonic() - synced >= sync_every:
            at, said = _synced(sync)
            synced = time.monotonic()
