"""Remediation [R6]: review findings become roadmap addenda.

Triage: the advisory findings of the final review round of a task that
landed, and the blocking findings of the final round of a task that failed
review, each become one addendum item under that task (duplicates, by text,
once). Tasks that ended ``infra-fault`` are not triaged: their process died,
and what the reviewers saw says nothing reliable.

The final flush, once, when every task has ended: under the merge lock,
fetch ``<remote>/<base>``, add the items to the roadmap there as
``- [ ] addendum <n>: <title>`` (``n`` one past the task's highest), make one
commit with a ``Harnery-Remediation: <workflow id>`` trailer on top of the
fetched tip, and push it with a lease on that tip (never forced). A lost race
fetches and starts again; a commit with this run's trailer already on the
base means an earlier attempt landed, and nothing is pushed twice.

Suppressed when the run had a provider or auth fault (transient adapter
failures must not create roadmap work) or was interrupted; a dry run never
flushes. The result's ``remediation`` member says what was triaged, what was
written, or why nothing was.
"""

from __future__ import annotations

import re
from typing import Any

from git_harn.errors import HarnError
from git_harn.failpoints import failpoint
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.branches import fetch_branch, tracking_ref
from git_harn.git.identity import machine_signature
from git_harn.git.remote import MOVED_ON, Update, ls_remote, push
from git_harn.integrate import door
from git_harn.integrate.land import merge_lock
from git_harn.integrate.propose import BODY_LIMIT, printable_text
from git_harn.tasks import roadmap as _roadmap
from git_harn.tasks.config import LandMode
from git_harn.tasks.roadmap import roadmap_bytes_at, roadmap_file
from git_harn.text import one_line
from git_harn.workflow.model.config import Effective
from git_harn.workflow.model.result import TaskResult, WorkflowResult
from git_harn.workflow.model.state import State
from git_harn.workflow.model.state import suppression as run_suppression
from git_harn.workflow.task.integration import integration_turn

TRAILER = "Harnery-Remediation"
MAX_ATTEMPTS = 5
MAX_ITEMS = 100  # per run: a flood of findings is cut here, and said so
TITLE_LIMIT = 200

# why a run wrote no remediation (state.suppression), as the sentence says it
SUPPRESSION_WORDS = {State.PROVIDER_FAULT.value: "had a provider fault", State.AUTH_FAULT.value: "had an auth fault",
                     State.INTERRUPTED.value: "was interrupted"}

FLUSHED = "flushed"
SUPPRESSED = "suppressed"
NOTHING = "nothing-to-flush"
ALREADY = "already-flushed"
FAILED_FLUSH = "failed"
DRY_RUN = "dry-run"
PROPOSED = "proposed"  # pull-request mode: on git-harn's own landing branch, never the base [F1]
REMEDIATION_BRANCH = "harnery/land/remediation-"  # + the workflow id


def _empty(state: str, reason: str | None, detail: str) -> dict[str, Any]:
    return {"state": state, "reason": reason, "detail": detail, "triaged": [], "skipped": [], "added": [],
            "commit": None, "attempts": 0}


def dry_run() -> dict[str, Any]:
    return _empty(DRY_RUN, DRY_RUN, "a dry run never writes remediation")


def interrupted_end(repo: Repo, base: Oid | None, workflow_id: str) -> dict[str, Any]:
    """What a run whose runner died left of the flush: landed (the base has a
    commit with its trailer), else suppressed, as after any interruption."""
    if base is not None and repo.grep_log(base, f"^{TRAILER}: {re.escape(workflow_id)}$"):
        return _empty(ALREADY, "interrupted", "the runner died after its remediation commit landed")
    return _empty(SUPPRESSED, "interrupted", "the runner died before the final flush: no remediation is written")


# --- triage -----------------------------------------------------------------------


