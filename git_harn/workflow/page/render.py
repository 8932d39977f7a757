"""One workflow record as one self-contained HTML page: a header (what ran
on which base, when, how it ended and what to do next), the timeline, the
totals (tasks by status, faults, usage and cost, time per stage kind), one
section per task (status, branch, what landed, the review's verdicts and
findings, the gates, the assessment and salvage, the next step, links to
its stage files) and the run's own notes (skipped tasks, remediation,
recovery, claims).

A pure function of the record (as stored), the run's stage files (names
and links, listed by ``write``) and when the record was last written. The
page holds no script at all, nor anything fetched at view time: inline CSS,
inline SVG, and a Content-Security-Policy that would refuse a script even if
one got in. Every string of the record goes through ``escape.esc``.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterable, Sequence
from typing import Any

from git_harn import __version__
from git_harn.clock import parse_iso
from git_harn.errors import EXIT_FOR_OUTCOME
from git_harn.workflow.agents import spend
from git_harn.workflow.model.result import IN_PROGRESS
from git_harn.workflow.model.state import STATUSES, State
from git_harn.workflow.page import svg
from git_harn.workflow.page.chart import Chart, Row, dicts, member, number, task_key, text
from git_harn.workflow.page.escape import esc, fragment, relative_link

Files = dict[str, list[tuple[str, str]]]  # task id -> (file name, link relative to the page)

MEANING = {
    "workflow-done": "every selected task landed (or none was selectable)",
    "workflow-incomplete": "not every task landed: each one that did not names its next step",
    "workflow-interrupted": "the run was stopped (Ctrl-C, SIGTERM); where each task stood is recorded",
    "workflow-running": "the run had not finished when this record was written (or its runner is gone)",
    "workflow-blocked": "nothing was started (the auth preflight failed)",
    "workflow-dry-run": "a dry run: nothing was created",
}


def page(doc: dict[str, Any], chart: Chart, files: Files, source: str) -> str:
    """The page of the record ``doc``; ``source`` says where it was read (ref and commit)."""
    body = [_header(doc, chart), _timeline(chart), _totals(doc, chart), _tasks(doc, chart, files),
            _run_notes(doc), f'<footer>{esc(f"written by git-harn {__version__} from {source}; times are UTC")}'
            "</footer>"]
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            f"style-src 'unsafe-inline'; img-src data:\">"
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(text(doc.get('workflowId')))} — git harn workflow report</title>"
            f"<style>{CSS}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n")


# --- small pieces -------------------------------------------------------------------------


def code(value: object) -> str:
    return f"<code>{esc(value)}</code>" if text(value) else '<span class="none">none</span>'


def short(oid: object) -> str:
    return code(text(oid)[:12]) if text(oid) else '<span class="none">none</span>'


def when(value: object) -> str:
    at = parse_iso(value)
    if at is None:
        return '<span class="none">not recorded</span>'
    return esc(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)))


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def facts(pairs: Iterable[tuple[str, str]]) -> str:
    """A definition list; values are HTML already (escaped where they hold record text)."""
    return '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in pairs if v) + "</dl>"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    """A table; cells are HTML already. Columns in ``numeric`` align right."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    lines = ["".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
             for row in rows]
    if not lines:
        return ""
    body = "".join(f"<tr>{r}</tr>" for r in lines)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def items(values: object) -> str:
    shown = [f"<li>{esc(v)}</li>" for v in values if isinstance(v, (str, int, float))] \
        if isinstance(values, list) else []
    return f"<ul>{''.join(shown)}</ul>" if shown else ""


def next_step(step: object) -> str:
    if not isinstance(step, dict) or not (step.get("command") or step.get("why")):
        return ""
    command = f"<pre class=\"command\">{esc(step.get('command'))}</pre>" if step.get("command") else \
        '<span class="none">nothing to do</span> '
    return f'{command}<span class="why">{esc(step.get("why"))}</span>'


def badge(state: str) -> str:
    return f'<span class="badge {svg.colour_class(state)}">{esc(state or "unknown")}</span>'


# --- the header ---------------------------------------------------------------------------


