"""Artefact salvage: commit dirty ExecPlans onto the task branch [A4].

After ``adopt-partial``, ``continue-manual`` or an infrastructure fault, the
task's plans must survive worktree cleanup. Only the task's own plans
(``<folder>/<id>.md``, ``<folder>/<id>-<words>.md``) are committed; other
paths, other tasks' plans, nested files, symlinks (the file or a folder on
the way) and anything resolving outside the worktree are rejected before the
commit and left alone. The commit is built from a private in-memory index
(the worktree's own staged and unstaged changes are not swept in), authored
and committed by the machine identity, with no hook run. Order for crash
safety [P6]: commit object, then the worktree index for the salvaged paths,
then the branch ref (compare-and-swap [P3]); a kill in between leaves at
worst a staged plan that a rerun commits.
It never merges, pushes or ticks a roadmap checkbox.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from git_harn.assess.assessor import (
    ADOPT_COMPLETE,
    COLLECTION_ERROR,
    DISCARD,
    assessment_problems,
    has_reason,
)
from git_harn.errors import BadInput
from git_harn.failpoints import failpoint
from git_harn.files import read_regular_file
from git_harn.git import Oid, Repo
from git_harn.git.identity import machine_signature
from git_harn.git.objects import BLOB_MODE, EXECUTABLE_MODE
from git_harn.git.workdir import dirty_paths, index_ids, stage_blobs
from git_harn.results import Result
from git_harn.store import notes
from git_harn.tasks import execplan
from git_harn.tasks.branches import Branch, resolve_branch, worktree_of, worktree_present
from git_harn.tasks.roadmap import TASK_ID, parse_task_branch
from git_harn.text import jsonable, printable_path

INFRA_FAULT = "infra-fault"
SALVAGE_CLASSIFICATIONS = ("adopt-complete", "adopt-partial", "continue-manual", "discard", INFRA_FAULT)
MAX_PLAN_FILE = 16 << 20
# Reclaim's salvage note is member "salvage"; artefact salvage has its own
# kind (notes written before it shared "salvage" and are still read).
NOTE_KIND = "artefactSalvage"
_SKIP = {
    ADOPT_COMPLETE: "adopt-complete goes through the ordinary review and integration path",
    DISCARD: "discard: the branch is to be thrown away",
}


@dataclass
class Rejected:
    path: str
    reason: str


@dataclass
class SalvageResult(Result):
    SCHEMA: ClassVar[str] = "salvage-result"

    branch: str
    classification: str
    committed: bool = False
    skipped: bool = False
    sha: str | None = None
    detail: str = ""
    worktree: str | None = None
    paths: list[str] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    schemaVersion: int = 1
    outcome: str = "ok"  # it ran, whether it committed or skipped


def salvage(repo: Repo, branch_name: str, classification: str | None,
            assessment: dict[str, Any] | None, worktree: str | None) -> SalvageResult:
    """Salvage the dirty ExecPlans of ``branch_name`` unless a rule says skip."""
    branch = resolve_branch(repo, branch_name)
    classification = _classification(branch, classification, assessment)
    result = SalvageResult(branch.name, classification)
    skip = _skip_reason(classification, assessment)
    root = None if skip else _worktree(repo, branch, assessment, worktree, result)
    if skip or root is None:
        result.skipped = True
        result.detail = skip or result.detail
        return result
    result.worktree = str(root)
    return _salvage_in(repo, branch, root, result, _task_id(branch, assessment))


def _task_id(branch: Branch, assessment: dict[str, Any] | None) -> str | None:
    """The task whose ExecPlans may be salvaged: the branch name's (roadmap-<id>),
    else the assessment's (given with ``assess --task``) when it is a task id."""
    parsed = parse_task_branch(branch.name)
    if parsed:
        return parsed[0]
    claimed = assessment.get("taskId") if assessment is not None else None
    return claimed if isinstance(claimed, str) and re.fullmatch(TASK_ID, claimed) else None


