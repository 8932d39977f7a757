"""A run's timeline as times: one row per task, one bar per stage attempt
(for review, one per round, with a thinner one per reviewer), and the
waits, read from a workflow record (the stored dict) and nothing else.

A record is data from anywhere (a fetched clone, an older git-harn), so
every member is read defensively: what is missing or malformed is left out,
never guessed. Records written before the timeline was kept have only each
task's start and end: their row is one bar for the whole task
(``Row.timed`` is false), and the stages keep only their seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from git_harn.clock import parse_iso
from git_harn.tasks.config import Stage
from git_harn.tasks.roadmap import work_key

LANE_SLACK = 1.0  # seconds: task times without milliseconds round down to the second
BEFORE_START = ("requirements", "claim")  # waits before the task took a lane


@dataclass
class Bar:
    """One span drawn on the timeline."""

    kind: str  # stage, wait, reviewer, or task (a record without stage times)
    start: float
    end: float
    outcome: str  # ok, retried, product-failure, a fault class, … ; for a wait: its reason
    stage: str = ""
    attempt: int = 0  # the attempt, or for review the round
    reviewer: int = 0
    detail: str = ""
    running: bool = False  # no end in the record: drawn up to the record's last word

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass
class Row:
    key: str  # <id>, or <id>-addendum-<n>
    task: dict[str, Any]
    bars: list[Bar] = field(default_factory=list)
    waits: list[Bar] = field(default_factory=list)
    reviewers: list[Bar] = field(default_factory=list)
    timed: bool = True
    lane: int = 0

    def window(self) -> tuple[float, float] | None:
        """When the task held a lane: its bars, not the waits before it started."""
        held = self.bars + [w for w in self.waits if w.outcome not in BEFORE_START]
        if not held:
            return None
        return min(b.start for b in held), max(b.end for b in held)


@dataclass
class Chart:
    t0: float
    t1: float
    rows: list[Row]
    run_waits: list[Bar]
    lanes: int

    def stage_seconds(self) -> dict[str, float]:
        """Time per stage kind, summed over every attempt of every task."""
        total: dict[str, float] = {}
        for row in self.rows:
            for bar in row.bars:
                if bar.kind == "stage":
                    total[bar.stage] = total.get(bar.stage, 0.0) + bar.seconds
        return total


def dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def member(doc: dict[str, Any], key: str) -> dict[str, Any]:
    """``doc[key]`` when it is an object, else an empty one."""
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def number(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def task_key(task: dict[str, Any]) -> str:
    addendum = task.get("addendum")
    return work_key(text(task.get("taskId")), number(addendum) if addendum else None)


def chart(doc: dict[str, Any], as_of: float | None = None) -> Chart:
    """The timeline of the record ``doc``; ``as_of``: when the record was
    last written (its commit time), where spans still running end."""
    start = parse_iso(doc.get("startedAt"))
    finish = parse_iso(doc.get("finishedAt"))
    horizon = finish or as_of or start or 0.0
    rows = [_row(task, horizon) for task in dicts(doc.get("tasks"))]
    run_waits = [b for b in (_wait(w, horizon) for w in dicts(doc.get("waits"))) if b is not None]
    run_waits += [b for b in map(_provider_wait, dicts(member(doc, "breakers").get("waits"))) if b is not None]
    times: list[float] = []
    for row in rows:
        for bar in row.bars + row.waits + row.reviewers:
            times += [bar.start, bar.end]
    times += [t for w in run_waits for t in (w.start, w.end)]
    t0 = _within_the_second(start, min(times, default=start or finish or 0.0), min)
    t1 = _within_the_second(finish, max(times, default=t0), max)
    return Chart(t0, t1 if t1 > t0 else t0 + 1.0, rows, run_waits, _assign_lanes(rows))


def _within_the_second(whole: float | None, precise: float, pick: Callable[[float, float], float]) -> float:
    """The run's start and end are kept to the second: when the spans (kept
    to the millisecond) fall in that same second, they say it better."""
    if whole is None or whole == int(whole) and whole <= precise < whole + 1:
        return precise
    return pick(whole, precise)


def _row(task: dict[str, Any], horizon: float) -> Row:
    row = Row(task_key(task), task)
    ends = parse_iso(task.get("finishedAt")) or horizon
    for span in dicts(task.get("timeline")):
        bar = _wait(span, ends) if span.get("kind") == "wait" else _stage(span, ends)
        if bar is not None:
            (row.waits if bar.kind == "wait" else row.bars).append(bar)
    row.reviewers = [b for b in (_reviewer(r, ends) for r in dicts(member(task, "review").get("reviews")))
                     if b is not None]
    if not row.bars:  # a record from before the timeline: the whole task, as far as it allows
        row.timed = False
        row.reviewers = []
        begun = parse_iso(task.get("startedAt"))
        if begun is not None:
            row.bars = [Bar("task", begun, max(begun, ends), text(task.get("state") or task.get("status")),
                            running=task.get("finishedAt") is None)]
    return row


def _times(span: dict[str, Any], horizon: float) -> tuple[float, float, bool] | None:
    begun = parse_iso(span.get("startedAt"))
    if begun is None:
        return None
    ended = parse_iso(span.get("finishedAt"))
    return begun, max(begun, ended if ended is not None else horizon), ended is None


def _stage(span: dict[str, Any], horizon: float) -> Bar | None:
    when = _times(span, horizon)
    if when is None:
        return None
    outcome = text(span.get("outcome")) or ("running" if when[2] else "unknown")
    why = " ".join(text(span.get(k)) for k in ("fault", "faultKind") if span.get(k))
    return Bar("stage", when[0], when[1], outcome, text(span.get("stage")), number(span.get("attempt")),
               detail=why, running=when[2])


def _wait(span: dict[str, Any], horizon: float) -> Bar | None:
    when = _times(span, horizon)
    if when is None:
        return None
    return Bar("wait", when[0], when[1], text(span.get("reason")) or "wait", detail=text(span.get("detail")),
               running=when[2])


def _provider_wait(held: dict[str, Any]) -> Bar | None:
    """A run that held its starts for a provider's reset (``--wait-for-provider``):
    the circuit breakers keep its start and its length (breakers.py)."""
    begun = parse_iso(held.get("since"))
    waited = held.get("waitedSeconds")
    if begun is None or not isinstance(waited, (int, float)) or isinstance(waited, bool) or waited < 0:
        return None
    why = (f"the provider of {text(held.get('agent'))} was limited until {text(held.get('until'))} "
           f"(a provider fault of task {text(held.get('taskId'))})")
    return Bar("wait", begun, begun + float(waited), "provider-reset", detail=why)


def _reviewer(review: dict[str, Any], horizon: float) -> Bar | None:
    when = _times(review, horizon)
    if when is None:
        return None
    said = text(review.get("verdict")) or text(review.get("fault")) or "unknown"
    return Bar("reviewer", when[0], when[1], said, Stage.REVIEW, number(review.get("round")),
               number(review.get("reviewer")), detail=text(review.get("summary")), running=when[2])


def _assign_lanes(rows: list[Row]) -> int:
    """Which of the ``--parallel`` lanes each task ran in: the first lane
    free when it started (tasks take a lane as another leaves it)."""
    free_at: list[float] = []
    windows = [(w, row) for row in rows if (w := row.window()) is not None]
    for (begun, ended), row in sorted(windows, key=lambda item: item[0][0]):
        slack = 0.05 if row.timed else LANE_SLACK
        lane = next((i for i, t in enumerate(free_at) if t <= begun + slack), len(free_at))
        if lane == len(free_at):
            free_at.append(ended)
        free_at[lane] = ended
        row.lane = lane + 1
    return len(free_at)