def _header(doc: dict[str, Any], chart: Chart) -> str:
    outcome = text(doc.get("outcome"))
    code_of = EXIT_FOR_OUTCOME.get(outcome)
    ending = f"{code(outcome)} (exit {code_of}: {esc(MEANING.get(outcome, ''))})" if code_of is not None \
        else code(outcome)
    after = text(doc.get("baseOidAfter"))
    missing = "not yet: the run is recorded running" if outcome == IN_PROGRESS else "not in this record"
    tips = f"{short(doc.get('baseOid'))} → " + (short(after) if after else f'<span class="none">{missing}</span>')
    pairs = [("base", code(f"{text(doc.get('remote'))}/{text(doc.get('base'))}")), ("tip before → after", tips),
             ("started", when(doc.get("startedAt"))), ("finished", when(doc.get("finishedAt"))),
             ("wall time", esc(duration(chart.t1 - chart.t0))), ("summary", esc(doc.get("summary"))),
             ("outcome", ending), ("halted", esc(doc.get("halted"))), ("next", next_step(doc.get("next")))]
    return (f"<header><h1>workflow {esc(doc.get('workflowId'))}</h1>{facts(pairs)}{_next_steps(doc)}</header>")


def _next_steps(doc: dict[str, Any]) -> str:
    """Every next step the run names, in one place: its tasks' and its survivors'."""
    steps = [(task_key(t), t.get("next")) for t in dicts(doc.get("tasks"))]
    steps += [(text(u.get("branch")), u.get("next")) for u in dicts(member(doc, "recovery").get("unresolved"))]
    rows = [(f'<a href="#task-{fragment(key)}">{esc(key)}</a>' if not key.startswith("roadmap-") else esc(key),
             next_step(step)) for key, step in steps if isinstance(step, dict) and step.get("command")]
    return ("<h2>Next steps</h2>" + table(["for", "next"], rows)) if rows else ""


# --- the timeline -------------------------------------------------------------------------


def _timeline(chart: Chart) -> str:
    outcomes = [b.outcome for row in chart.rows for b in row.bars]
    untimed = [row.key for row in chart.rows if not row.timed]
    note = (f'<p class="note">{esc(", ".join(untimed))}: the record keeps no stage times for '
            f"{'this task' if len(untimed) == 1 else 'these tasks'} (written before git-harn kept them), so "
            "the bar is the whole task and the stages keep only their seconds.</p>") if untimed else ""
    return (f'<section id="timeline"><h2>Timeline</h2>{svg.legend(outcomes)}{note}'
            f'<div class="chart">{svg.timeline(chart)}</div></section>')


# --- totals -------------------------------------------------------------------------------


def _totals(doc: dict[str, Any], chart: Chart) -> str:
    tasks = dicts(doc.get("tasks"))
    statuses = [text(t.get("status")) for t in tasks]
    by_status = [(esc(s), esc(statuses.count(s))) for s in STATUSES if s in statuses]
    metrics = member(doc, "faultMetrics")
    faults = [(esc(k), esc(v)) for k, v in metrics.items()]
    return ('<section id="totals"><h2>Totals</h2><div class="columns">'
            f'<div><h3>Tasks by status</h3>{table(["status", "tasks"], by_status, (1,))}</div>'
            f'<div><h3>Faults</h3>{table(["faultMetrics", "count"], faults, (1,))}</div>'
            f'<div><h3>Time per stage kind</h3>{_stage_time(doc, chart)}</div></div>'
            f"<h3>Usage and cost</h3>{_usage(doc)}</section>")


def _stage_time(doc: dict[str, Any], chart: Chart) -> str:
    timed = chart.stage_seconds()
    counted: dict[str, float] = {}
    for row in chart.rows:  # a task without stage times: its stages' seconds (the last attempt's)
        if not row.timed:
            for stage, summary in member(row.task, "stages").items():
                if isinstance(summary, dict) and isinstance(summary.get("seconds"), (int, float)):
                    counted[str(stage)] = counted.get(str(stage), 0.0) + float(summary["seconds"])
    waits: dict[str, float] = {}
    for row in chart.rows:
        for wait in row.waits:
            waits[wait.outcome] = waits.get(wait.outcome, 0.0) + wait.seconds
    rows = [(esc(stage), esc(duration(seconds))) for stage, seconds in sorted(timed.items(), key=lambda i: -i[1])]
    rows += [(esc(f"{stage} (last attempts only)"), esc(duration(s))) for stage, s in sorted(counted.items())]
    rows += [(esc(f"waiting: {reason}"), esc(duration(s))) for reason, s in sorted(waits.items())]
    return table(["stage", "time"], rows, (1,)) or '<p class="none">no stage times in this record</p>'


