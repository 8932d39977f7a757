"""A run's event history, from its record chain, newest first [W6]."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from git_harn.errors import BadInput
from git_harn.git import Repo
from git_harn.results import Result
from git_harn.store import archive
from git_harn.store.ids import validate_run_id


@dataclass
class LogEvent:
    commit: str
    time: int
    event: str
    summary: str
    state: str


@dataclass
class LogResult(Result):
    SCHEMA: ClassVar[str] = "log-result"

    runId: str
    events: list[LogEvent] = field(default_factory=list)
    diverged: Any = None  # set when sync merged a chain that diverged
    outcome: str = "ok"


def run_log(repo: Repo, run_id: str) -> LogResult:
    validate_run_id(run_id)
    stored = archive.read_run(repo, run_id)
    if stored is None:
        raise BadInput(f"unknown run id: {run_id}")
    events = [LogEvent(str(e.oid), e.time, e.event, e.summary, e.state) for e in archive.run_history(repo, run_id)]
    return LogResult(run_id, events, stored.record.extra.get("diverged"))
