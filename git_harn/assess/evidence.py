"""Host evidence about a surviving task branch, collected read-only [A1].

Nothing here writes: no ref, no index, no file (git runs with
``--no-optional-locks`` so that even ``git status`` leaves the index alone).
Any failure after the branch and base are resolved ends collection with
``collectionError`` set; the assessor then says the deterministic
``continue-manual`` [A2].
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_harn.assess import gates
from git_harn.clock import now_iso
from git_harn.files import read_regular_file
from git_harn.git import Change, Oid, Repo
from git_harn.git.workdir import DirtyPath, dirty_paths
from git_harn.store import mac, notes
from git_harn.tasks import execplan
from git_harn.tasks.branches import Base, Branch, resolve_base, resolve_branch, worktree_of, worktree_present
from git_harn.tasks.roadmap import parse_task_branch, roadmap_path, validate_task_id

MAX_CHANGED_PATHS = 200
MAX_DIRTY_PATHS = 100
MAX_WALK = 5000  # commits ahead read for their trailers
_TASK_TRAILER = re.compile(r"^Harnery-Task:[ \t]*(?P<id>\S+)[ \t]*$", re.IGNORECASE)


@dataclass
class WorktreeEvidence:
    path: str
    present: bool
    dirtyCount: int | None = None
    dirtyPaths: list[DirtyPath] = field(default_factory=list)


@dataclass
class PlanEvidence:
    path: str | None  # relative to the worktree root
    status: str | None  # the committed plan's Status at the tip
    committed: bool
    worktreeStatus: str | None = None  # the plan file in the worktree, when there is one
    dirty: bool = False


@dataclass
class Evidence:
    branch: str
    ref: str
    taskId: str | None
    addendum: bool
    tip: str
    base: dict[str, str]
    collectedAt: str
    addendumNumber: int | None = None
    mergeBase: str | None = None
    ahead: int | None = None
    behind: int | None = None
    changedPaths: list[str] = field(default_factory=list)
    changedPathsTotal: int | None = None
    alreadyInBase: bool | None = None
    worktree: WorktreeEvidence | None = None
    execPlan: PlanEvidence | None = None
    validation: dict[str, Any] | None = None
    validationProblem: str | None = None  # why a gates note on the tip was disregarded
    validationUnverified: bool = False  # the gates note on the tip is well formed, its MAC unverified here
    review: dict[str, Any] | None = None  # the workflow's review of the work at the tip (its review note)
    reviewProblem: str | None = None  # why a review note on the work was disregarded (reported, not believed)
    taskScoped: bool | None = None
    scopeViolations: list[str] = field(default_factory=list)
    collectionError: str | None = None
    schemaVersion: int = 1


def collect(repo: Repo, branch_name: str, base_rev: str | None, task_id: str | None) -> Evidence:
    """Evidence about ``branch_name``. BadInput (exit 2) when the branch, the
    base or the task id is bad; any later failure is a collection error."""
    branch = resolve_branch(repo, branch_name)
    base = resolve_base(repo, base_rev)
    parsed = parse_task_branch(branch.name)
    task = validate_task_id(task_id) if task_id else (parsed[0] if parsed else None)
    execplan.plans_dir(repo)  # a bad harn.execplans is bad input [P7], not a collection error
    evidence = Evidence(
        branch=branch.name, ref=branch.ref, taskId=task, addendum=bool(parsed and parsed[1] is not None),
        addendumNumber=parsed[1] if parsed else None, tip=str(branch.tip),
        base={"rev": base.rev, "oid": str(base.oid)}, collectedAt=now_iso())
    try:
        _gather(repo, evidence, branch, base)
    except Exception as exc:  # any failure makes the evidence untrustworthy [A2]
        evidence.collectionError = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return evidence


def _gather(repo: Repo, evidence: Evidence, branch: Branch, base: Base) -> None:
    deltas = _history(repo, evidence, branch, base)
    dirty = _worktree(repo, evidence, branch)
    evidence.execPlan = _plan(repo, evidence, branch, dirty)
    _scope(repo, evidence, branch, base, [d.path for d in deltas] + dirty)
    tip_gates = gates.tip_evidence(repo, branch.tip)
    evidence.validation, evidence.validationProblem = tip_gates.note, tip_gates.problem
    evidence.validationUnverified = tip_gates.unverified
    evidence.review, evidence.reviewProblem = review_of(repo, branch.tip)


REVIEW_NOTE = "review"  # written by the workflow on each reviewed tip: verdicts and blocking findings
SALVAGE_HOPS = 20  # git-harn's own salvage commits looked through to the work they sit on


def review_of(repo: Repo, tip: Oid) -> tuple[dict[str, Any] | None, str | None]:
    """(the review a workflow run noted on the work at ``tip``, why a review
    note there was disregarded): on the tip, or on the commit under
    git-harn's own artefact-salvage commits (they add ExecPlans, not work).
    A note is believed only in the shape the workflow writes and with a MAC
    that verifies on this machine; else it is reported, never trusted
    [P5]. (None, None) when the work has commits no review saw."""
    commit = tip
    for _ in range(SALVAGE_HOPS):
        noted = notes.read_note(repo, commit).get(REVIEW_NOTE)
        if noted is not None:
            return _believed(noted, commit)
        info = repo.commit_info(commit)
        if "\nHarnery-Salvage: " not in info.message or not info.parents:
            return None, None
        commit = info.parents[0]
    return None, None


def _believed(noted: Any, commit: Oid) -> tuple[dict[str, Any] | None, str | None]:
    short = str(commit)[:12]
    if not _well_formed(noted, commit):
        return None, f"the review note on {short} is malformed"
    why = mac.unverified(REVIEW_NOTE, str(commit), noted)
    if why is not None:
        said = "approved" if noted["approved"] else "refused"
        return None, f"the review note on {short} ({said}, workflow {str(noted.get('workflowId'))[:80]}) " \
                     f"is unverified here: {why}"
    return mac.without_mac(noted), None


def _well_formed(noted: Any, commit: Oid) -> bool:
    """Notes are refs anyone can write [P5]: only the shape the workflow writes counts."""
    return (isinstance(noted, dict) and noted.get("commit") == str(commit)
            and isinstance(noted.get("approved"), bool) and isinstance(noted.get("verdicts"), list)
            and isinstance(noted.get("blocking"), list))


def _history(repo: Repo, evidence: Evidence, branch: Branch, base: Base) -> list[Change]:
    merge_base = repo.merge_base(branch.tip, base.oid)
    evidence.mergeBase = str(merge_base) if merge_base is not None else None
    evidence.ahead, evidence.behind = repo.ahead_behind(branch.tip, base.oid)
    deltas = repo.diff_trees(merge_base if merge_base is not None else base.oid, branch.tip)
    evidence.changedPathsTotal = len(deltas)
    evidence.changedPaths = [d.path for d in deltas[:MAX_CHANGED_PATHS]]
    if evidence.ahead:
        evidence.alreadyInBase = _already_in(repo, base, deltas)
    return deltas


def _already_in(repo: Repo, base: Base, deltas: list[Change]) -> bool:
    """Whether the base already holds every path as the tip has it (e.g. squash-merged)."""
    for delta in deltas:
        have = repo.entry(base.oid, delta.path)
        if (have[0] if have else None) != delta.new_id:
            return False
    return True


def _worktree(repo: Repo, evidence: Evidence, branch: Branch) -> list[str]:
    path = worktree_of(repo, branch)
    if path is None:
        return []
    present = worktree_present(path)
    evidence.worktree = WorktreeEvidence(str(path), present)
    if not present:
        return []
    dirty = dirty_paths(path)
    evidence.worktree.dirtyCount = len(dirty)
    evidence.worktree.dirtyPaths = dirty[:MAX_DIRTY_PATHS]
    return [d.path for d in dirty]


def _plan(repo: Repo, evidence: Evidence, branch: Branch, dirty: list[str]) -> PlanEvidence | None:
    if evidence.taskId is None:
        return None
    folder = execplan.plans_dir(repo)
    committed = execplan.task_plan_name(execplan.plan_names_at(repo, branch.tip, folder), evidence.taskId)
    root = Path(evidence.worktree.path) if evidence.worktree and evidence.worktree.present else None
    local_names = _names_on_disk(root, folder) if root else []
    name = committed or execplan.task_plan_name(local_names, evidence.taskId)
    if name is None:
        return PlanEvidence(None, None, False)
    path = f"{folder}/{name}"
    raw = execplan.plan_bytes(repo, branch.tip, path) if committed else None
    plan = PlanEvidence(path, execplan.parse_status(raw) if raw is not None else None, committed is not None)
    if root is not None:
        local = read_regular_file(root / path, execplan.MAX_PLAN_BYTES, whole=False) if name in local_names else None
        plan.worktreeStatus = execplan.parse_status(local) if local is not None else None
        plan.dirty = path in dirty
    return plan


def _names_on_disk(root: Path, folder: str) -> list[str]:
    """Regular ``.md`` files directly in ``root/folder``. Symlinks are not
    plans, and a folder reached through a symlink is not the worktree's."""
    if os.path.realpath(root / folder) != os.path.join(os.path.realpath(root), folder):
        return []
    try:
        with os.scandir(root / folder) as entries:
            return [e.name for e in entries if e.name.endswith(".md") and e.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _scope(repo: Repo, evidence: Evidence, branch: Branch, base: Base, touched: list[str]) -> None:
    """Task-scoped unless the change edits the roadmap, another task's
    ExecPlan, or carries a commit whose Harnery-Task trailer names another task."""
    roadmap = roadmap_path(repo.config("harn.roadmap"))
    folder = execplan.plans_dir(repo)
    violations = [f"edits the roadmap {roadmap}"] if roadmap in touched else []
    if evidence.taskId is not None:
        for path in sorted(set(touched)):
            claimed = execplan.plan_task_id(path.rsplit("/", 1)[-1])
            if path.startswith(folder + "/") and claimed is not None and claimed != evidence.taskId:
                violations.append(f"edits another task's ExecPlan {path}")
        violations += _foreign_trailers(repo, branch, base, evidence.taskId)
    evidence.scopeViolations = violations
    evidence.taskScoped = not violations if evidence.taskId is not None or violations else None


def _foreign_trailers(repo: Repo, branch: Branch, base: Base, task_id: str) -> list[str]:
    found = []
    for commit in repo.walk(branch.tip, hide=base.oid, limit=MAX_WALK):
        for named in _task_trailers(commit.message):
            if named != task_id:
                found.append(f"commit {str(commit.oid)[:12]} names task {named} (Harnery-Task)")
    return found


def _task_trailers(message: str) -> list[str]:
    """Harnery-Task values in the message's last paragraph (where git keeps trailers)."""
    last = message.strip().split("\n\n")[-1]
    return [m["id"] for line in last.splitlines() if (m := _TASK_TRAILER.match(line.strip()))]
