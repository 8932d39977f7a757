"""The workflow's integrations: one at a time within this run, the builtin
integrate called as ``git harn integrate`` would be [I1]-[I4]. The tip that
landed is kept by ``integrate.land.keep_landed``, called where it lands."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from git_harn.clock import waiting
from git_harn.git import Oid, Repo
from git_harn.integrate.land import integrate
from git_harn.integrate.target import Request
from git_harn.tasks.config import LandMode
from git_harn.text import jsonable

# This run's own integrations take turns here first, so the merge lock is
# contended (and announced) only by other processes.
INTEGRATIONS = threading.Lock()


@contextmanager
def integration_turn() -> Iterator[None]:
    """This task's turn among the run's integrations; waiting for it is a
    merge-lock wait like any other (kept in the task's timeline)."""
    if not INTEGRATIONS.acquire(blocking=False):
        with waiting("merge-lock", "another task of this run is integrating"):
            INTEGRATIONS.acquire()
    try:
        yield
    finally:
        INTEGRATIONS.release()


def integrate_builtin(repo: Repo, branch: str, base: str, remote: str, task_id: str, judged: Oid,
                      land: LandMode = LandMode.PUSH, body: str = "",
                      run: dict[str, str] | None = None, forge: tuple[str | None, str | None] = (None, None),
                      auto_merge: bool = False) -> dict[str, Any]:
    """The builtin integrate of ``judged`` on ``branch``, in this task's turn,
    as its JSON report; Moved when the branch no longer holds it [T4]. In
    pull-request mode it is proposed instead, ``body`` in its request [F1]."""
    with integration_turn():
        report = integrate(repo, Request(branch, base, remote, task_id, judged=judged, land=land, body=body,
                                         forge=forge[0], forge_url=forge[1], auto_merge=auto_merge), run)
    document: dict[str, Any] = jsonable(report)
    return document

