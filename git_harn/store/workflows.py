"""Workflow records: one chain per workflow run under
``refs/harnery/workflows/<id>``, each commit's ``workflow.json`` the run's
result so far, with the ``Harnery-Workflow``, ``Harnery-Event`` and
``Harnery-State`` (the run's outcome) trailers, and ``Harnery-Host`` (the
host that wrote the event) [P3]."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from git_harn.errors import CorruptRecord
from git_harn.git import Oid, Repo
from git_harn.store import chain

WORKFLOWS_PREFIX = chain.ROOT + "workflows/"
WORKFLOW_FILE = "workflow.json"
FORMAT_VERSION = 1


def _check_id(workflow_id: str) -> None:
    if "/" in workflow_id:
        raise CorruptRecord("a workflow id is one ref name component")


def _check(workflow_id: str, raw: bytes, where: str) -> dict[str, Any]:
    data = chain.json_object(WORKFLOWS, raw, where)
    if data.get("workflowId") != workflow_id:
        raise CorruptRecord(f"corrupt workflow record {where}: not this workflow's result")
    return data


def _as_dict(document: dict[str, Any]) -> dict[str, Any]:
    return document


WORKFLOWS: chain.Kind[dict[str, Any]] = chain.Kind(
    "workflow record", WORKFLOWS_PREFIX, WORKFLOW_FILE, "Harnery-Workflow", FORMAT_VERSION, _check, _as_dict,
    _check_id)


def write(repo: Repo, workflow_id: str, document: dict[str, Any], event: str, summary: str,
          old_tip: Oid | None, writer_host: str | None = None) -> Oid:
    """Append one event holding ``document``; RaceLost if the tip moved.
    ``writer_host``: the host that wrote the event (``Harnery-Host``), which
    for a closing event is not the runner's."""
    content = (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode()
    more = [("Harnery-State", str(document.get("outcome", "")))]
    if writer_host is not None:
        more.append(("Harnery-Host", writer_host))
    return chain.write(repo, WORKFLOWS, workflow_id, content, event, summary, more, old_tip)


def read(repo: Repo, workflow_id: str) -> chain.Stored[dict[str, Any]] | None:
    return chain.read(repo, WORKFLOWS, workflow_id)


def list_all(repo: Repo) -> Iterator[chain.Stored[dict[str, Any]] | chain.Unreadable]:
    return chain.list_all(repo, WORKFLOWS)


def history(repo: Repo, workflow_id: str) -> list[chain.Entry]:
    return chain.history(repo, WORKFLOWS, workflow_id)