def _title(finding: dict[str, Any]) -> str:
    """One printable line of untrusted text, bounded [P5]: it can never become
    a line of its own in the roadmap."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(finding.get("text") or "")).split())
    path = finding.get("path")
    where = f" ({' '.join(str(path).split())[:120]})" if isinstance(path, str) and path.strip() else ""
    title = f"review finding ({finding['severity']}){where}: {text}"
    return title if len(title) <= TITLE_LIMIT else title[:TITLE_LIMIT - 1].rstrip() + "…"


def _final_round(tr: TaskResult) -> list[dict[str, Any]]:
    reviews = (tr.review or {}).get("reviews") or []
    last = max((r.get("round", 0) for r in reviews), default=0)
    return [r for r in reviews if r.get("round", 0) == last]


def triage(result: WorkflowResult) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(items, skipped tasks): what the final flush would write, and whose
    findings were left out and why."""
    items: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for tr in result.tasks:
        ended = State.of(tr)
        if not ended.triaged:
            skipped.append({"taskId": tr.taskId, "addendum": tr.addendum, "reason": ended.value})
            continue
        wanted = ended.triaged_severity(tr.stage)
        if wanted is None:
            continue
        for review in _final_round(tr):
            for finding in review.get("findings") or []:
                if not isinstance(finding, dict) or finding.get("severity") != wanted:
                    continue
                title = _title(finding)
                key = (tr.taskId, _norm(title))
                if key in seen or not str(finding.get("text") or "").strip():
                    continue
                seen.add(key)
                items.append({"taskId": tr.taskId, "from": tr.addendum, "severity": wanted,
                              "text": one_line(str(finding.get("text")), 2000),
                              "path": finding.get("path") if isinstance(finding.get("path"), str) else None,
                              "title": title, "reviewer": review.get("reviewer"), "round": review.get("round")})
    return items, skipped


def _norm(title: str) -> str:
    return " ".join(title.lower().split())


def suppression(result: WorkflowResult) -> str | None:
    """Why the flush must not run: a provider or auth fault anywhere in the
    run, or an interruption (the rule ``remediationSuppressed`` reports)."""
    return run_suppression((State.of(t) for t in result.tasks), result.interrupted, result.blocked,
                           result.faultMetrics)


# --- writing the items into the roadmap text ------------------------------------------


