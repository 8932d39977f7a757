"""The workflow's integrations: one at a time within this run, the builtin
integrate called as ``git harn integrate`` would be [I1]-[I4], and the tip
that landed kept under ``refs/harnery/integrated/``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from git_harn.clock import waiting
from git_harn.git import Oid, Repo
from git_harn.git.branches import keep_ref
from git_harn.integrate.land import integrate
from git_harn.integrate.target import Request
from git_harn.store.bookkeeping import INTEGRATED_ROOT
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


def integrate_builtin(repo: Repo, branch: str, base: str, remote: str, task_id: str) -> dict[str, Any]:
    """The builtin integrate of ``branch``, in this task's turn, as its JSON report."""
    with integration_turn():
        report = integrate(repo, Request(branch, base, remote, task_id))
    document: dict[str, Any] = jsonable(report)
    return document


def keep_integrated(repo: Repo, key: str, tip: Oid, message: str) -> str:
    """Keep ``tip`` under ``refs/harnery/integrated/<key>`` (never moved: a new name instead)."""
    return keep_ref(repo, INTEGRATED_ROOT + key, tip, message)