def _tokens(usage: object) -> list[str]:
    if not isinstance(usage, dict):
        return ['<span class="none">none</span>', "", "", "", "", ""]
    return [esc(f"{number(usage.get(k)):,}") for k in ("runs", "inputTokens", "outputTokens", "cachedInputTokens")] \
        + [esc(spend.cost_text(usage)), esc(spend.stage_costs(usage))]


def _usage(doc: dict[str, Any]) -> str:
    tasks = dicts(doc.get("tasks"))
    limit = spend.spending_text(member(member(doc, "breakers"), "spending"))
    said = f"<p>{esc(limit)}</p>" if limit else ""
    rows = [[esc(task_key(t)), *_tokens(t.get("usage"))] for t in tasks if isinstance(t.get("usage"), dict)]
    if not rows:
        return said + '<p class="none">no usage: the agents are plain commands, whose cost is unknown (claude and ' \
            'codex report theirs)</p>'
    rows.append(["<b>all</b>", *_tokens(doc.get("usage"))])
    return said + table(["task", "agent runs", "input tokens", "output tokens", "cached input", "cost (USD)",
                         "cost by stage"], rows, (1, 2, 3, 4, 5))


# --- one section per task -----------------------------------------------------------------


def _tasks(doc: dict[str, Any], chart: Chart, files: Files) -> str:
    return '<section id="tasks"><h2>Tasks</h2>' + "".join(_task(row, files) for row in chart.rows) + "</section>"


def _task(row: Row, files: Files) -> str:
    t = row.task
    state = text(t.get("state") or t.get("status"))
    where = f" at {text(t.get('stage'))}" if t.get("stage") and state != State.DONE.value else ""
    head = (f'<section class="task" id="task-{fragment(row.key)}"><h3>{badge(state)} {esc(row.key)} '
            f"{esc(t.get('title'))}</h3>")
    task_id = text(t.get("taskId"))
    return head + facts(_task_facts(t, row, where)) + _stages(row) + _review(t) + _gates(t) + \
        _assessment(t) + _files(task_id, files.get(task_id, [])) + "</section>"


def _task_facts(t: dict[str, Any], row: Row, where: str) -> list[tuple[str, str]]:
    integration = member(t, "integration")
    landed = f"squash {short(integration.get('commit'))}" if integration.get("commit") else ""
    if t.get("integratedRef"):
        landed += f"{'; ' if landed else ''}tip kept as {code(t.get('integratedRef'))}"
    workspace = member(t, "workspace")
    attempts = member(t, "attempts")
    counted = ", ".join(f"{k} {v}" for k, v in attempts.items())
    fault = " ".join(text(t.get(k)) for k in ("fault", "faultKind") if t.get(k))
    return [("status", esc(f"{text(t.get('status'))} ({text(t.get('state'))}){where}")),
            ("detail", esc(t.get("detail"))), ("branch", code(t.get("branch"))), ("run", code(t.get("runId"))),
            ("started on", short(t.get("baseOid"))), ("tip", short(t.get("tip"))), ("landed", landed),
            ("lane", esc(row.lane) if row.lane else ""),
            ("attempts", esc(counted + (f"; infra retries {number(t.get('infraRetries'))}"
                                        if number(t.get("infraRetries")) else ""))),
            ("fault", esc(fault)),
            ("workspace", esc(": ".join(text(workspace.get(k)) for k in ("state", "reason") if workspace.get(k)))),
            ("usage", " · ".join(c for c in _tokens(t.get("usage"))[1:] if c) if t.get("usage") else ""),
            ("proposal", _proposal(t.get("proposal"))),
            ("next", next_step(t.get("next")))]


