"""The timeline (Gantt) as inline SVG: one row per task, one bar per stage
attempt coloured by what it came to, a thin bar per reviewer inside each
review round, waits as hatched gaps with their reason, and a strip per
``--parallel`` lane.

Every bar carries its times and what it is as ``data-`` attributes, and the
chart its scale (``data-t0``, ``data-t1``, ``data-x0``, ``data-plot-width``):
x = x0 + (start - t0) / (t1 - t0) * plot width, in the SVG's own units, so
the bars can be checked against the record from the page alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from git_harn.tasks.config import Stage
from git_harn.workflow.page.chart import Bar, Chart, Row, text
from git_harn.workflow.page.escape import esc, fragment

WIDTH = 1200
LABEL = 200  # the task column
PLOT = WIDTH - LABEL - 16
AXIS = 28
ROW = 30
BAR_Y, BAR_H = 5, 20
LANE_ROW = 16
CHAR = 6.2  # an average character of the bar labels, to tell whether a label fits
TICKS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)

# what a stage came to -> the colour class it is drawn in (a state of a record without stage times too)
OUTCOME_CLASS = {
    "ok": "ok", "done": "ok", "retried": "retried", "changes-requested": "changes", "refused": "changes",
    "product-failure": "failure", "failed": "failure", "error": "error", "lost-claim": "error",
    "blocked": "blocked", "halt": "halt", "halted": "halt", "manual-merge-ready": "manual",
    "infra": "infra", "infra-fault": "infra", "provider": "provider", "provider-fault": "provider",
    "auth": "auth", "auth-fault": "auth", "config": "config", "config-fault": "config",
    "tamper": "tamper", "tamper-fault": "tamper",
    "interrupted": "interrupted", "proposed": "ok",
}
SHORT: dict[str, str] = {Stage.WORKSPACE: "ws", Stage.IMPLEMENT: "impl", Stage.INTEGRATE: "land", Stage.ADDENDUM: "add"}


def colour_class(outcome: str) -> str:
    return "o-" + OUTCOME_CLASS.get(outcome, "running")


class Scale:
    def __init__(self, t0: float, t1: float) -> None:
        self.t0, self.t1 = t0, t1

    def x(self, at: float) -> float:
        return round(LABEL + (at - self.t0) / (self.t1 - self.t0) * PLOT, 2)

    def width(self, bar: Bar) -> float:
        return round(bar.seconds / (self.t1 - self.t0) * PLOT, 2)


def timeline(chart: Chart) -> str:
    """The whole chart: axis, the run's own waits, a row per task, the lanes."""
    scale = Scale(chart.t0, chart.t1)
    parts: list[str] = []
    y = AXIS
    if chart.run_waits:
        parts.append(_run_row(chart.run_waits, scale, y))
        y += ROW
    for row in chart.rows:
        parts.append(_task_row(row, scale, y))
        y += ROW
    if chart.lanes > 1:
        parts.append(_lanes(chart, scale, y + 6))
        y += 6 + chart.lanes * LANE_ROW
    height = y + 8
    head = (f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
            f'width="{WIDTH}" height="{height}" role="img" aria-label="timeline of the run" '
            f'data-t0="{chart.t0:.3f}" data-t1="{chart.t1:.3f}" data-x0="{LABEL}" data-plot-width="{PLOT}">')
    return head + _defs() + _axis(scale, height) + "".join(parts) + "</svg>"


def _defs() -> str:
    return ('<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="6" height="6" class="hatch-ground"/>'
            '<rect width="2" height="6" class="hatch-line"/></pattern></defs>')


