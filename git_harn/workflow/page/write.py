"""``git harn workflow report``: the page of one workflow record, written
where the run keeps its stage files, or where the operator says.

The page is drawn from the record alone (``chart``, ``render``); what this
module adds is what only this machine knows: which of the run's stage files
(prompts, inputs, reports, event logs) are here to link to, and a browser
to open the page in.
"""

from __future__ import annotations

import os
import webbrowser
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from git_harn.errors import BadInput
from git_harn.files import atomic_write, private_dir
from git_harn.git import Repo
from git_harn.results import Result
from git_harn.store import proposals
from git_harn.tasks.roadmap import work_key
from git_harn.workflow.ledger import record
from git_harn.workflow.page import render
from git_harn.workflow.page.chart import chart, dicts, text

PAGE = "report.html"
MAX_LINKED_FILES = 5000  # a run folder an agent filled with names is listed this far, no further


@dataclass
class ReportWritten(Result):
    SCHEMA: ClassVar[str] = "workflow-report"

    workflowId: str
    path: str
    bytes: int
    tasks: int
    opened: bool | None = None  # None: --open was not given
    openDetail: str = ""

    @property
    def outcome(self) -> str:
        return "ok"



def write_report(repo: Repo, workflow_id: str | None, output: Path | None, open_page: bool) -> ReportWritten:
    """Write the page of ``workflow_id`` (default: the newest record) and open it when asked."""
    stored = record.read(repo, workflow_id) if workflow_id else record.latest(repo)
    folder = record.run_folder(repo, stored.workflowId)
    target = _target(output) if output is not None else folder / PAGE
    if output is None:
        private_dir(folder)  # a record fetched from another clone has no run folder here yet
    # A run still recorded running (or killed: the runner died before it
    # recorded its stages) is drawn as its run folder kept it, up to when
    # the runner was last alive.
    doc, alive_at = record.with_stage_times(stored.body, folder)
    for task in dicts(doc.get("tasks")):  # a proposed task's request as it stands now [F2]
        now = proposals.read(repo, work_key(text(task.get("taskId")), task.get("addendum")))
        if task.get("proposal") and now is not None:
            task["proposal"] = dict(task["proposal"], state=now["state"], url=now.get("url"))
    ids = {text(t.get("taskId")) for t in dicts(doc.get("tasks"))}
    as_of = max(float(stored.time), alive_at or 0.0)
    page = render.page(doc, chart(doc, as_of), stage_files(folder, target.parent, ids),
                       f"{record.workflow_ref(stored.workflowId)} at {str(stored.tip)[:12]}")
    data = page.encode("utf-8", "replace")
    atomic_write(target, data)
    written = ReportWritten(stored.workflowId, str(target), len(data), len(ids))
    if open_page:
        written.opened, written.openDetail = open_in_browser(target)
    return written


def _target(output: Path) -> Path:
    """``--output``: a file in a folder that exists (bad input otherwise, nothing written)."""
    target = Path(os.path.abspath(output))
    if target.is_dir():
        raise BadInput(f"--output {output}: is a folder; name the file to write, e.g. {output}/report.html")
    if not target.parent.is_dir():
        raise BadInput(f"--output {output}: no folder {target.parent}")
    return target


def stage_files(folder: Path, page_folder: Path, task_ids: set[str]) -> render.Files:
    """The run's own files of each task (``<task id>-<stage>…``), linked
    relative to where the page is; only regular files, never a link an
    agent left there."""
    found: render.Files = {}
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return found  # not on this machine (a fetched record), or unreadable: no links
    for entry in entries[:MAX_LINKED_FILES]:
        task_id = entry.name.split("-", 1)[0]
        if task_id in task_ids and entry.is_file(follow_symlinks=False):
            link = os.path.relpath(folder / entry.name, page_folder)
            found.setdefault(task_id, []).append((entry.name, link))
    return found


def open_in_browser(path: Path) -> tuple[bool, str]:
    """Open the page in the operator's browser (``BROWSER``, else what the
    desktop offers): (opened, what went wrong). The page is written either way."""
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False, "no browser found to open it (set BROWSER to one); open the file yourself"
    if browser.open(path.resolve().as_uri()):
        return True, ""
    return False, f"the browser {getattr(browser, 'name', '?')} did not open it; open the file yourself"