def _proposal(found: object) -> str:
    """The request a proposed task waits in [F1]: a link to it (an http(s)
    address the forge gave, escaped), else its landing branch, and its state."""
    if not isinstance(found, dict):
        return ""
    url = text(found.get("url"))
    where = (f'<a href="{esc(url)}">{esc(url)}</a>' if url.startswith(("https://", "http://"))
             else code(found.get("branch")))
    return f"{where} ({esc(found.get('state') or 'open')}, {short(found.get('head'))})"


def _stages(row: Row) -> str:
    said = member(row.task, "stages")
    summaries = [(esc(stage), esc(s.get("summary"))) for stage, s in said.items()
                 if isinstance(s, dict) and s.get("summary")]
    spans = [(esc(b.stage), esc(b.attempt), f'<span class="badge {svg.colour_class(b.outcome)}">{esc(b.outcome)}'
              f"</span>", when_span(b.start), esc(duration(b.seconds)), esc(b.detail))
             for b in sorted(row.bars, key=lambda b: b.start) if b.kind == "stage"]
    spans += [(esc("wait"), "", esc(b.outcome), when_span(b.start), esc(duration(b.seconds)), esc(b.detail))
              for b in row.waits]
    out = "<h4>Stages</h4>" + table(["stage", "attempt", "outcome", "started", "took", "why"], spans, (4,)) \
        if spans else ""
    if not row.timed and said:
        seconds = [(esc(stage), esc(s.get("attempt")), esc(duration(float(s["seconds"]))))
                   for stage, s in said.items() if isinstance(s, dict) and isinstance(s.get("seconds"), (int, float))]
        out += "<h4>Stages (seconds of the last attempt)</h4>" + table(["stage", "attempt", "took"], seconds, (2,))
    if summaries:
        out += "<h4>What the agents said (the last attempt of each stage)</h4>" + table(["stage", "summary"],
                                                                                        summaries)
    return out


def when_span(at: float) -> str:
    return esc(time.strftime("%H:%M:%S", time.gmtime(at)) + f".{int((at % 1) * 1000):03d}")


def _review(t: dict[str, Any]) -> str:
    review = member(t, "review")
    reviews = dicts(review.get("reviews"))
    if not reviews:
        return ""
    rows = [(esc(r.get("round")), esc(r.get("reviewer")), esc(r.get("verdict") or r.get("fault") or "?"),
             esc(r.get("summary") or r.get("detail")), _findings(r.get("findings"))) for r in reviews]
    verdict = "approved" if review.get("approved") else "not approved"
    return (f"<h4>Review: {esc(verdict)} after {esc(number(review.get('rounds')))} round(s)</h4>"
            + table(["round", "reviewer", "verdict", "summary", "findings"], rows))


def _findings(found: object) -> str:
    shown = []
    for f in dicts(found):
        severity = text(f.get("severity"))
        kind = severity if severity in ("blocking", "advisory") else "other"
        where = f" {code(f.get('path'))}" if f.get("path") else ""
        shown.append(f'<li class="finding sev-{kind}"><b>{esc(severity or "finding")}</b>{where} '
                     f"{esc(f.get('text'))}</li>")
    return f"<ul class=\"findings\">{''.join(shown)}</ul>" if shown else '<span class="none">none</span>'


def _gates(t: dict[str, Any]) -> str:
    gates = member(t, "gates")
    commands = dicts(gates.get("commands"))
    if not commands:
        return ""
    parts = []
    for c in commands:
        argv = [a for a in c.get("argv", []) if isinstance(a, str)] if isinstance(c.get("argv"), list) else []
        exit_code = c.get("exitCode")
        parts.append(f"<pre class=\"command\">{esc(shlex.join(argv))}</pre><p>exit {esc(exit_code)}"
                     + (f", {esc(duration(float(c['seconds'])))}" if isinstance(c.get("seconds"), (int, float))
                        else "") + "</p>"
                     + (f"<pre>{esc(c.get('outputTail'))}</pre>" if c.get("outputTail") else ""))
    passed = "passed" if gates.get("passed") else "failed"
    return f"<h4>Gates: {esc(passed)} on {short(gates.get('commit'))}</h4>" + "".join(parts)


