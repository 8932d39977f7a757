"""Keep records true to the disk: a vanished workspace is already_gone [W7].

Where a workspace is comes from the record and the worktree registration:
another host's or another clone's workspace is never acted on [P1]; a
folder that is absent is gone only when no registration says it will be
back (locked) or can be reconnected (preserved uncommitted work).

Every command that looks at a workspace calls in here, so nothing depends on
the hooks being installed.
"""

from __future__ import annotations

import os
from pathlib import Path

from git_harn.errors import Busy, HarnError, Refused
from git_harn.git import Oid, Repo, worktrees
from git_harn.git.identity import clone_id, host_name
from git_harn.git.reffiles import loose_ref_lock
from git_harn.git.repo import open_git_dir
from git_harn.git.worktrees import (
    admin_dir,
    detached_head,
    is_locked,
    lock_reason,
    registered_elsewhere,
    registered_worktrees,
)
from git_harn.notices import info, warn
from git_harn.store import runs as store
from git_harn.store.locks import hold_run, hold_worktrees, holder_gone
from git_harn.store.record import ALREADY_GONE, PRESERVED_DIRTY, RELEASED, RunRecord
from git_harn.text import one_line, printable_path
from git_harn.workspace.paths import FOREIGN, GONE, HERE, MISSING, REMOTE, UNAVAILABLE
from git_harn.workspace.seen import lost_with_folder


def foreign_home(repo: Repo, record: RunRecord) -> str | None:
    """Where the clone that made this workspace lives, when it is not this
    one: its folder is another repository's linked worktree, or its record
    names another clone [P1]. None for this clone's workspaces, and for a
    record written before records named their clone (unless its folder is
    another repository's)."""
    other = registered_elsewhere(repo, Path(record.path))
    if other is not None:
        return str(other)
    clone = record.clone
    if clone is None or clone.get("id") == clone_id(repo):
        return None
    return clone.get("commonDir") or f"clone {clone.get('id')}"


def presence(repo: Repo, record: RunRecord) -> str:
    """Where the workspace is, seen from this clone: HERE, REMOTE (another
    host's), FOREIGN (another clone's), or, when its folder is absent,
    UNAVAILABLE, MISSING or GONE (see ``_absence``)."""
    if record.host != host_name(repo):
        return REMOTE
    if foreign_home(repo, record) is not None:
        return FOREIGN
    return HERE if os.path.isdir(record.path) else _absence(repo, record)


def _absence(repo: Repo, record: RunRecord) -> str:
    """Why the folder is absent, judged from the worktree registration: a
    locked one says the folder will be back (a disk away); one that still
    names the folder of a workspace with preserved uncommitted work is what
    ``git worktree repair`` needs to reconnect a folder moved by hand. Only
    what is left is gone."""
    admin = admin_dir(repo, Path(record.path))
    if is_locked(admin):
        return UNAVAILABLE
    if admin is not None and record.state == PRESERVED_DIRTY:
        return MISSING
    return GONE


def owning_clone(repo: Repo, record: RunRecord) -> Repo | None:
    """The clone that made this workspace, when it is another clone on this
    host and its git dir is where the record says (that git dir's own config
    holds the record's clone id): reclaim and cleanup act through it, with
    its locks, its refs and its worktree registration [P1]. None otherwise
    (a record from before records named their clone among them)."""
    clone = record.clone or {}
    common, wanted = clone.get("commonDir"), clone.get("id")
    if not common or not wanted or record.host != host_name(repo) or wanted == clone_id(repo):
        return None
    try:
        other = open_git_dir(Path(common))
        if clone_id(other) != wanted or other.common_dir == repo.common_dir:
            return None
    except HarnError:
        return None
    return other


def reach(repo: Repo, run_id: str, command: str) -> Repo:
    """The repository through which ``command`` acts on ``run_id``'s
    workspace: this one, or the clone on this host that made it (said on
    stderr: its result reaches this clone with the next sync). Another
    host's workspace is refused, naming the host and ``command`` to run
    there; nothing is changed."""
    stored = store.read(repo, run_id)
    if stored is None or stored.record.terminal:
        return repo
    record = stored.record
    where = presence(repo, record)
    if where == REMOTE:
        home = (record.clone or {}).get("commonDir")
        raise Refused(f"run {run_id} has its workspace on host {record.host}: run '{command}' there"
                      + (f", in the repository at {printable_path(home)}" if home else "") + "; nothing was changed")
    owner = owning_clone(repo, record) if where == FOREIGN else None
    if owner is None or store.read(owner, run_id) is None:
        return repo  # refused where it is judged, naming the clone
    info(f"run {run_id}: the workspace is the clone at {printable_path(str(owner.common_dir))}'s; acting through "
         "that clone (its locks, refs and worktree registration); 'git harn sync' in both clones shows the result")
    return owner


