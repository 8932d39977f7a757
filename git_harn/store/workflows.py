"""Workflow records: one chain per workflow run under
``refs/harnery/workflows/<id>``, each commit's tree the run's result so far
(``workflow.json`` the run-level fields, ``tasks/<index>.json`` one task
each, so an event writes only the tasks it changed; a record written with
its tasks inside ``workflow.json`` still reads), with the ``Harnery-Workflow``, ``Harnery-Event`` and
``Harnery-State`` (the run's outcome) trailers, and ``Harnery-Host`` (the
host that wrote the event) [P3]."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from git_harn.errors import CorruptRecord
from git_harn.git import Oid, Repo
from git_harn.git.objects import BLOB_MODE, REGULAR_MODES
from git_harn.store import chain

WORKFLOWS_PREFIX = chain.ROOT + "workflows/"
WORKFLOW_FILE = "workflow.json"
TASKS = chain.Parts("tasks", "tasks")
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
    _check_id, parts=TASKS)


def write(repo: Repo, workflow_id: str, document: dict[str, Any], event: str, summary: str,
          old_tip: Oid | None, writer_host: str | None = None) -> Oid:
    """Append one event holding ``document`` (its tasks inside); RaceLost if
    the tip moved. ``writer_host``: the host that wrote the event
    (``Harnery-Host``), which for a closing event is not the runner's."""
    head = {key: value for key, value in document.items() if key != TASKS.member}
    tasks = document.get(TASKS.member) or []
    return write_parts(repo, workflow_id, head, [task_blob(repo, task) for task in tasks], event, summary,
                       old_tip, writer_host)


def task_blob(repo: Repo, task: dict[str, Any]) -> Oid:
    """The blob of one task as a record holds it, for ``write_parts``."""
    return repo.write_blob(chain.encode(task))


def write_parts(repo: Repo, workflow_id: str, head: dict[str, Any], tasks: Sequence[Oid], event: str,
                summary: str, old_tip: Oid | None, writer_host: str | None = None) -> Oid:
    """``write`` of a result given as its run-level fields (``head``, no
    tasks) and its tasks' blobs in order (``task_blob``'s, an unchanged
    task's kept from the event before): O(what changed)."""
    files: dict[str, tuple[bytes | Oid, int]] = {WORKFLOW_FILE: (chain.encode(head), BLOB_MODE)}
    files.update((TASKS.path(index), (blob, BLOB_MODE)) for index, blob in enumerate(tasks))
    more = [("Harnery-State", str(head.get("outcome", "")))]
    if writer_host is not None:
        more.append(("Harnery-Host", writer_host))
    return chain.write_files(repo, WORKFLOWS, workflow_id, files, event, summary, more, old_tip)


def part_ids(repo: Repo, tip: Oid) -> tuple[Oid | None, list[Oid]]:
    """The blob ids of a record commit's ``workflow.json`` and of each of
    its task files, in order, reading no blob: a reader that keeps what it
    read before reads again only the blobs whose id changed (``workflow
    watch``). A task file that is no regular file ends the list."""
    head = repo.entry(tip, WORKFLOW_FILE)
    tasks: list[Oid] = []
    while (found := repo.entry(tip, TASKS.path(len(tasks)))) is not None and found[1] in REGULAR_MODES:
        tasks.append(found[0])
    return (head[0] if head is not None and head[1] in REGULAR_MODES else None), tasks


def read(repo: Repo, workflow_id: str) -> chain.Stored[dict[str, Any]] | None:
    return chain.read(repo, WORKFLOWS, workflow_id)


def list_all(repo: Repo) -> Iterator[chain.Stored[dict[str, Any]] | chain.Unreadable]:
    return chain.list_all(repo, WORKFLOWS)


def history(repo: Repo, workflow_id: str) -> list[chain.Entry]:
    return chain.history(repo, WORKFLOWS, workflow_id)