def _assessment(t: dict[str, Any]) -> str:
    out = ""
    judged = member(t, "assessment") or None
    if judged:
        out += (f"<h4>Assessment: {esc(judged.get('classification'))}</h4>"
                + facts([("reasons", items(judged.get("reasons"))),
                         ("missing evidence", items(judged.get("missingEvidence"))),
                         ("residual risk", items(judged.get("residualRisk")))]))
    salvage = member(t, "salvage") or None
    if salvage:
        kept = "committed" if salvage.get("committed") else "skipped" if salvage.get("skipped") else "not committed"
        out += (f"<h4>Artefact salvage: {esc(kept)}</h4>"
                + facts([("commit", short(salvage.get("sha"))), ("detail", esc(salvage.get("detail"))),
                         ("paths", items(salvage.get("paths")))]))
    return out


def _files(task_id: str, found: list[tuple[str, str]]) -> str:
    """The task's stage files (``<id>-<stage run>.<kind>``), one line per
    stage run: prompt, input, report, event log …"""
    if not found:
        return ""
    by_run: dict[str, list[str]] = {}
    for name, href in found:
        stem, _, kind = name.removeprefix(f"{task_id}-").partition(".")
        by_run.setdefault(stem, []).append(f'<a href="{relative_link(href)}">{esc(kind)}</a>')
    lines = [f"<li><code>{esc(stem)}</code>: {' · '.join(links)}</li>" for stem, links in by_run.items()]
    return f"<h4>Stage files</h4><ul class=\"files\">{''.join(lines)}</ul>"


# --- the run's own notes ------------------------------------------------------------------


def _run_notes(doc: dict[str, Any]) -> str:
    skipped = [(esc(s.get("taskId")), esc(s.get("reason")), esc(s.get("detail"))) for s in dicts(doc.get("skipped"))]
    unparsed = [(esc(u.get("line")), esc(u.get("text")), esc(u.get("reason"))) for u in dicts(doc.get("unparsed"))]
    out = ""
    if skipped:
        out += "<h3>Skipped</h3>" + table(["task", "reason", "detail"], skipped)
    if unparsed:
        out += "<h3>Roadmap lines that are no task</h3>" + table(["line", "text", "why"], unparsed, (0,))
    reconciled = [(esc(p.get("key")), esc(p.get("state")), esc(p.get("became")), _proposal(p), esc(p.get("how")))
                  for p in dicts(doc.get("proposals"))]
    if reconciled:
        out += "<h3>Proposals reconciled</h3>" + table(["task", "request", "became", "where", "how"], reconciled)
    out += _remediation(doc.get("remediation")) + _recovery(doc.get("recovery")) + _claims(doc.get("claims"))
    return f'<section id="run"><h2>The run</h2>{out}</section>' if out else ""


def _remediation(rem: object) -> str:
    if not isinstance(rem, dict) or not rem.get("state"):
        return ""
    added = [(esc(a.get("taskId")), esc(a.get("addendum")), esc(a.get("title"))) for a in dicts(rem.get("added"))]
    return (f"<h3>Remediation: {esc(rem.get('state'))}</h3><p>{esc(rem.get('detail'))}</p>"
            + table(["task", "addendum", "title"], added))


def _recovery(rec: object) -> str:
    if not isinstance(rec, dict):
        return ""
    rows = [(esc(r.get("branch")), esc(r.get("classification") or "-"), esc(r.get("action")), esc(r.get("reason")))
            for r in dicts(rec.get("results"))]
    return (f"<h3>Recovery ({esc(rec.get('mode'))})</h3>"
            + (table(["branch", "classification", "action", "why"], rows) or "<p>no candidates</p>"))


def _claims(claims: object) -> str:
    if not isinstance(claims, dict):
        return ""
    made = claims["made"] if isinstance(claims.get("made"), list) else []
    lost = dicts(claims.get("lost"))
    return (f"<h3>Claims on {esc(claims.get('remote'))}</h3><p>{esc(len(made))} made, {esc(len(lost))} lost</p>"
            + table(["lost", "to host", "workflow"], [(esc(x.get("taskId")), esc(x.get("host")),
                                                       esc(x.get("workflowId"))) for x in lost]))