def whereabouts(repo: Repo, record: RunRecord, where: str) -> str | None:
    """A sentence on a workspace that is not here, with what to do about it."""
    path = printable_path(record.path)
    if where == REMOTE:
        return f"workspace on host {record.host}; act on it there"
    if where == FOREIGN and owning_clone(repo, record) is not None:
        return (f"workspace of another clone on this host, at {path}, made by the repository at "
                f"{printable_path(foreign_home(repo, record) or '?')}; reclaim and cleanup act on it through "
                "that clone from here")
    if where == FOREIGN:
        return (f"workspace of another clone, at {path}, made by the repository at "
                f"{printable_path(foreign_home(repo, record) or '?')}; act on it there")
    if where == UNAVAILABLE:
        why = one_line(lock_reason(admin_dir(repo, Path(record.path))) or "", 100) or "no reason given"
        return (f"worktree {path} is locked ({why}) and its folder is absent: unavailable, not gone; "
                f"bring the folder back, or run 'git worktree unlock {path}' if it is gone for good")
    if where == MISSING:
        return (f"worktree folder {path} is missing, and its registration is kept for the preserved "
                "uncommitted work: if it was moved, reconnect it with 'git worktree repair <new path>'; "
                f"if it is gone for good, 'git harn cleanup {record.runId} --yes' settles it")
    return None


def refuse_out_of_reach(repo: Repo, record: RunRecord) -> None:
    """Refuse to act on a workspace this clone must not touch: another
    host's, another clone's, or one whose locked registration says it is
    only away. One line, naming where it lives; nothing is changed."""
    where = presence(repo, record)
    if where == REMOTE:
        raise Refused(f"run {record.runId} has its workspace on host {record.host}; run this there")
    if where in (FOREIGN, UNAVAILABLE):
        raise Refused(f"run {record.runId}: {whereabouts(repo, record, where)}; nothing was changed")


def prune_registration(repo: Repo, path: Path) -> bool:
    """Forget the worktree registered at ``path`` if its folder is missing,
    as ``git worktree prune`` would for that one entry. A locked entry stays."""
    with hold_worktrees(repo):
        return worktrees.prune_registration(repo, path)


def pin_detached_head(repo: Repo, record: RunRecord, tips: dict[str, Oid]) -> str | None:
    """Before a vanished worktree's registration goes, keep commits that only
    its detached HEAD reaches on ``refs/harnery/detached/<run-id>`` [P1].
    ``tips`` (Repo.ref_tips) learns the ref made."""
    head = detached_head(admin_dir(repo, Path(record.path)))
    if head is None or not repo.has(head) or not repo.unique_commits(head, set(), tips=tips):
        return None
    name = f"refs/harnery/detached/{record.runId}"
    current = repo.ref_oid(name)
    if current is not None and current != head:
        name = f"{name}-{str(head)[:12]}"
        current = repo.ref_oid(name)
    if current is None:
        repo.create_ref(name, head, "git-harn: keep a vanished worktree's detached HEAD")
        tips[name] = head
    return f"its detached HEAD {str(head)[:12]} is kept on {name}"


def delete_branch_if_safe(repo: Repo, ref: str, tips: dict[str, Oid] | None = None) -> tuple[bool, str]:
    """Delete ``ref`` only if its tip is reachable from another ref [P1];
    ``tips``, the command's one read of the refs (Repo.ref_tips), if it has it.

    Returns (deleted, sentence for the operator)."""
    tip = repo.ref_oid(ref)
    short = ref.removeprefix("refs/heads/")
    if tip is None:
        return True, f"branch {short} is already gone"
    unique = repo.unique_commits(tip, {ref}, tips=tips if tips is not None else _history_tips(repo))
    if unique:
        return False, (
            f"branch {short} kept: {len(unique)} commit(s) reachable from no other ref "
            f"(tip {str(tip)[:12]})"
        )
    repo.delete_ref(ref, tip)
    return True, f"branch {short} deleted (its tip {str(tip)[:12]} is reachable elsewhere)"


