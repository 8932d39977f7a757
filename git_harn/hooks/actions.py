"""What the hooks do once their shell filter lets Python start [H1] [H2].

The shell scripts in ``hooks/`` call ``git harn hooks run <hook> [args]``
only when there is something to do. A hook must never break an unrelated git
command [H3]: every failure here becomes a warning and exit 0. The one
deliberate failure is the refusal of H1, exit 3, which the script passes on
to git only in the ``prepared`` state.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from git_harn.errors import Busy, CorruptRecord, GitFailure, HarnError
from git_harn.git import Oid, Repo, open_repo, to_oid
from git_harn.git.env import scrub_process
from git_harn.git.workdir import dirty_paths
from git_harn.notices import info, warn
from git_harn.store import runs as store
from git_harn.store.bookkeeping import history_tips
from git_harn.store.live import live_records, record_on_branch
from git_harn.store.locks import hold_run
from git_harn.store.record import RunRecord
from git_harn.workspace.paths import WS_BRANCH_PREFIX
from git_harn.workspace.reconcile import GONE, HERE, foreign_home, presence, reconcile_quietly, settle_vanished

REFUSED = 3
ALLOW_DELETE_ENV = "HARN_ALLOW_DELETE"
WS_REF_PREFIX = "refs/heads/" + WS_BRANCH_PREFIX


@dataclass(frozen=True)
class RefUpdate:
    old: str
    new: str
    name: str

    @property
    def deletes(self) -> bool:
        return not self.new.strip("0")

    @property
    def deletes_workspace_branch(self) -> bool:
        return self.deletes and self.name.startswith(WS_REF_PREFIX)


def parse_updates(text: str) -> list[RefUpdate]:
    """The ``<old> <new> <ref>`` lines git feeds reference-transaction."""
    updates = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3:
            updates.append(RefUpdate(*fields))
    return updates


def run_hook(name: str, args: list[str], stdin_text: str) -> int:
    """Do what hook ``name`` asks; 3 only for the deliberate refusal, else 0."""
    # git exports GIT_DIR and friends to hooks; they would point our own git
    # calls (git status in another worktree, say) at the repository the hook fired in.
    scrub_process()
    try:
        repo = open_repo(Path.cwd())
        if name == "reference-transaction":
            state = args[0] if args else ""
            return reference_transaction(repo, state, parse_updates(stdin_text))
        if name in ("post-checkout", "pre-auto-gc"):
            reconcile_all(repo)
            return 0
        warn(f"unknown hook {name!r}; nothing done")
    except HarnError as exc:
        warn(f"{name} hook: {exc.message}; ignored")
    except Exception as exc:  # a hook must never break the git command [H3]
        warn(f"{name} hook: internal error: {type(exc).__name__}: {exc}; ignored")
    return 0


def reference_transaction(repo: Repo, state: str, updates: list[RefUpdate]) -> int:
    if state == "prepared":
        return guard_deletions(repo, updates)
    if state == "committed":
        reconcile_deletions(repo, updates)
    return 0


# --- records by branch -------------------------------------------------------


def record_for_branch(repo: Repo, ref: str) -> store.Stored | None:
    """The record of the run whose workspace branch is ``ref``, the run the
    branch is named after, live or ended; no other record is read."""
    try:
        return record_on_branch(repo, ref.removeprefix(WS_REF_PREFIX), ref)
    except CorruptRecord as exc:
        warn(exc.message)
        return None


# --- prepared: the guard ------------------------------------------------------


@dataclass
class Refusal:
    branch: str
    run_id: str
    tip: Oid
    reason: str
    known: bool  # a git-harn run uses this branch


def _current_tip(repo: Repo, update: RefUpdate) -> Oid | None:
    """git 2.39 reports a zero old value for ``git branch -D``: read the ref
    (still there, locked, in the prepared state)."""
    tip = repo.ref_oid(update.name)
    if tip is None and update.old.strip("0"):
        tip = to_oid(update.old)
    return tip


def _why_keep(repo: Repo, update: RefUpdate, tip: Oid, leaving: set[str], tips: dict[str, Oid]) -> Refusal | None:
    stored = record_for_branch(repo, update.name)
    if stored is not None and foreign_home(repo, stored.record) is not None:
        stored = None  # another clone's run: its work is not this branch, and reclaim here refuses
    run_id = stored.record.runId if stored else update.name.removeprefix(WS_REF_PREFIX)
    branch = update.name.removeprefix("refs/heads/")
    unique = repo.unique_commits(tip, leaving, tips=tips)
    if unique:
        return Refusal(branch, run_id, tip, f"{len(unique)} commit(s) on it are reachable from no other ref",
                       stored is not None)
    if stored is not None and stored.record.preserved:
        return Refusal(branch, run_id, tip, f"its workspace is {stored.record.state}", True)
    if stored is not None and _live_and_dirty(stored.record):
        return Refusal(branch, run_id, tip, "its workspace holds uncommitted changes", True)
    return None


def _live_and_dirty(record: RunRecord) -> bool:
    """An active workspace still on disk with uncommitted work: without its
    branch, reclaim could not put the work anywhere safe."""
    if record.terminal or not os.path.isdir(record.path):
        return False
    try:
        return bool(dirty_paths(Path(record.path)))
    except GitFailure:
        return True  # cannot tell: keep the branch


def is_pruning(repo: Repo, update: RefUpdate) -> bool:
    """git pack-refs deletes each loose ref it has just packed, naming its old
    value; the ref lives on in packed-refs. (A real deletion of a packed ref
    is judged in the packed-refs transaction git runs first, old value zero.)"""
    return bool(update.old.strip("0")) and repo.packed_ref(update.name) == update.old


def guard_deletions(repo: Repo, updates: list[RefUpdate]) -> int:
    """Refuse to delete a workspace branch holding the only copy of work, or
    one whose workspace is preserved [H1] [P1]; HARN_ALLOW_DELETE=1 overrides."""
    leaving = {u.name for u in updates if u.deletes}
    refusals = []
    tips: dict[str, Oid] | None = None  # the refs that hold work, read once
    for update in updates:
        if not update.deletes_workspace_branch or is_pruning(repo, update):
            continue
        tip = _current_tip(repo, update)
        if tip is None:
            continue  # already gone: nothing left to protect
        tips = tips if tips is not None else history_tips(repo)
        refusal = _why_keep(repo, update, tip, leaving, tips)
        if refusal is not None:
            refusals.append(refusal)
    if not refusals:
        return 0
    if os.environ.get(ALLOW_DELETE_ENV) == "1":
        for r in refusals:
            warn(f"deleting branch {r.branch} although {r.reason} ({ALLOW_DELETE_ENV}=1); "
                 f"its tip was {r.tip}")
        return 0
    for r in refusals:
        info(f"refusing to delete branch {r.branch}: {r.reason} (tip {str(r.tip)[:12]})")
        info(_way_out(r))
    return REFUSED


def _way_out(refusal: Refusal) -> str:
    anyway = f"to delete it anyway, set {ALLOW_DELETE_ENV}=1"
    if not refusal.known:
        return (f"  no git-harn run of this clone uses it (so 'git harn reclaim' cannot help); "
                f"merge it first, or {anyway}")
    return (f"  save the work with 'git harn reclaim {refusal.run_id}' (or throw it away with "
            f"'git harn reclaim {refusal.run_id} --discard --yes'); {anyway}")


# --- committed: reconcile -----------------------------------------------------


def _settle_after_delete(repo: Repo, run_id: str, ref: str) -> None:
    """The branch is gone; settle the record if its folder is gone too. The
    caller holds the run lock."""
    fresh = store.read(repo, run_id)
    if fresh is None or fresh.record.terminal or fresh.record.branch_ref != ref:
        return
    where = presence(repo, fresh.record)
    if where == GONE:
        record = settle_vanished(repo, fresh)
        info(f"run {run_id}: workspace is now {record.state} (branch {fresh.record.branch} deleted)")
    elif where == HERE:
        info(f"run {run_id}: branch {fresh.record.branch} was deleted but its worktree "
             f"{fresh.record.path} is still there; see 'git harn status {run_id}'")


def reconcile_deletions(repo: Repo, updates: Iterable[RefUpdate]) -> None:
    """After a workspace branch is deleted by hand, bring its record up to
    date (already_gone, or released if a release was under way) [H1] [W7].
    A run whose lock is held is left to its holder, which reconciles."""
    for update in updates:
        if not update.deletes_workspace_branch or repo.ref_oid(update.name) is not None:
            continue  # git deletes in two transactions; the ref lives on until the last
        stored = record_for_branch(repo, update.name)
        if stored is None or stored.record.terminal:
            continue
        try:
            with hold_run(repo, stored.record.runId, "hook: reference-transaction"):
                _settle_after_delete(repo, stored.record.runId, update.name)
        except Busy:
            continue


# --- post-checkout, pre-auto-gc -------------------------------------------------


def reconcile_all(repo: Repo) -> None:
    """Settle every record whose workspace folder vanished [H2] [W7]. One bad
    record is reported and skipped; the others are still reconciled."""
    for entry in live_records(repo):
        if isinstance(entry, store.Unreadable):
            warn(entry.error)
            continue
        try:
            after = reconcile_quietly(repo, entry)
        except HarnError as exc:
            warn(f"run {entry.record.runId}: {exc.message}")
            continue
        if after.record.state != entry.record.state:
            info(f"run {entry.record.runId}: workspace is now {after.record.state}")
