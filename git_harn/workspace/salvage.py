"""Salvage: a workspace's unfinished work, kept on harnery/salvage/<run-id> [W5] [P1].

The working tree is captured through a private copy of the worktree's index
(``git add -A`` then ``git write-tree``), so git itself decides what the work
is: file modes, symlinks as links, deletions, binary files and odd names are
taken exactly as git sees them, and ignored files stay out. Nothing here
touches the worktree's own index, its files or the workspace branch.

Commits are made with pygit2, so no hook runs and none can refuse the work.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from git_harn.clock import now_iso
from git_harn.errors import GitFailure, Refused
from git_harn.failpoints import failpoint
from git_harn.git import Repo
from git_harn.git.identity import operator_signature
from git_harn.git.run import run_git
from git_harn.store.notes import merge_note
from git_harn.store.record import RunRecord
from git_harn.text import printable_path

SALVAGE_PREFIX = "refs/heads/harnery/salvage/"
SCRATCH_INDEX = "harn-salvage-index"
MESSAGE_PATHS = 40  # paths named in a commit message; the tree holds them all
RECORDED_PATHS = 1000  # paths kept in the record and the note


def salvage_ref(run_id: str) -> str:
    return SALVAGE_PREFIX + run_id


@dataclass
class Capture:
    """The workspace as found: its HEAD and, in salvage mode, its trees."""

    head: pygit2.Oid | None
    work_tree: pygit2.Oid | None  # None: the tree was not captured (discard)
    index_tree: pygit2.Oid | None  # only when it differs from HEAD and the work tree


@dataclass
class Salvaged:
    ref: str
    oid: str
    paths: list[str]
    pathCount: int
    created: int  # new commits made; 0 when the branch points at an existing tip

    def as_record(self) -> dict[str, Any]:
        return {"ref": self.ref, "oid": self.oid, "paths": self.paths, "pathCount": self.pathCount}


def open_worktree(path: Path) -> pygit2.Repository:
    try:
        return pygit2.Repository(str(path))
    except pygit2.GitError as exc:
        raise GitFailure(f"cannot open the worktree at {path}: {exc}") from exc


def head_commit(worktree: pygit2.Repository) -> pygit2.Oid | None:
    """The commit the worktree has checked out (None: unborn or missing)."""
    try:
        target = worktree.head.target
    except (pygit2.GitError, KeyError, ValueError):
        return None
    return target if isinstance(target, pygit2.Oid) else None


def capture(repo: Repo, path: Path, with_tree: bool) -> Capture:
    """Read the workspace's HEAD and (``with_tree``) its index and working tree."""
    worktree = open_worktree(path)
    head = head_commit(worktree)
    if not with_tree:
        return Capture(head, None, None)
    admin = Path(worktree.path)
    # The scratch index lives in the worktree's own admin folder, so a crash
    # that leaves it behind is swept away when cleanup removes the worktree.
    scratch = admin / SCRATCH_INDEX
    try:
        if (admin / "index").exists():
            # copy2 keeps the index's mtime, which git's racy-clean check relies on.
            shutil.copy2(admin / "index", scratch)
        env = {"GIT_INDEX_FILE": str(scratch)}
        index_tree = _write_tree(path, env)  # None when the index holds a conflict
        unhide(path, env)
        done = run_git(["add", "-A"], path, check=False, env=env)
        if done.returncode != 0:
            raise Refused(f"cannot salvage {path}: git add failed: "
                          f"{done.stderr.decode('utf-8', 'replace').strip()}")
        work_tree = _write_tree(path, env)
    finally:
        scratch.unlink(missing_ok=True)
    if work_tree is None:
        raise GitFailure(f"git write-tree failed in {path}")
    head_tree = tree_of(repo, head)
    if index_tree in (head_tree, work_tree):
        index_tree = None
    return Capture(head, work_tree, index_tree)


def unhide(path: Path, env: dict[str, str]) -> None:
    """Clear skip-worktree and assume-unchanged from files that exist on disk,
    in the index ``env`` names: for ``git add -A`` to see their changes (which
    are work), and for ``reset --hard`` to restore them."""
    done = run_git(["ls-files", "-v", "-z"], path, check=False, env=env)
    hidden = [entry[2:] for entry in done.stdout.split(b"\0")
              if len(entry) > 2 and (entry[:1] == b"S" or entry[:1].islower())
              and os.path.lexists(path / entry[2:].decode("utf-8", "surrogateescape"))]
    for flag in ("--no-skip-worktree", "--no-assume-unchanged"):  # one flag per call: the last wins
        if hidden:
            run_git(["update-index", flag, "-z", "--stdin"], path, env=env,
                    input_bytes=b"\0".join(hidden) + b"\0")


def _write_tree(path: Path, env: dict[str, str]) -> pygit2.Oid | None:
    done = run_git(["write-tree"], path, check=False, env=env)
    if done.returncode != 0:
        return None
    return pygit2.Oid(hex=done.stdout.decode().strip())


def tree_of(repo: Repo, commit: pygit2.Oid | None) -> pygit2.Oid:
    if commit is None:
        return repo.pg.TreeBuilder().write()
    return repo.commit(commit).tree_id


def contains(repo: Repo, tip: pygit2.Oid, other: pygit2.Oid) -> bool:
    """Whether ``other`` is ``tip`` or one of its ancestors."""
    return tip == other or repo.pg.descendant_of(tip, other)


