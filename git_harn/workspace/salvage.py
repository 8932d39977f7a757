"""Salvage: a workspace's unfinished work, kept on harnery/salvage/<run-id> [W5] [P1].

The working tree is captured through a private copy of the worktree's index
(``git add -A`` then ``git write-tree``), so git itself decides what the work
is: file modes, symlinks as links, deletions, binary files and odd names are
taken exactly as git sees them, and ignored files stay out. Nothing here
touches the worktree's own index, its files or the workspace branch.

Commits are made with pygit2, so no hook runs and none can refuse the work.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from git_harn.clock import now_iso
from git_harn.failpoints import failpoint
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.identity import operator_identity, operator_signature
from git_harn.git.workdir import Capture
from git_harn.git.workdir import capture as capture_trees
from git_harn.git.worktrees import head_of
from git_harn.store.bookkeeping import history_tips
from git_harn.store.notes import merge_note
from git_harn.store.record import RunRecord
from git_harn.text import printable_path
from git_harn.workspace.snapshot import Snapshot

SALVAGE_PREFIX = "refs/heads/harnery/salvage/"
# Every salvaged branch's log, as a user types it: quoted, and through
# --branches, since git takes an unquoted ``harnery/salvage/*`` for a pathspec
# (and the shell would expand it against files first).
SALVAGE_LOG = "git log --branches='harnery/salvage/*'"
MESSAGE_PATHS = 40  # paths named in a commit message; the tree holds them all
RECORDED_PATHS = 1000  # paths kept in the record and the note


def salvage_ref(run_id: str) -> str:
    return SALVAGE_PREFIX + run_id


@dataclass
class Salvaged:
    ref: str
    oid: str
    paths: list[str]
    pathCount: int
    created: int  # new commits made; 0 when the branch points at an existing tip

    def as_record(self) -> dict[str, Any]:
        return {"ref": self.ref, "oid": self.oid, "paths": self.paths, "pathCount": self.pathCount}


def capture(repo: Repo, path: Path, with_tree: bool, head: Oid | None = None,
            keep_index: bool = False) -> Capture:
    """Read the workspace's HEAD (unless given) and (``with_tree``) its index
    and working tree; ``keep_index`` as ``git.workdir.capture`` has it."""
    head = head if head is not None else head_of(path)
    return capture_trees(path, repo.tree_id(head), with_tree, head, keep_index)


def tree_of(repo: Repo, commit: Oid | None) -> Oid:
    return repo.tree_id(commit)


def contains(repo: Repo, tip: Oid, other: Oid) -> bool:
    """Whether ``other`` is ``tip`` or one of its ancestors."""
    return repo.contains(tip, other)


def at_risk(repo: Repo, record: RunRecord, candidates: list[Oid | None],
            tips: dict[str, Oid] | None = None) -> list[Oid]:
    """Those candidates holding commits that no ref reaches but the workspace
    branch (which cleanup deletes, if git-harn created it) and the salvage
    branch (being decided)."""
    exclude = {salvage_ref(record.runId)} | ({record.branch_ref} if record.owns_branch else set())
    tips = tips if tips is not None else history_tips(repo)
    found: list[Oid] = []
    for oid in candidates:
        if oid is not None and oid not in found and repo.unique_commits(oid, exclude, limit=1, tips=tips):
            found.append(oid)
    return found


def is_dirty(repo: Repo, cap: Capture) -> bool:
    if cap.work_tree is None:
        return False
    return cap.index_tree is not None or cap.work_tree != tree_of(repo, cap.head)


def save(repo: Repo, record: RunRecord, cap: Capture, frozen: Oid, snap: Snapshot) -> Salvaged | None:
    """Put everything at risk on the salvage branch: the uncommitted work
    (when captured) and any commit only the workspace branch or HEAD holds.
    None when nothing is at risk. The salvage branch only ever moves forward.
    The refs are those of ``snap``, which learns where the salvage went."""
    ref = salvage_ref(record.runId)
    previous = snap.tips.get(ref)
    tip = snap.tip
    risky = at_risk(repo, record, [cap.head, tip, frozen], snap.tips)
    if is_dirty(repo, cap):
        paths = repo.changed_paths(tree_of(repo, cap.head), [cap.work_tree, cap.index_tree])
        target, created = _commit_work(repo, record, cap, frozen, risky, previous, paths)
    elif risky:
        paths = repo.changed_paths(tree_of(repo, _known_base(repo, record)), [repo.tree_id(t) for t in risky])
        target, created = _keep_commits(repo, record, risky, previous, paths)
    else:
        return None
    failpoint("reclaim-after-salvage-commit")
    if target != previous:
        repo.move_ref(ref, target, previous, f"git-harn: salvage of run {record.runId}")
        snap.moved(ref, target)
    failpoint("reclaim-after-salvage-ref")
    salvaged = Salvaged(ref, str(target), paths[:RECORDED_PATHS], len(paths), created)
    merge_note(repo, target, "salvage", _note(repo, record, salvaged))
    return salvaged


def _commit_work(repo: Repo, record: RunRecord, cap: Capture, frozen: Oid,
                 risky: list[Oid], previous: Oid | None,
                 paths: list[str]) -> tuple[Oid, int]:
    """The working tree as a commit on top of HEAD; staged versions that
    differ from both get a commit of their own underneath, as git stash does."""
    assert cap.work_tree is not None
    if previous is not None and _already_saved(repo, record, cap, previous):
        return previous, 0  # a rerun after a crash: this very work is saved
    head = cap.head or frozen
    extras = [t for t in [*risky, previous] if t is not None and not contains(repo, head, t)]
    who = operator_identity(repo)
    base, created = head, 0
    if cap.index_tree is not None:
        staged = repo.changed_paths(tree_of(repo, cap.head), [cap.index_tree])
        base = repo.make_commit(cap.index_tree, [head], _message(record, "staged versions", staged),
                                who.author, who.committer)
        created += 1
    text = _message(record, "uncommitted work", paths)
    parents = [base, *dict.fromkeys(extras)]
    oid = repo.make_commit(cap.work_tree, parents, text, who.author, who.committer)
    return oid, created + 1


def _already_saved(repo: Repo, record: RunRecord, cap: Capture, previous: Oid) -> bool:
    commit = repo.commit_info(previous)
    if commit.tree != cap.work_tree or f"Harnery-Workspace: {record.workspaceId}" not in commit.message:
        return False
    if cap.head is not None and not contains(repo, previous, cap.head):
        return False
    if cap.index_tree is None:
        return True
    return bool(commit.parents) and repo.tree_id(commit.parents[0]) == cap.index_tree


def _keep_commits(repo: Repo, record: RunRecord, risky: list[Oid],
                  previous: Oid | None, paths: list[str]) -> tuple[Oid, int]:
    """A clean tree with commits at risk: point the salvage branch at the tip
    that holds them all (no new commit), or join them when none does."""
    tips = [*risky, *([previous] if previous is not None else [])]
    for tip in tips:
        if all(contains(repo, tip, other) for other in tips):
            return tip, 0
    who = operator_identity(repo)
    text = _message(record, "commits", paths)
    oid = repo.make_commit(repo.tree_id(risky[0]), list(dict.fromkeys(tips)), text, who.author, who.committer)
    return oid, 1


def _known_base(repo: Repo, record: RunRecord) -> Oid | None:
    """The workspace's base commit, if this repository still has it."""
    try:
        base = to_oid(record.base["oid"])
    except (KeyError, ValueError, TypeError):
        return None
    return base if repo.has(base) else None