def let_go_of_branch(repo: Repo, record: RunRecord, tips: dict[str, Oid] | None = None) -> str:
    """Delete the workspace branch if git-harn created it and its tip is
    reachable from another ref [P1]; a sentence for the operator either way."""
    if not record.owns_branch:
        return f"branch {record.branch} kept: git-harn did not create it"
    return delete_branch_if_safe(repo, record.branch_ref, tips)[1]


def _clear_dead_branch_lock(repo: Repo, record: RunRecord) -> None:
    """A release killed while git deleted the workspace branch leaves git's
    lock beside the ref. No git but the release's own touches that branch (the
    caller holds its run lock, and the hooks guard a delete by hand [H1]), so
    when the release's mark names a process provably dead with its whole
    process group, the lock is the dead release's and goes [P6]. Any other
    lock stays, and git's own error names it."""
    lock = loose_ref_lock(repo, record.branch_ref)
    if record.owns_branch and os.path.lexists(lock) and holder_gone(record.releasing):
        lock.unlink(missing_ok=True)
        warn(f"removed {printable_path(str(lock))}: left by git-harn pid {(record.releasing or {}).get('pid')} "
             f"(run {record.runId}), killed while git deleted its branch")


def _moved_to(repo: Repo, record: RunRecord) -> Path | None:
    """The live folder where the workspace branch is checked out, if not the recorded one."""
    for path, branch in registered_worktrees(repo).items():
        if branch == record.branch_ref and path.is_dir() and str(path) != record.path:
            return path
    return None


def settle_vanished(repo: Repo, stored: store.Stored) -> RunRecord:
    """Finish a workspace whose folder is gone: prune, delete the branch when
    safe, and record already_gone (or released, when a release was under way).
    The caller holds the run lock. A workspace moved by hand (``git worktree
    move``) is followed to its new folder instead, and stays live."""
    record = stored.record
    moved_to = _moved_to(repo, record)
    if moved_to is not None and record.releasing is None:
        record.reason = f"worktree moved by hand from {record.path} to {moved_to}"
        record.path = str(moved_to)
        store.write(repo, record, "moved", record.reason, stored.tip)
        return record
    tips = _history_tips(repo)
    pinned = pin_detached_head(repo, record, tips)
    prune_registration(repo, Path(record.path))
    if record.releasing is not None:
        _clear_dead_branch_lock(repo, record)
    branch_note = let_go_of_branch(repo, record, tips)
    if pinned:
        branch_note += f"; {pinned}"
    finishing = record.releasing is not None
    lost = None if finishing else lost_with_folder(repo, record.runId)
    record.state = RELEASED if finishing else ALREADY_GONE
    record.lastOutcome = record.state
    record.releasing = None
    record.reason = (
        "release finished after an interruption; " if finishing
        else f"worktree folder vanished; {lost}; " if lost else "worktree folder is missing; "
    ) + branch_note
    if lost:  # said once: only the command that settles it gets here
        warn(f"run {record.runId}: worktree folder {printable_path(record.path)} vanished; {lost}")
    store.write(repo, record, record.state, record.reason, stored.tip)
    return record


def reconcile_quietly(repo: Repo, stored: store.Stored) -> store.Stored:
    """For read-only commands: settle a vanished workspace if the run is free.
    A busy run is left alone; whoever holds it will see the same thing."""
    if stored.record.terminal or presence(repo, stored.record) != GONE:
        return stored
    try:
        with hold_run(repo, stored.record.runId, "reconcile"):
            fresh = store.read(repo, stored.record.runId)
            if fresh is None or fresh.record.terminal or presence(repo, fresh.record) != GONE:
                return fresh or stored
            settle_vanished(repo, fresh)
            return store.read(repo, stored.record.runId) or stored
    except Busy:
        return stored


def _history_tips(repo: Repo) -> dict[str, Oid]:
    """store.bookkeeping, imported only when a walk needs it: it names every
    chain kind, which ``git harn status`` never loads otherwise."""
    from git_harn.store.bookkeeping import history_tips

    return history_tips(repo)


__all__ = ["FOREIGN", "GONE", "HERE", "MISSING", "REMOTE", "UNAVAILABLE", "presence", "foreign_home",
           "owning_clone", "reach",
           "whereabouts", "refuse_out_of_reach", "settle_vanished", "reconcile_quietly",
           "delete_branch_if_safe", "let_go_of_branch", "prune_registration"]
