"""Workflow records: one commit chain per run under refs/harnery/workflows/<id>.

Each event is a commit whose tree holds ``workflow.json`` (the result so
far) and whose message is ``<event>: <summary>`` with ``Harnery-Workflow:``,
``Harnery-Event:`` and ``Harnery-State:`` trailers, written with CAS against
the tip that was read [P3]. Like run records they travel with fetch and push
(``git harn sync``), so the stored result names the operator's home folder
as ``~``: a path under it says where, not whose.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from git_harn.errors import BadInput, CorruptRecord, RaceLost
from git_harn.files import loads_json
from git_harn.git import Repo
from git_harn.git.workflow_refs import Oid
from git_harn.text import home_as_tilde, one_line
from git_harn.workflow import host
from git_harn.workflow.result import WorkflowResult

PREFIX = "refs/harnery/workflows/"
FILE = "workflow.json"


def new_workflow_id() -> str:
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"wf-{stamp}{int(now * 1000) % 1000:03d}Z-{secrets.token_hex(3)}"


def workflow_ref(workflow_id: str) -> str:
    return PREFIX + workflow_id


class Writer:
    """Appends events for one run; thread-safe, CAS against its own last tip."""

    def __init__(self, repo: Repo, workflow_id: str) -> None:
        self.repo = repo
        self.ref = workflow_ref(workflow_id)
        self.tip: Oid | None = None
        self._lock = threading.Lock()

    def write(self, result: WorkflowResult, event: str, summary: str) -> None:
        with self._lock:
            document = home_as_tilde(result.document(), os.path.expanduser("~"))
            content = (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode()
            message = (f"{event}: {one_line(summary)}\n\n"
                       f"Harnery-Workflow: {result.workflowId}\n"
                       f"Harnery-Event: {event}\n"
                       f"Harnery-State: {document['outcome']}\n")
            try:
                self.tip = host.refs.chain_write(self.repo, self.ref, FILE, content, message, self.tip)
            except RaceLost as exc:  # nobody else writes this run's ref: report, never overwrite
                raise RaceLost(f"{self.ref} was changed by someone else during the run") from exc


@dataclass
class Stored:
    workflowId: str
    body: dict[str, Any]
    tip: Oid
    time: int


def _body(repo: Repo, name: str, tip: Oid) -> dict[str, Any]:
    raw = host.refs.chain_read(repo, tip, FILE)
    if raw is None:
        raise CorruptRecord(f"corrupt workflow record {name}: no {FILE} in {tip}")
    try:
        body = loads_json(raw)
    except ValueError as exc:
        raise CorruptRecord(f"corrupt workflow record {name}: not JSON ({exc})") from exc
    if not isinstance(body, dict) or body.get("workflowId") != name[len(PREFIX):]:
        raise CorruptRecord(f"corrupt workflow record {name}: not this workflow's result")
    return body


_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def read(repo: Repo, workflow_id: str) -> Stored:
    if not _ID.fullmatch(workflow_id) or ".." in workflow_id or workflow_id.endswith((".lock", ".")):
        raise BadInput(f"invalid workflow id {workflow_id!r}")
    name = workflow_ref(workflow_id)
    tip = repo.ref_oid(name)
    if tip is None:
        raise BadInput(f"unknown workflow id: {workflow_id}")
    return Stored(workflow_id, _body(repo, name, tip), tip, host.refs.commit_time(repo, tip))


def list_all(repo: Repo) -> Iterator[Stored | tuple[str, str]]:
    """Every record (oldest first by id); an unreadable one as (ref, error)."""
    for name, tip in sorted(repo.refs_under(PREFIX)):
        try:
            yield Stored(name[len(PREFIX):], _body(repo, name, tip), tip, host.refs.commit_time(repo, tip))
        except CorruptRecord as exc:
            yield name, exc.message


def latest(repo: Repo) -> Stored:
    found = [s for s in list_all(repo) if isinstance(s, Stored)]
    if not found:
        raise BadInput("no workflow records yet (git harn workflow run makes one)")
    return max(found, key=lambda s: (str(s.body.get("startedAt", "")), s.workflowId))


def events(repo: Repo, workflow_id: str) -> list[dict[str, Any]]:
    return [{"commit": str(e.oid), "time": e.time, "event": e.trailers.get("Harnery-Event", ""),
             "subject": e.subject} for e in host.refs.chain_history(repo, workflow_ref(workflow_id))]
