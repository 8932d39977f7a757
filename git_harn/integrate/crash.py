"""A crash is not retried behind the operator's back [I4].

A marker file exists only while an integrate runs (under the merge lock);
Python-level failures remove it, a killed process cannot, and that is the
point: the next integrate of that task stops and asks the operator to look.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from git_harn.clock import now_iso
from git_harn.files import atomic_write, loads_json
from git_harn.git import Repo
from git_harn.integrate.report import NEEDS_OPERATOR, IntegrationReport, new_report
from git_harn.integrate.target import Target, slug
from git_harn.notices import info


def marker_path(repo: Repo, target: Target) -> Path:
    return marker_for(repo, target.task_id, target.addendum)


def marker_for(repo: Repo, task_id: str, addendum: int | None) -> Path:
    return repo.common_dir / "harnery" / "integrate" / f"{slug(task_id, addendum)}.json"


@contextmanager
def crash_marker(repo: Repo, target: Target) -> Iterator[None]:
    path = marker_path(repo, target)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"taskId": target.task_id, "branch": target.branch,
                                   "remote": target.remote, "base": target.base,
                                   "pid": os.getpid(), "startedAt": now_iso()}).encode())
    try:
        yield
    finally:
        with suppress(FileNotFoundError):
            path.unlink()


def interrupted_report(repo: Repo, target: Target, resume: bool) -> IntegrationReport | None:
    """A needs-operator report if an earlier integrate of this task died midway."""
    path = marker_path(repo, target)
    try:
        left = loads_json(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        left = {}
    if resume:
        path.unlink(missing_ok=True)
        info(f"resuming after an interrupted integrate of task {target.task_id}")
        return None
    return new_report(target, outcome=NEEDS_OPERATOR, summary=(
        f"an earlier integrate of task {target.task_id} (pid {left.get('pid', '?')}, started "
        f"{left.get('startedAt', '?')}) was interrupted and is not retried automatically: it may "
        f"already have pushed. Inspect {target.upstream} (git fetch {target.remote}; git log "
        f"{target.upstream}) and {target.roadmap} there, then finish it: "
        + "git harn " + shlex.join(("integrate", target.branch, "--remote", target.remote, "--base", target.base,
                                    "--resume-after-crash"))))