def _classification(branch: Branch, given: str | None, assessment: dict[str, Any] | None) -> str:
    if (given is None) == (assessment is None):
        raise BadInput("give exactly one of --classification and --assessment")
    if assessment is None:
        assert given is not None
        if given not in SALVAGE_CLASSIFICATIONS:
            raise BadInput(f"unknown classification {given!r}")
        return given
    problems = assessment_problems(assessment)
    if problems:
        raise BadInput(f"the assessment is not valid: {problems[0]}")
    if assessment["branch"] != branch.name:
        raise BadInput(f"the assessment is of branch {assessment['branch']}, not {branch.name}")
    return str(assessment["classification"])


def _skip_reason(classification: str, assessment: dict[str, Any] | None) -> str | None:
    if classification in _SKIP:
        return f"skipped: {_SKIP[classification]}"
    if assessment is not None and has_reason(assessment, COLLECTION_ERROR):
        return "skipped: evidence collection failed, so the evidence cannot be trusted"
    return None


def _worktree(repo: Repo, branch: Branch, assessment: dict[str, Any] | None,
              given: str | None, result: SalvageResult) -> Path | None:
    """The branch's worktree. An explicit --worktree must be it (else bad
    input); one named by the assessment that is not it is a skip."""
    actual = worktree_of(repo, branch)
    if given is not None:
        if actual is None or Path(given).resolve() != actual.resolve():
            raise BadInput(f"{given} is not a worktree with {branch.name} checked out")
        named: str | None = given
    elif assessment is not None:
        named = (assessment["evidence"].get("worktree") or {}).get("path")
    else:
        named = str(actual) if actual is not None else None
    if named is None:
        result.detail = "skipped: no worktree path is known for the branch"
    elif actual is None or Path(named).resolve() != actual.resolve():
        result.detail = f"skipped: {printable_path(named)} no longer has {branch.name} checked out"
    elif not worktree_present(actual):
        result.detail = f"skipped: the worktree folder {printable_path(named)} is missing"
    else:
        return actual
    return None


def _salvage_in(repo: Repo, branch: Branch, root: Path, result: SalvageResult,
                task_id: str | None) -> SalvageResult:
    folder = execplan.plans_dir(repo)
    dirty = dirty_paths(root)
    candidates = [d.path for d in dirty if d.path.endswith(".md") or d.path.startswith(folder + "/")
                  or d.path == folder]
    safe = []
    for path in candidates:
        reason = vet_path(root, path, folder, task_id)
        if reason is None:
            safe.append(path)
        else:
            result.rejected.append(Rejected(path, reason))
    others = len(dirty) - len(candidates)
    sha = _commit_plans(repo, branch, root, safe, result.classification) if safe else None
    result.committed, result.sha = sha is not None, str(sha) if sha else None
    result.paths = safe if sha else []
    result.detail = _describe(result, others, bool(safe))
    if sha is not None:
        notes.merge_note(repo, sha, NOTE_KIND, jsonable(result))
    return result


