"""Proposals the next run reconciles [F2].

Before it selects, a run (and ``workflow settle``, ``workflow list``) looks
at every live proposal of its remote and base (``store/proposals``):

- one a killed integration left ``proposing`` is finished first: pushed and
  its request opened or found, never a second one;
- merged (the forge says so, or the base holds its change: the squash
  itself, a commit with the task's ``Harnery-Task`` trailer and the squash's
  tree, or the same patch-id; so a merge, a squash merge and a rebase merge
  done on the forge all count) → ``done``: the judged commit is kept under
  ``refs/harnery/integrated/<key>`` as a pushed one is, the landing branch
  deleted if the forge left it, the claim released;
- closed without a merge → ``refused``, with the forge's words: the task's
  branch is made again at the proposed tip, a survivor like any other, and
  the landing branch is kept;
- still open → held: never selected again, never counted as failed.

Nothing here ticks the roadmap: the squash on the base did that, so what
required the task starts once it is merged, and waits while it is proposed.
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from git_harn.clock import epoch_of, now_iso
from git_harn.errors import HarnError
from git_harn.forge.content import merged_by_content as content_merged
from git_harn.forge.propose import squash_of
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.branches import fetch_branch
from git_harn.git.patches import commits_since
from git_harn.integrate import door
from git_harn.integrate.land import keep_landed
from git_harn.integrate.propose import applies, finish, rebuild
from git_harn.store import proposals
from git_harn.tasks.roadmap import find_task, roadmap_file, tasks_at, work_key
from git_harn.text import one_line
from git_harn.workflow.ledger import record as records_of_runs
from git_harn.workflow.ledger.claims import release_mine
from git_harn.workflow.model.result import Skipped, StoredWorkflow, WorkflowList
from git_harn.workflow.model.state import SkipReason

# what a reconcile made of a proposal: the task's state it now stands for
DONE, REFUSED, HELD, HALTED = "done", "refused", "held", "halted"


@dataclass
class Seen:
    """One proposal as a reconcile left it."""

    record: dict[str, Any]
    became: str  # done, refused, held, halted
    how: str = ""  # merged: by whom (the forge, or which content); closed: the forge's words

    def document(self) -> dict[str, Any]:
        record = self.record
        return {"key": record["key"], "taskId": record["taskId"], "addendum": record.get("addendum"),
                "state": record["state"], "became": self.became, "how": self.how, "forge": record.get("forge"),
                "url": record.get("url"), "number": record.get("number"), "head": record["head"],
                "landingBranch": record["landingBranch"], "openedAt": record.get("openedAt"),
                "runId": record.get("runId")}


def live(repo: Repo, remote: str, base: str) -> list[dict[str, Any]]:
    """The proposals of ``<remote>/<base>`` still waiting for their request."""
    return [r for r in proposals.live(repo) if r.get("remote") == remote and r.get("base") == base]


def reconcile(repo: Repo, remote: str, base: str, base_oid: Oid) -> list[Seen]:
    """Every live proposal of ``<remote>/<base>`` (fetched as ``base_oid``) reconciled."""
    return [_one(repo, record, base_oid) for record in live(repo, remote, base)]


def _one(repo: Repo, record: dict[str, Any], base_oid: Oid) -> Seen:
    try:
        if record["state"] == proposals.PROPOSING:
            record = finish(repo, record)  # a killed integration's: pushed and opened once [F1]
        where = door.Where(str(record["remote"]), record.get("forgeName"), record.get("forgeUrl"))
        reading = door.request_state(repo, where, str(record["key"]), str(record.get("forge")),
                                     record.get("number"), record.get("url"), to_oid(str(record["head"])),
                                     str(record["base"]))
        other = _other_head(record, reading)
        if other:
            return Seen(record, HALTED, other)
        merged = "the forge" if reading.state == door.MERGED else merged_by_content(repo, record, base_oid)
        if merged:
            return _merged(repo, record, merged)
        if reading.state == door.CLOSED:
            return _closed(repo, record, reading.words)
        if record["state"] == proposals.CONFLICT or (
                str(base_oid) != record["baseOid"] and not applies(repo, record, base_oid)):
            return _moved_base(repo, record, base_oid)
    except HarnError as exc:  # the forge or the remote could not be asked: held, and said why
        return Seen(record, HELD, one_line(exc.message, 300))
    return Seen(record, HELD)


def _other_head(record: dict[str, Any], reading: door.Reading) -> str:
    """Why a request the forge says is open or merged is not the proposal
    ("": it is): its head is not the judged squash git-harn pushed, so
    someone else moved the landing branch and what it proposes (or what was
    merged) was never judged. Not done, never counted as landed, held for a
    person [T4] [F2]."""
    head = str(record["head"])
    if reading.head is None or str(reading.head) == head or reading.state not in (door.OPEN, door.MERGED):
        return ""
    return (f"the forge says request {record.get('url') or record['landingBranch']} is {reading.state} with head "
            f"{str(reading.head)[:12]}, not the judged squash {head[:12]}: someone else moved "
            f"{record['landingBranch']} on {record['remote']}; what it holds was never judged (close the request "
            "and discard the task, or land the judged squash yourself)")


def merged_by_content(repo: Repo, record: dict[str, Any], base_oid: Oid) -> str:
    """How the base holds the proposal's change ("": it does not): the
    squash itself (a merge, or a fast-forward), or a commit with the task's
    trailer whose tree holds what the squash made of every path it changed,
    the task's box ticked (a squash or rebase merge, on a base that may have
    moved meanwhile)."""
    head = to_oid(str(record["head"]))
    if not repo.has(head):
        return ""
    if repo.contains(base_oid, head):
        return f"{str(head)[:12]} is on the base"
    made = repo.commit_info(head)
    parent = made.parents[0] if made.parents else None
    paths = [p for p in repo.changed_paths(parent, [head]) if p != roadmap_file(repo)] if parent else []
    wanted = _trailers(record)
    task_id = str(record["taskId"])
    for commit, message in repo.grep_log(base_oid, f"^Harnery-Task: {_escaped(task_id)}$"):
        oid = to_oid(commit)
        if _trailers_of(message) != wanted or not _ticked(repo, oid, task_id, record.get("addendum")):
            continue
        if all(repo.entry(oid, path) == repo.entry(head, path) for path in paths):
            return f"{commit[:12]} on the base carries its trailer and its change"
    # no trailer kept (a squash message rewritten on the forge): the same patch-id, since it was made
    took = content_merged(squash_of(repo, head), commits_since(repo, base_oid, to_oid(str(record["baseOid"]))),
                          task_id, record.get("addendum"))
    return f"{str(took)[:12]} on the base makes the same change (patch-id)" if took is not None else ""


def _ticked(repo: Repo, commit: Oid, task_id: str, addendum: int | None) -> bool:
    task = find_task(tasks_at(repo, commit) or [], task_id)
    if task is None:
        return False
    item = task.addendum(addendum) if addendum is not None else None
    return item.done if item is not None else (addendum is None and task.done)


def _escaped(text: str) -> str:
    return text.replace(".", "\\.")


def _trailers(record: dict[str, Any]) -> list[str]:
    addendum = record.get("addendum")
    return [str(addendum)] if addendum is not None else []


def _trailers_of(message: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in message.splitlines() if line.startswith("Harnery-Addendum:")]


def _merged(repo: Repo, record: dict[str, Any], how: str) -> Seen:
    """Done: what was judged is kept as a landed task's is, the landing
    branch goes if the forge left it (only while it holds the squash)."""
    key, head = str(record["key"]), to_oid(str(record["head"]))
    judged, tip = to_oid(str(record["judged"])), to_oid(str(record["tip"]))
    keep_landed(repo, key, judged, tip, f"git-harn: proposal {key} merged")
    remote = str(record["remote"])
    if door.remote_landing(repo, remote, key) == head:
        door.delete_landing(repo, remote, key, head)
    proposals.drop_kept(repo, key)
    record = proposals.write(repo, dict(record, state=proposals.MERGED, how=how, endedAt=now_iso()),
                             proposals.MERGED, how)
    return Seen(record, DONE, how)


def _closed(repo: Repo, record: dict[str, Any], words: str) -> Seen:
    """Refused: the task's branch is made again at the proposed tip (a
    survivor for the operator), the landing branch kept."""
    branch_ref = f"refs/heads/{record['branch']}"
    tip = to_oid(str(record["tip"]))
    if repo.ref_oid(branch_ref) is None and repo.has(tip):
        repo.create_ref(branch_ref, tip, f"git-harn: proposal {record['key']} closed: its work kept as a survivor")
    said = one_line(words, 500) or "closed without a merge"
    with suppress(HarnError):  # a claim it kept goes: the task is the survivor rules' now
        release_mine(repo, str(record["remote"]), str(record["key"]))
    record = proposals.write(repo, dict(record, state=proposals.CLOSED, words=said, endedAt=now_iso()),
                             proposals.CLOSED, said)
    return Seen(record, REFUSED, said)


def _moved_base(repo: Repo, record: dict[str, Any], base_oid: Oid) -> Seen:
    """The base moved and the squash no longer merges onto it: rebuilt there
    (held, the same request updated), or halted naming the conflict."""
    rebuilt = rebuild(repo, record, base_oid)
    if isinstance(rebuilt, dict):
        return Seen(rebuilt, HELD, f"rebuilt on {str(base_oid)[:12]} as {rebuilt['head'][:12]}")
    shown = ", ".join(rebuilt[:10]) + (f" … and {len(rebuilt) - 10} more" if len(rebuilt) > 10 else "")
    words = (f"{record['landingBranch']} no longer merges onto {record['remote']}/{record['base']} "
             f"({str(base_oid)[:12]}): it conflicts in {shown}; resolve it on the request, or close it and "
             f"discard the task")
    if record["state"] != proposals.CONFLICT or record.get("conflictPaths") != rebuilt:  # once per conflict
        record = proposals.write(repo, dict(record, state=proposals.CONFLICT, words=words, conflictPaths=rebuilt),
                                 proposals.CONFLICT, words)
    return Seen(record, HALTED, words)


def held(records: list[dict[str, Any]]) -> list[Skipped]:
    """The tasks a live proposal holds out of selection, each with its request."""
    out = []
    for record in records:
        where = record.get("url") or f"{record['landingBranch']} on {record['remote']}"
        since = record.get("openedAt") or record.get("updatedAt")
        age = f", open {_age(since)}" if since else ""
        waits = record.get("words") if record["state"] == proposals.CONFLICT else "waits for the forge"
        out.append(Skipped(str(record["taskId"]), SkipReason.PROPOSED.value,
                           f"proposed as {where} ({record['state']}{age}): {waits}",
                           record.get("addendum")))
    return out


def age_seconds(record: dict[str, Any]) -> float | None:
    """How long the proposal has been open (None: no time recorded)."""
    since = epoch_of(record.get("openedAt") or record.get("updatedAt"))
    return None if since is None else max(0.0, time.time() - since)


def _age(since: str) -> str:
    then = epoch_of(since)
    seconds = 0.0 if then is None else max(0.0, time.time() - then)
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def reconcile_all(repo: Repo) -> list[Seen]:
    """Every live proposal of this clone reconciled against its own remote
    and base (fetched once each); one whose remote cannot be read is held,
    with why."""
    seen: list[Seen] = []
    places = sorted({(str(r["remote"]), str(r["base"])) for r in proposals.live(repo)})
    for remote, base in places:
        try:
            tip = fetch_branch(repo, remote, base)
        except HarnError as exc:
            seen += [Seen(r, HELD, one_line(exc.message, 300)) for r in live(repo, remote, base)]
            continue
        seen += reconcile(repo, remote, base, tip)
    return seen


def listing(repo: Repo, stale: float | None, ended: bool = False) -> WorkflowList:
    """``workflow list``: the records, and each live proposal as a reconcile
    leaves it, with those this reconcile ended [F2]; ``ended`` (``--all``):
    every proposal ever made too. Without it no proposal that ended before
    is read (``store/proposals``: the live index)."""
    result = records_of_runs.listing(repo, stale)
    seen = {s.record["key"]: s.record for s in reconcile_all(repo)}
    found = proposals.every(repo) if ended else sorted(seen.values(), key=lambda r: str(r["key"]))
    result.proposals = [shown(r) for r in found]
    return result


def shown(record_doc: dict[str, Any]) -> dict[str, Any]:
    """One proposal as ``list`` and ``show`` name it: its request and state, and how long it has been open."""
    age = age_seconds(record_doc) if record_doc["state"] in proposals.LIVE_STATES else None
    return {"key": record_doc["key"], "taskId": record_doc["taskId"], "state": record_doc["state"],
            "forge": record_doc.get("forge"), "url": record_doc.get("url"), "number": record_doc.get("number"),
            "head": record_doc["head"], "branch": record_doc["landingBranch"], "remote": record_doc.get("remote"),
            "base": record_doc.get("base"), "openedAt": record_doc.get("openedAt"),
            "ageSeconds": int(age) if age is not None else None, "words": record_doc.get("words") or "",
            "runId": record_doc.get("runId")}


def show_record(repo: Repo, workflow_id: str | None, stale: float | None) -> StoredWorkflow:
    """``workflow show``: the record, each proposed task's request with the state it has now."""
    found = records_of_runs.shown(repo, workflow_id, stale)
    for task in found.body.get("tasks") or []:
        if task.get("proposal"):
            now = proposals.read(repo, work_key(str(task["taskId"]), task.get("addendum")))
            if now is not None:
                task["proposal"] = dict(task["proposal"], state=now["state"], url=now.get("url") or
                                        task["proposal"].get("url"))
    return found
