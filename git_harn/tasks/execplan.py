"""ExecPlans: the agent's plan and log of a task, ``docs/execplans/<id>[-<words>].md``.

The folder is git config ``harn.execplans``. A plan's status is the first line
of the form ``Status: DRAFT | APPROVED | IN PROGRESS | COMPLETE | BLOCKED``
(any case, markdown emphasis around it tolerated). The text is untrusted
[P5]: it is only ever matched line by line, never run, and a hostile or
binary plan can only fail to have a status.
"""

from __future__ import annotations

import posixpath
import re

from git_harn.errors import BadInput
from git_harn.git import Oid, Repo
from git_harn.git.objects import REGULAR_MODES
from git_harn.tasks.roadmap import MAX_LINE, TASK_ID

DEFAULT_EXECPLANS = "docs/execplans"
MAX_PLAN_BYTES = 1 << 20  # a status line lives near the top; never read more than this

STATUSES = ("DRAFT", "APPROVED", "IN PROGRESS", "COMPLETE", "BLOCKED")
# Whitespace and emphasis marks form ONE character class wherever both may
# appear, so no two neighbouring quantifiers can share a character: every
# match attempt is linear in the line, however hostile [P5]. Lines are stripped
# of surrounding whitespace before matching for the same reason.
_FILL = r"[ \t*_`~]*"
_STATUS_LINE = re.compile(
    rf"(?:(?:[-+*>]|#{{1,6}})[ \t])?{_FILL}status{_FILL}:{_FILL}"
    rf"(?P<status>draft|approved|in[ _-]?progress|complete|blocked)[ \t*_`~.]*",
    re.IGNORECASE,
)
_PLAN_NAME = re.compile(rf"^(?P<id>{TASK_ID})(?:-[^/]*)?\.md$")


def plans_dir(repo: Repo) -> str:
    """The ExecPlan folder relative to the worktree root, normalised.

    BadInput when the configured folder is absolute or leaves the worktree.
    """
    given = (repo.config("harn.execplans") or DEFAULT_EXECPLANS).strip()
    configured = given.rstrip("/")
    normal = posixpath.normpath(configured)
    if not configured or given.startswith("/") or normal == "." or normal.startswith(".."):
        raise BadInput(f"harn.execplans must be a folder inside the worktree, not {configured!r}")
    return normal


def parse_status(raw: bytes) -> str | None:
    """The plan's status (one of STATUSES), or None when no line has the form."""
    text = raw[:MAX_PLAN_BYTES].decode("utf-8", "replace")
    for line in text.splitlines():
        if len(line) > MAX_LINE:
            continue
        match = _STATUS_LINE.fullmatch(line.strip(" \t"))
        if match:
            word = re.sub(r"[ _-]+", "", match["status"].upper())
            return "IN PROGRESS" if word == "INPROGRESS" else word
    return None


def plan_task_id(name: str) -> str | None:
    """The task id a plan file name claims (``1.2.md``, ``1.2-words.md``), or None."""
    match = _PLAN_NAME.match(name)
    return match["id"] if match else None


def plan_names_at(repo: Repo, commit: Oid, folder: str) -> list[str]:
    """Names of the regular ``.md`` files directly inside ``folder`` at ``commit``."""
    return sorted(name for name, mode in repo.list_folder(commit, folder)
                  if name.endswith(".md") and mode in REGULAR_MODES)


def task_plan_name(names: list[str], task_id: str) -> str | None:
    """The plan file of ``task_id`` among ``names``: ``<id>.md`` first, then
    the first ``<id>-<words>.md``."""
    exact = f"{task_id}.md"
    if exact in names:
        return exact
    return next((n for n in sorted(names) if plan_task_id(n) == task_id), None)


def plan_bytes(repo: Repo, commit: Oid, path: str) -> bytes | None:
    """The first MAX_PLAN_BYTES of the regular file at ``path`` in ``commit``:
    a peek for the status line, never written back."""
    return repo.read_file(commit, path, limit=MAX_PLAN_BYTES, regular_only=True, whole=False)


def plan_at(repo: Repo, commit: Oid, task_id: str) -> tuple[str | None, str | None]:
    """(path of the task's ExecPlan at ``commit``, its Status) — (None, None) if none."""
    folder = plans_dir(repo)
    name = task_plan_name(plan_names_at(repo, commit, folder), task_id)
    if name is None:
        return None, None
    path = f"{folder}/{name}"
    raw = plan_bytes(repo, commit, path)  # its status line is near the top
    return path, (parse_status(raw) if raw is not None else None)