def vet_path(root: Path, path: str, folder: str, task_id: str | None) -> str | None:
    """Why ``path`` (relative to the worktree ``root``) must not be salvaged, or None."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return "escapes the worktree (absolute or '..' path)"
    if path != folder and not path.startswith(folder + "/"):
        return "outside the ExecPlan tree"
    current = root
    for depth, part in enumerate(parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return "deleted in the worktree; nothing to salvage"
        if stat.S_ISLNK(mode):
            return "symlink" if depth == len(parts) - 1 else "symlinked folder on the way"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    seen = os.lstat(current)
    if seen.st_nlink > 1:  # the same file as one outside the worktree, perhaps
        return "has another hard link"
    if seen.st_size > MAX_PLAN_FILE:  # committed whole or not at all, never cut
        return f"larger than {MAX_PLAN_FILE >> 20} MiB"
    if not path.endswith(".md"):
        return "not a .md file"
    if not os.path.realpath(current).startswith(os.path.realpath(root) + os.sep):
        return "resolves outside the worktree"
    return _not_the_tasks_plan(path, folder, task_id)


def _not_the_tasks_plan(path: str, folder: str, task_id: str | None) -> str | None:
    """Only ``<folder>/<id>.md`` and ``<folder>/<id>-<words>.md`` of this task:
    committing another task's plan or a nested file would make the branch
    edit outside its task, and a later assessment would call it not task-scoped."""
    if task_id is None:
        return "no task id: the branch is not roadmap-<id>"
    name = path[len(folder) + 1:]
    if "/" in name:
        return "nested below the ExecPlan folder"
    claimed = execplan.plan_task_id(name)
    if claimed is None:
        return f"not an ExecPlan of task {task_id}"
    return None if claimed == task_id else f"another task's ExecPlan (task {claimed})"


def _commit_plans(repo: Repo, branch: Branch, root: Path, paths: list[str],
                  classification: str) -> Oid | None:
    """Commit ``paths`` as they are on disk on top of the tip; None when the
    tip already holds them. Moves the branch only if it is still at the tip."""
    entries = [_entry(repo, root, path) for path in paths]
    tree = repo.tree_with(branch.tip, {path: (blob, mode) for path, blob, mode in entries})
    if tree == repo.tree_id(branch.tip):
        return None
    sha = repo.make_commit(tree, [branch.tip], _message(branch, paths, classification), machine_signature(repo))
    failpoint("salvage-artefacts-before-index")
    _stage_in_worktree(repo, root, branch.tip, entries)
    failpoint("salvage-artefacts-before-ref")
    repo.move_ref(branch.ref, sha, branch.tip, "git-harn: salvage ExecPlan artefacts")
    return sha


def _entry(repo: Repo, root: Path, path: str) -> tuple[str, Oid, int]:
    data = read_regular_file(root / path, MAX_PLAN_FILE)
    if data is None:
        raise BadInput(f"{printable_path(path)} changed while it was being salvaged; run again")
    executable = os.lstat(root / path).st_mode & stat.S_IXUSR
    return path, repo.write_blob(data), EXECUTABLE_MODE if executable else BLOB_MODE


def _stage_in_worktree(repo: Repo, root: Path, tip: Oid, entries: list[tuple[str, Oid, int]]) -> None:
    """Make the worktree's index agree with the salvage commit for the salvaged
    paths, except where it holds a staged version of its own: that one stays
    staged, so it is not lost [P1]."""
    staged = index_ids(root, [path for path, _, _ in entries])
    keep = []
    for path, blob, mode in entries:
        committed = repo.entry(tip, path)
        if staged[path] in (None, committed[0] if committed else None, blob):
            keep.append((path, blob, mode))
    stage_blobs(root, keep)


def _message(branch: Branch, paths: list[str], classification: str) -> str:
    parsed = parse_task_branch(branch.name)
    shown = "\n".join(f"  {printable_path(p)}" for p in paths)
    trailers = f"Harnery-Task: {parsed[0]}\n" if parsed else ""
    return (f"git-harn: salvage ExecPlan artefacts of {branch.name}\n\n"
            f"Classification: {classification}\nPaths:\n{shown}\n\n"
            f"{trailers}Harnery-Salvage: artefacts\n")


def _describe(result: SalvageResult, others: int, had_safe: bool) -> str:
    parts = []
    if result.committed:
        parts.append(f"committed {len(result.paths)} ExecPlan(s): {', '.join(result.paths)}")
    elif had_safe:
        parts.append("the dirty ExecPlans already match the branch tip; nothing to commit")
    else:
        parts.append("no dirty ExecPlan to salvage")
    parts += [f"rejected {printable_path(r.path)} ({r.reason})" for r in result.rejected]
    if others:
        parts.append(f"{others} other dirty path(s) left alone")
    return "; ".join(parts)