def _axis(scale: Scale, height: int) -> str:
    span = scale.t1 - scale.t0
    step = next((t for t in TICKS if span / t <= 10), TICKS[-1] * math.ceil(span / TICKS[-1] / 10))
    out = ['<text class="axis-title" x="8" y="18">elapsed</text>']
    count = int(span // step)
    for n in range(count + 1):
        x = scale.x(scale.t0 + n * step)
        out.append(f'<line class="tick" x1="{x}" y1="{AXIS - 6}" x2="{x}" y2="{height - 4}"/>'
                   f'<text class="tick-label" x="{x}" y="16">{esc(elapsed(n * step))}</text>')
    return "".join(out)


def elapsed(seconds: float) -> str:
    """``0.5s``, ``12s``, ``4:05``, ``2:04:05``: time since the run started."""
    if seconds < 60:
        return f"{seconds:.1f}s".replace(".0s", "s")
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _task_row(row: Row, scale: Scale, y: int) -> str:
    title = text(row.task.get("title"))
    state = text(row.task.get("state") or row.task.get("status"))
    label = (f'<a href="#task-{fragment(row.key)}"><text class="row-key" x="8" y="{y + 14}">{esc(row.key)}'
             + (f'<tspan class="row-lane"> lane {row.lane}</tspan>' if row.lane else "") + '</text>'
             f'<text class="row-title" x="8" y="{y + 26}">{esc(_fit(title, 30))}</text></a>')
    bars = "".join(_bar(row.key, bar, scale, y) for bar in row.bars)
    reviewers = "".join(_reviewer(row.key, bar, scale, y) for bar in row.reviewers)
    waits = "".join(_wait(row.key, bar, scale, y) for bar in row.waits)
    return (f'<g class="row" data-task="{esc(row.key)}" data-state="{esc(state)}" data-lane="{row.lane}" '
            f'data-timed="{str(row.timed).lower()}"><rect class="row-ground" x="0" y="{y}" width="{WIDTH}" '
            f'height="{ROW}"/>{label}{bars}{reviewers}{waits}</g>')


def _run_row(waits: list[Bar], scale: Scale, y: int) -> str:
    label = f'<text class="row-key" x="8" y="{y + 19}">the run</text>'
    return (f'<g class="row run" data-task=""><rect class="row-ground" x="0" y="{y}" width="{WIDTH}" '
            f'height="{ROW}"/>{label}' + "".join(_wait("", w, scale, y) for w in waits) + "</g>")


def _data(key: str, bar: Bar) -> str:
    return (f'data-task="{esc(key)}" data-kind="{bar.kind}" data-stage="{esc(bar.stage)}" '
            f'data-attempt="{bar.attempt}" data-outcome="{esc(bar.outcome)}" '
            f'data-start="{bar.start:.3f}" data-end="{bar.end:.3f}"')


def _bar(key: str, bar: Bar, scale: Scale, y: int) -> str:
    x, w = scale.x(bar.start), scale.width(bar)
    classes = f"bar {colour_class(bar.outcome)}" + (" running" if bar.running else "")
    word = _bar_word(bar)
    label = (f'<text class="bar-label" x="{round(x + 3, 2)}" y="{y + BAR_Y + 14}">{esc(word)}</text>'
             if len(word) * CHAR + 6 <= w else "")
    return (f'<rect class="{classes}" x="{x}" y="{y + BAR_Y}" width="{w}" height="{BAR_H}" {_data(key, bar)}>'
            f'<title>{esc(tooltip(key, bar))}</title></rect>{label}')


def _bar_word(bar: Bar) -> str:
    if bar.kind == "task":
        return "no stage times in this record"
    word = SHORT.get(bar.stage, bar.stage)
    if bar.stage == Stage.REVIEW:
        return f"review r{bar.attempt}"
    return f"{word} {bar.attempt}" if bar.attempt > 1 else word


def _reviewer(key: str, bar: Bar, scale: Scale, y: int) -> str:
    top = y + BAR_Y + (1 if bar.reviewer != 2 else BAR_H - 4)
    verdict = "approve" if bar.outcome == "approve" else "changes" if bar.outcome == "changes-requested" else "fault"
    return (f'<rect class="reviewer v-{verdict}" x="{scale.x(bar.start)}" y="{top}" width="{scale.width(bar)}" '
            f'height="3" {_data(key, bar)} data-reviewer="{bar.reviewer}"><title>{esc(tooltip(key, bar))}</title>'
            f'</rect>')


def _wait(key: str, bar: Bar, scale: Scale, y: int) -> str:
    x, w = scale.x(bar.start), scale.width(bar)
    word = f"waits: {bar.detail if bar.outcome == 'requirements' else bar.outcome}"
    label = (f'<text class="wait-label" x="{round(x + 3, 2)}" y="{y + BAR_Y + 14}">{esc(_fit(word, int(w / CHAR)))}'
             f'</text>' if w >= 60 else "")
    return (f'<rect class="wait" x="{x}" y="{y + BAR_Y}" width="{w}" height="{BAR_H}" {_data(key, bar)} '
            f'data-reason="{esc(bar.outcome)}"><title>{esc(tooltip(key, bar))}</title></rect>{label}')


def _lanes(chart: Chart, scale: Scale, y: int) -> str:
    """Which task each ``--parallel`` lane ran, one thin strip a lane."""
    out = []
    for lane in range(1, chart.lanes + 1):
        top = y + (lane - 1) * LANE_ROW
        out.append(f'<text class="lane-key" x="8" y="{top + 11}">lane {lane}</text>')
        for row in (r for r in chart.rows if r.lane == lane):
            window = row.window()
            if window is None:
                continue
            held = Bar("task", window[0], window[1], text(row.task.get("state") or row.task.get("status")))
            x, w = scale.x(held.start), scale.width(held)
            out.append(f'<rect class="lane-bar {colour_class(held.outcome)}" x="{x}" y="{top + 1}" width="{w}" '
                       f'height="12" data-lane="{lane}" data-task="{esc(row.key)}"><title>{esc(row.key)}: '
                       f'lane {lane}</title></rect>')
            if len(row.key) * CHAR + 4 <= w:
                out.append(f'<text class="lane-label" x="{round(x + 2, 2)}" y="{top + 11}">{esc(row.key)}</text>')
    return '<g class="lanes">' + "".join(out) + "</g>"


def tooltip(key: str, bar: Bar) -> str:
    """What a bar says when pointed at: task, stage, attempt, outcome, length, why."""
    said = f"{bar.stage} attempt {bar.attempt}" if bar.stage != Stage.REVIEW else f"review round {bar.attempt}"
    what = {"stage": said,
            "reviewer": f"review round {bar.attempt}, reviewer {bar.reviewer}",
            "wait": f"waited: {bar.outcome}", "task": "the whole task (no stage times in this record)"}[bar.kind]
    said = "" if bar.kind == "wait" else f": {bar.outcome}"
    tail = f" — {bar.detail}" if bar.detail else ""
    still = " (still running when the record was written)" if bar.running else ""
    return f"{key} {what}{said}, {bar.seconds:.2f} s{still}{tail}".strip()


def _fit(words: str, room: int) -> str:
    words = " ".join(words.split())
    return words if len(words) <= room else words[: max(room - 1, 0)] + "…"


def legend(outcomes: Iterable[str]) -> str:
    """Swatches for the colours the chart uses, and the wait and reviewer marks."""
    seen = dict.fromkeys(colour_class(o) for o in outcomes)
    items = [f'<span class="key"><span class="swatch {c}"></span>{esc(LEGEND[c])}</span>' for c in LEGEND if c in seen]
    items.append('<span class="key"><span class="swatch wait-swatch"></span>a wait, with its reason</span>')
    items.append('<span class="key"><span class="swatch reviewer-swatch"></span>a reviewer (approve, changes '
                 'requested, fault)</span>')
    return '<p class="legend">' + "".join(items) + "</p>"


LEGEND = {
    "o-ok": "ok", "o-retried": "retried in place after an infra fault", "o-changes": "changes requested",
    "o-failure": "product failure", "o-error": "error (git or the host failed, a claim lost)",
    "o-blocked": "blocked (ExecPlan)", "o-halt": "halted: an operator must look", "o-manual": "manual merge ready",
    "o-infra": "infra fault", "o-provider": "provider fault", "o-auth": "auth fault",
    "o-config": "config fault (a refusal that repeats)",
    "o-interrupted": "interrupted", "o-running": "running when the record was written",
}