def at_risk(repo: Repo, record: RunRecord, candidates: list[pygit2.Oid | None]) -> list[pygit2.Oid]:
    """Those candidates holding commits that no ref reaches but the workspace
    branch (which cleanup deletes) and the salvage branch (being decided)."""
    exclude = {record.branch_ref, salvage_ref(record.runId)}
    found: list[pygit2.Oid] = []
    for oid in candidates:
        if oid is not None and oid not in found and repo.unique_commits(oid, exclude, limit=1):
            found.append(oid)
    return found


def is_dirty(repo: Repo, cap: Capture) -> bool:
    if cap.work_tree is None:
        return False
    return cap.index_tree is not None or cap.work_tree != tree_of(repo, cap.head)


def save(repo: Repo, record: RunRecord, cap: Capture, frozen: pygit2.Oid) -> Salvaged | None:
    """Put everything at risk on the salvage branch: the uncommitted work
    (when captured) and any commit only the workspace branch or HEAD holds.
    None when nothing is at risk. The salvage branch only ever moves forward."""
    ref = salvage_ref(record.runId)
    previous = repo.ref_oid(ref)
    tip = repo.ref_oid(record.branch_ref)
    risky = at_risk(repo, record, [cap.head, tip, frozen])
    if is_dirty(repo, cap):
        paths = _paths_between(repo, tree_of(repo, cap.head), [cap.work_tree, cap.index_tree])
        target, created = _commit_work(repo, record, cap, frozen, risky, previous, paths)
    elif risky:
        paths = _paths_between(repo, tree_of(repo, _known_base(repo, record)),
                               [repo.commit(t).tree_id for t in risky])
        target, created = _keep_commits(repo, record, risky, previous, paths)
    else:
        return None
    failpoint("reclaim-after-salvage-commit")
    if target != previous:
        repo.move_ref(ref, target, previous, f"git-harn: salvage of run {record.runId}")
    failpoint("reclaim-after-salvage-ref")
    salvaged = Salvaged(ref, str(target), paths[:RECORDED_PATHS], len(paths), created)
    merge_note(repo, target, "salvage", _note(repo, record, salvaged))
    return salvaged


def _commit_work(repo: Repo, record: RunRecord, cap: Capture, frozen: pygit2.Oid,
                 risky: list[pygit2.Oid], previous: pygit2.Oid | None,
                 paths: list[str]) -> tuple[pygit2.Oid, int]:
    """The working tree as a commit on top of HEAD; staged versions that
    differ from both get a commit of their own underneath, as git stash does."""
    assert cap.work_tree is not None
    if previous is not None and _already_saved(repo, record, cap, previous):
        return previous, 0  # a rerun after a crash: this very work is saved
    head = cap.head or frozen
    extras = [t for t in [*risky, previous] if t is not None and not contains(repo, head, t)]
    signature = operator_signature(repo)
    base, created = head, 0
    if cap.index_tree is not None:
        staged = _paths_between(repo, tree_of(repo, cap.head), [cap.index_tree])
        text = _message(record, "staged versions", staged)
        base = repo.pg.create_commit(None, signature, signature, text, cap.index_tree, [head])
        created += 1
    text = _message(record, "uncommitted work", paths)
    parents = [base, *dict.fromkeys(extras)]
    oid = repo.pg.create_commit(None, signature, signature, text, cap.work_tree, parents)
    return oid, created + 1


def _already_saved(repo: Repo, record: RunRecord, cap: Capture, previous: pygit2.Oid) -> bool:
    commit = repo.commit(previous)
    if commit.tree_id != cap.work_tree or f"Harnery-Workspace: {record.workspaceId}" not in commit.message:
        return False
    if cap.head is not None and not contains(repo, previous, cap.head):
        return False
    if cap.index_tree is None:
        return True
    return bool(commit.parents) and commit.parents[0].tree_id == cap.index_tree


def _keep_commits(repo: Repo, record: RunRecord, risky: list[pygit2.Oid],
                  previous: pygit2.Oid | None, paths: list[str]) -> tuple[pygit2.Oid, int]:
    """A clean tree with commits at risk: point the salvage branch at the tip
    that holds them all (no new commit), or join them when none does."""
    tips = [*risky, *([previous] if previous is not None else [])]
    for tip in tips:
        if all(contains(repo, tip, other) for other in tips):
            return tip, 0
    signature = operator_signature(repo)
    text = _message(record, "commits", paths)
    oid = repo.pg.create_commit(None, signature, signature, text, repo.commit(risky[0]).tree_id,
                                list(dict.fromkeys(tips)))
    return oid, 1


def _known_base(repo: Repo, record: RunRecord) -> pygit2.Oid | None:
    """The workspace's base commit, if this repository still has it."""
    try:
        base = pygit2.Oid(hex=record.base["oid"])
    except (KeyError, ValueError, TypeError):
        return None
    return base if base in repo.pg else None


def _paths_between(repo: Repo, old: pygit2.Oid, news: list[pygit2.Oid | None]) -> list[str]:
    """Every path that differs between tree ``old`` and any of ``news``, sorted."""
    found: set[str] = set()
    old_tree = repo.pg[old].peel(pygit2.Tree)
    for new in news:
        if new is None:
            continue
        diff = old_tree.diff_to_tree(repo.pg[new].peel(pygit2.Tree))
        for delta in diff.deltas:
            for side in (delta.old_file, delta.new_file):
                # Undecodable bytes are shown escaped; the tree keeps the real name.
                found.add(side.raw_path.decode("utf-8", "backslashreplace"))
    return sorted(found)


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