def add_items(text: str, items: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(new text, added, left out): each item as the next addendum of its task,
    after the task's last line (its Requires: and addendum lines), indented
    like its other addenda; an item whose title the task already has, or
    whose task the roadmap no longer has, is left out."""
    added: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    for item in items:
        task = _roadmap.find_task(_roadmap.parse_roadmap(text), item["taskId"])
        if task is None:
            left.append({"taskId": item["taskId"], "addendum": None, "reason": "task-not-in-roadmap"})
            continue
        if any(_norm(a.title) == _norm(item["title"]) for a in task.addenda):
            left.append({"taskId": item["taskId"], "addendum": None, "reason": "already-in-roadmap"})
            continue
        number = max((a.number for a in task.addenda), default=0) + 1
        lines = text.split("\n")
        indent = task.addenda[-1].indent if task.addenda else task.indent + "  "
        ending = "\r" if lines[task.end].endswith("\r") else ""
        lines.insert(task.end + 1, f"{indent}- [ ] addendum {number}: {item['title']}{ending}")
        text = "\n".join(lines)
        added.append({"taskId": item["taskId"], "addendum": number, "title": item["title"]})
    return text, added, left


def commit_message(workflow_id: str, added: list[dict[str, Any]]) -> str:
    listed = "\n".join(f"- task {a['taskId']}, addendum {a['addendum']}: {a['title']}" for a in added)
    return (f"Remediation: {len(added)} addendum item(s) from workflow {workflow_id}\n\n"
            f"Review findings of workflow {workflow_id}, triaged into roadmap addenda:\n{listed}\n\n"
            f"{TRAILER}: {workflow_id}\nHarnery-Workflow: {workflow_id}\n")


# --- the final flush ------------------------------------------------------------------


def finish(repo: Repo, eff: Effective, result: WorkflowResult) -> None:
    """Triage the run's findings and flush them once; never raises for git's
    or the remote's trouble (the result says what happened)."""
    items, skipped = triage(result)
    why = suppression(result)
    if why is not None:
        rem = _empty(SUPPRESSED, why, f"the run {SUPPRESSION_WORDS.get(why, why)}: no remediation is written "
                     "(the triaged findings stay in this record)")
    elif not items:
        rem = _empty(NOTHING, "nothing-triaged", "no review finding to triage")
    else:
        rem = _empty(NOTHING, None, "")
        cut = items[MAX_ITEMS:]
        items = items[:MAX_ITEMS]
        try:
            _flush(repo, eff, result.workflowId, items, rem)
        except HarnError as exc:
            rem.update(state=FAILED_FLUSH, reason="error", detail=one_line(exc.message, 500))
        except OSError as exc:  # the record of the run must still be written [P6]
            rem.update(state=FAILED_FLUSH, reason="error", detail=one_line(f"remediation flush: {exc}", 500))
        if cut:
            rem["detail"] += f"; {len(cut)} more finding(s) were not written (at most {MAX_ITEMS} per run)"
    rem["triaged"] = items
    rem["skipped"] = skipped + rem["skipped"]
    result.remediation = rem


def _flush(repo: Repo, eff: Effective, workflow_id: str, items: list[dict[str, Any]],
           rem: dict[str, Any]) -> None:
    path = roadmap_file(repo)
    with integration_turn(), merge_lock(repo, f"workflow {workflow_id}: remediation flush"):
        for attempt in range(1, MAX_ATTEMPTS + 1):
            rem["attempts"] = attempt
            base = fetch_branch(repo, eff.remote, eff.base)
            earlier = repo.grep_log(base, f"^{TRAILER}: {re.escape(workflow_id)}$")
            if earlier:
                rem.update(state=ALREADY, reason=None, commit=earlier[0][0],
                           detail=f"{earlier[0][0][:12]} on {eff.upstream} already holds this run's remediation")
                return
            entry = repo.entry(base, path)
            raw = roadmap_bytes_at(repo, base)  # whole, or TooLarge: the flush fails, nothing is pushed
            if entry is None or raw is None:
                rem.update(state=FAILED_FLUSH, reason="no-roadmap", detail=f"{eff.upstream} has no roadmap at {path}")
                return
            text, added, left = add_items(raw.decode("utf-8", "surrogateescape"), items)
            rem.update(added=added, skipped=left)
            if not added:
                rem.update(state=NOTHING, reason="already-in-roadmap",
                           detail=f"every triaged item is already in {path} on {eff.upstream}")
                return
            commit = repo.commit_files({path: (text.encode("utf-8", "surrogateescape"), entry[1])},
                                       commit_message(workflow_id, added), [base], machine_signature(repo),
                                       base=base)
            failpoint("remediation-before-push")
            if eff.land is LandMode.PULL_REQUEST:
                _propose(repo, eff, workflow_id, commit, rem, len(added))
                return
            pushed = push(repo, eff.remote, [Update(f"refs/heads/{eff.base}", str(commit), str(base))], lease=True)
            if pushed.ok:
                failpoint("remediation-after-push")
                _follow(repo, eff, commit, base)
                rem.update(state=FLUSHED, reason=None, commit=str(commit), detail=(
                    f"{len(added)} addendum item(s) written to {path} on {eff.upstream} as {str(commit)[:12]} "
                    f"after {attempt} attempt(s)"))
                return
            if pushed.status != MOVED_ON:
                rem.update(state=FAILED_FLUSH, reason="push-refused",
                           detail=one_line(f"push to {eff.upstream} was refused: {pushed.told()}", 500))
                return
        rem.update(state=FAILED_FLUSH, reason="retries-exhausted",
                   detail=f"{eff.upstream} kept moving: the remediation push was rejected {MAX_ATTEMPTS} time(s)")


def _propose(repo: Repo, eff: Effective, workflow_id: str, commit: Oid, rem: dict[str, Any], count: int) -> None:
    """Pull-request mode: the remediation commit goes to git-harn's own
    branch ``harnery/land/remediation-<workflow id>`` (moved from what the
    remote holds, with a lease; never the base) and a request is opened from
    it on the run's forge (found again, never a second, when the flush runs
    again), for a maintainer to merge; a plain remote takes the branch
    alone. Once it is on the base, its trailer says so and no later flush of
    this run writes it again [F1]."""
    branch = f"{REMEDIATION_BRANCH}{workflow_id}"
    ref = f"refs/heads/{branch}"
    try:
        held = ls_remote(repo, eff.remote, [ref]).get(ref)
        where = door.Where(eff.remote, eff.forge, eff.forgeUrl)
        opened = door.open_branch(repo, where, branch, eff.base, commit, to_oid(held) if held else None,
                                  f"Roadmap addenda from workflow {workflow_id}",  # findings' words: printable
                                  printable_text(repo.commit_info(commit).message[:BODY_LIMIT], keep="\n"))
    except HarnError as exc:
        rem.update(state=FAILED_FLUSH, reason="push-refused",
                   detail=one_line(f"push of {ref} to {eff.remote} was refused: {exc.message}", 500))
        return
    request = None if opened.forge == door.PLAIN else {"forge": opened.forge, "url": opened.url,
                                                       "number": opened.number}
    then = (f"request {opened.url or branch} is open for it" if request is not None
            else "merge it, or open a request from it")
    rem.update(state=PROPOSED, reason=None, commit=str(commit), request=request, detail=(
        f"{count} addendum item(s) written to the roadmap as {str(commit)[:12]} on "
        f"{branch} of {eff.remote} (pull-request mode: never on {eff.upstream}); {then}"))


def _follow(repo: Repo, eff: Effective, commit: Oid, base: Oid) -> None:
    """The remote-tracking ref follows the push when no fetch refspec moved it."""
    tracking = tracking_ref(eff.remote, eff.base)
    if repo.ref_oid(tracking) == base:
        repo.move_ref(tracking, commit, base, "git-harn: workflow: remediation pushed")
