"""Workflow records: one commit chain per run under refs/harnery/workflows/<id>
(the chain kind is ``store/workflows``).

Each event is a commit whose tree holds ``workflow.json`` (the result so
far) and whose message is ``<event>: <summary>`` with ``Harnery-Workflow:``,
``Harnery-Event:`` and ``Harnery-State:`` trailers, written with CAS against
the tip that was read [P3]. Like run records they travel with fetch and push
(``git harn sync``), so the stored result names the operator's home folder
as ``~``: a path under it says where, not whose.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from git_harn.errors import BadInput, RaceLost
from git_harn.git import Repo
from git_harn.git.workflow_refs import Oid
from git_harn.store import workflows as store
from git_harn.store.chain import Unreadable
from git_harn.text import home_as_tilde
from git_harn.workflow import host
from git_harn.workflow.result import WorkflowResult

PREFIX = store.WORKFLOWS_PREFIX
FILE = store.WORKFLOW_FILE


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
            try:
                self.tip = store.write(self.repo, result.workflowId, document, event, summary, self.tip)
            except RaceLost as exc:  # nobody else writes this run's ref: report, never overwrite
                raise RaceLost(f"{self.ref} was changed by someone else during the run") from exc


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
    return Stored(workflow_id, found.record, found.tip, host.refs.commit_time(repo, found.tip))


def list_all(repo: Repo) -> Iterator[Stored | tuple[str, str]]:
    """Every record (oldest first by id); an unreadable one as (ref, error)."""
    for found in store.list_all(repo):
        if isinstance(found, Unreadable):
            yield found.ref, found.error
        else:
            workflow_id = str(found.record["workflowId"])
            yield Stored(workflow_id, found.record, found.tip, host.refs.commit_time(repo, found.tip))


def latest(repo: Repo) -> Stored:
    found = [s for s in list_all(repo) if isinstance(s, Stored)]
    if not found:
        raise BadInput("no workflow records yet (git harn workflow run makes one)")
    return max(found, key=lambda s: (str(s.body.get("startedAt", "")), s.workflowId))


def events(repo: Repo, workflow_id: str) -> list[dict[str, Any]]:
    """The record's events, newest first: both sides of a chain that sync merged."""
    return [{"commit": str(e.oid), "time": e.time, "event": e.trailers.get("Harnery-Event", ""),
             "subject": e.subject} for e in store.history(repo, workflow_id)]