def _colours() -> str:
    pairs = {"ok": "#2e9e5b", "retried": "#b999ea", "changes": "#e8a33d", "failure": "#d64545",
             "error": "#8e2424", "blocked": "#5f7d8e", "halt": "#8d6e63", "manual": "#26a69a",
             "infra": "#7b3fc4", "provider": "#2f7fd1", "auth": "#c2185b", "config": "#f06292",
             "tamper": "#212121",
             "interrupted": "#8a8a8a",
             "running": "#cfd8dc"}
    return "".join(f".o-{name}{{fill:{c};background:{c}}}" for name, c in pairs.items())


CSS = (
    ":root{color-scheme:light;--ink:#1d2430;--muted:#5b6575;--line:#d9dee7;--ground:#f6f7f9}"
    "*{box-sizing:border-box}"
    "body{margin:0;padding:20px 28px;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "color:var(--ink);background:#fff;overflow-wrap:anywhere}"
    "h1{font-size:20px;margin:0 0 10px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid var(--line);"
    "padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}"
    "h4{font-size:12px;margin:12px 0 4px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}"
    "code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}"
    "pre{white-space:pre-wrap;background:var(--ground);border:1px solid var(--line);padding:6px 8px;"
    "margin:4px 0;max-height:24em;overflow:auto}pre.command{background:#eef3fb}"
    "dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 14px;margin:0}"
    "dt{color:var(--muted)}dd{margin:0;min-width:0}"
    "table{border-collapse:collapse;margin:4px 0 8px;max-width:100%}"
    "th,td{border-bottom:1px solid var(--line);padding:3px 12px 3px 0;text-align:left;vertical-align:top}"
    "th{color:var(--muted);font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "ul{margin:2px 0;padding-left:18px}.none{color:var(--muted);font-style:italic}.why{color:var(--muted)}"
    ".columns{display:flex;flex-wrap:wrap;gap:8px 48px}"
    ".task{border-top:1px solid var(--line);padding-top:2px}"
    ".badge{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px;font-weight:600}"
    ".legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:4px 0 8px;font-size:12px}"
    ".swatch{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;"
    "border:1px solid rgba(0,0,0,.3)}"
    ".wait-swatch{background:repeating-linear-gradient(45deg,#fff4c7 0 3px,#e0bf4a 3px 5px)}"
    ".reviewer-swatch{background:linear-gradient(#d9f7e4 0 33%,#5d2a00 33% 66%,#3c1361 66%)}"
    ".note{color:var(--muted);font-size:12px}"
    ".chart{overflow-x:auto;border:1px solid var(--line)}"
    "svg.timeline{display:block;width:100%;height:auto;min-width:900px;"
    "font:12px system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}"
    ".row-ground{fill:#fff}.row:nth-of-type(even) .row-ground{fill:#f5f7fa}"
    ".row-key{font-weight:600;fill:var(--ink)}.row-lane{font-weight:400;fill:var(--muted);font-size:11px}"
    ".row-title{fill:var(--muted);font-size:11px}.lane-key{fill:var(--muted);font-size:11px}"
    ".lane-bar{stroke:#fff;stroke-width:1.5}.lane-label{fill:#fff;font-size:10px;pointer-events:none}"
    ".tick{stroke:#e3e7ee}.tick-label,.axis-title{fill:var(--muted);font-size:11px}.tick-label{text-anchor:middle}"
    ".bar{stroke:rgba(0,0,0,.35);stroke-width:.6}.bar.running{stroke-dasharray:3 2;stroke:#555}"
    ".bar-label{fill:#fff;font-size:11px;pointer-events:none}"
    ".o-retried+.bar-label,.o-running+.bar-label,.o-changes+.bar-label{fill:#222}"
    ".wait{fill:url(#hatch);stroke:#b08f1c;stroke-width:.6}.wait-label{fill:#5d4a00;font-size:11px;"
    "pointer-events:none}.hatch-ground{fill:#fff4c7}.hatch-line{fill:#e0bf4a}"
    ".v-approve{fill:#d9f7e4}.v-changes{fill:#5d2a00}.v-fault{fill:#3c1361}"
    ".finding.sev-blocking b{color:#b71c1c}.finding.sev-advisory b{color:#8d6e00}"
    "footer{margin-top:32px;color:var(--muted);font-size:12px}"
    + _colours()
)