def _message(record: RunRecord, what: str, paths: list[str]) -> str:
    """Names the run, the workspace and the paths (bounded), then the trailers.
    Paths are data: control characters are escaped and every path line is
    indented, so no file name can pose as a trailer [P5]."""
    lines = [
        f"salvage: {what} of run {record.runId}",
        "",
        f"git harn reclaim saved the {what} left in workspace {record.workspaceId}",
        f"(branch {record.branch}, {printable_path(record.path)}).",
        "",
        f"Paths ({len(paths)}):",
        *(f"  {printable_path(p)}" for p in paths[:MESSAGE_PATHS]),
    ]
    if len(paths) > MESSAGE_PATHS:
        lines.append(f"  … and {len(paths) - MESSAGE_PATHS} more")
    lines += ["", f"Harnery-Run: {record.runId}", f"Harnery-Workspace: {record.workspaceId}", ""]
    return "\n".join(lines)


def _note(repo: Repo, record: RunRecord, salvaged: Salvaged) -> dict[str, Any]:
    signature = operator_signature(repo)
    return {
        "run": record.runId,
        "workspace": record.workspaceId,
        "branch": record.branch,
        "ref": salvaged.ref,
        "operator": f"{signature.name} <{signature.email}>",
        "time": now_iso(),
        "paths": salvaged.paths,
        "pathCount": salvaged.pathCount,
    }
