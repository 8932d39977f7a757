"""What workspaces exist and what each holds [W4]."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from git_harn.errors import BadInput
from git_harn.git import Oid, Repo
from git_harn.git.workdir import DirtyPath, dirty_paths_many
from git_harn.git.worktrees import linked_problem, worktree_with_branch
from git_harn.results import Result
from git_harn.store import runs as store
from git_harn.store.ids import validate_run_id
from git_harn.store.live import LIVE_LISTING, listed_records
from git_harn.store.locks import run_busy
from git_harn.store.record import ACTIVE, PRESERVED_DIRTY, PRESERVED_UNMERGED, RunRecord
from git_harn.text import jsonable
from git_harn.workspace.paths import FOREIGN, REMOTE, UNAVAILABLE, WS_BRANCH_PREFIX
from git_harn.workspace.reconcile import (
    GONE,
    HERE,
    MISSING,
    owning_clone,
    presence,
    reconcile_quietly,
    whereabouts,
)
from git_harn.workspace.seen import remember

DEFAULT_LIMIT = 10


@dataclass
class WorkspaceStatus:
    runId: str
    workspaceId: str
    state: str
    attempts: int
    branch: str
    path: str
    host: str
    location: str
    dirtyCount: int | None = 0  # None: not inspected here (another host's, or gone)
    dirtyPaths: list[DirtyPath] = field(default_factory=list)
    dirtyMore: int = 0
    lastOutcome: str | None = None
    reason: str | None = None
    error: str | None = None
    next: list[str] = field(default_factory=list)
    diverged: dict[str, Any] | None = None  # set by a sync that merged a diverged chain
    busy: str | None = None  # what holds the run's lock now (run, cleanup …)
    keptCommits: int | None = None  # an ended workspace's kept branch: commits no other ref reaches


@dataclass
class StatusReport(Result):
    SCHEMA: ClassVar[str] = "status"

    workspaces: list[WorkspaceStatus]
    errors: list[store.Unreadable]
    # what ``git harn doctor`` would report among what status read anyway
    # (preserved, away, broken, killed runs, unreadable records): not in the document
    noticed: int = 0

    @property
    def outcome(self) -> str:
        return "unreadable-records" if self.errors else "ok"

    def document(self) -> dict[str, Any]:
        document: dict[str, Any] = {"schemaVersion": self.SCHEMA_VERSION, "workspaces": jsonable(self.workspaces)}
        if self.errors:
            document["errors"] = [{"ref": e.ref, "error": e.error} for e in self.errors]
        return document


# Reasons cleanup gives for what neither salvage nor discard can resolve:
# nested repositories and submodule repositories.
OUT_OF_REACH = ("workspace holds", "workspace has submodule")


def out_of_reach(reason: str | None) -> bool:
    return bool(reason) and str(reason).startswith(OUT_OF_REACH)


# Another clone's workspace on this host that reclaim and cleanup reach through that clone.
NEAR = "near"


def next_steps(record: RunRecord, where: str = HERE) -> list[str]:
    """The commands that resolve a workspace in this state, from here."""
    if where == MISSING:
        return ["git worktree repair <new path>", f"git harn cleanup {record.runId} --yes"]
    if where not in (HERE, GONE, NEAR):
        return []  # another host's or clone's, or away: nothing to do from here
    if record.state == PRESERVED_DIRTY and out_of_reach(record.reason):
        # reclaim refuses a nested repository and --discard leaves it: the
        # way out is by hand (the reason says what), then cleanup.
        return [f"git harn cleanup {record.runId} --yes   (after the step the reason names)"]
    # An active workspace with a frozen intent is one an interrupted cleanup
    # or reclaim left; reclaim finishes it even if its ref moved since.
    # --discard throws away uncommitted changes only, never commits: it is
    # no way out for a preserved_unmerged workspace.
    if record.state == PRESERVED_UNMERGED:
        return [f"git harn reclaim {record.runId}"]
    if record.preserved or (record.state == ACTIVE and record.frozenIntent is not None):
        return [f"git harn reclaim {record.runId}",
                f"git harn reclaim {record.runId} --discard --yes"]
    if record.state == ACTIVE:
        return [f"git harn cleanup {record.runId} --yes"]
    return []


def kept_steps(repo: Repo, record: RunRecord) -> list[str]:
    """What to do with what an ended workspace left: a kept branch git-harn
    made goes through reclaim (which salvages its commits, then lets it go;
    the branch guard refuses renaming or deleting it); a kept detached HEAD.
    A branch git-harn did not create is the operator's own: nothing to say."""
    steps = []
    if record.owns_branch and repo.ref_oid(record.branch_ref) is not None:
        steps.append(kept_advice(record))
    detached = f"refs/harnery/detached/{record.runId}"
    if repo.ref_oid(detached) is not None:
        steps.append(f"git log {detached}   (kept: 'git branch <name> {detached}' to work on it)")
    return steps


@dataclass
class KeptBranch:
    """An ended workspace's branch, made by git-harn, that holds commits no
    other ref reaches: the only copy, which status lists and doctor reports."""

    record: RunRecord
    tip: Oid
    commits: int  # reachable from no other ref (counted up to KEPT_COUNT)


KEPT_COUNT = 1000


WS_BRANCHES = "refs/heads/" + WS_BRANCH_PREFIX


def kept_branches(repo: Repo, live: frozenset[str] = frozenset(),
                  listed: dict[str, str] | None = None) -> list[KeptBranch]:
    """Every ``harnery/ws/<run-id>`` branch of an ended workspace that holds
    commits no other ref reaches; ``live``: run ids known to be live, whose
    branches are not looked at. One ``for-each-ref`` of that folder when
    there is no other (a release deletes the branch it made). ``listed``:
    ``repo.ref_ids`` of (at least) that folder, read earlier by the caller:
    when it holds no other branch, none is read again; when it does, the
    folder is read afresh, so what the caller did since (a reconcile that
    ended a run) is seen."""
    prefix = WS_BRANCHES
    if listed is not None and not any(name.startswith(prefix) and name.removeprefix(prefix) not in live
                                      for name in listed):
        return []
    refs = sorted((name, tip) for name, tip in repo.ref_tips([prefix]).items()
                  if name.removeprefix(prefix) not in live)
    if not refs:
        return []
    # Only with such a branch: neither is on status's usual path.
    from git_harn.store.archive import read_run
    from git_harn.store.bookkeeping import history_tips

    tips = history_tips(repo)
    found = []
    for name, tip in refs:
        stored = read_run(repo, name.removeprefix(prefix))
        if stored is None:
            continue
        record = stored.record
        if not record.terminal or not record.owns_branch or record.branch_ref != name:
            continue
        unique = repo.unique_commits(tip, {name}, tips=tips, limit=KEPT_COUNT)
        if unique and worktree_with_branch(repo, name) is None:
            found.append(KeptBranch(record, tip, len(unique)))
    return found


def kept_advice(record: RunRecord) -> str:
    """The way out for a kept branch git-harn made: reclaim salvages its
    commits to harnery/salvage/<run-id> and lets the branch go (the branch
    guard refuses renaming or deleting it by hand)."""
    return f"git harn reclaim {record.runId}"


def _select(
    repo: Repo, run_id: str | None, ended: int | None, listed: dict[str, str] | None
) -> tuple[list[store.Stored], list[store.Unreadable]]:
    if run_id is not None:
        validate_run_id(run_id)
        from git_harn.store.archive import read_run  # only for one run: not on the listing's path

        one = read_run(repo, run_id)
        if one is None:
            raise BadInput(f"unknown run id: {run_id}")
        return [one], []
    chosen, errors = [], []
    for entry in listed_records(repo, ended, listed):
        if isinstance(entry, store.Unreadable):
            errors.append(entry)
        else:
            chosen.append(entry)
    return chosen, errors


def _ended_wanted(include_terminal: bool, last: int | None) -> int | None:
    """How many ended runs to list: none, ``last`` of them, or (None) all."""
    if last is not None:
        return last
    return None if include_terminal else 0


def collect_status(repo: Repo, run_id: str | None = None, include_terminal: bool = False,
                   limit: int = DEFAULT_LIMIT, last: int | None = None) -> StatusReport:
    """The workspaces of live runs; with ``include_terminal`` the ended runs
    too, all of them or (``last``) the ``last`` newest."""
    if limit < 0:
        raise BadInput("--limit must be 0 or more")
    if last is not None and last < 0:
        raise BadInput("--last must be 0 or more")
    if last is not None and run_id is not None:
        raise BadInput("--last lists runs; it cannot be given with a run id")
    ended = _ended_wanted(include_terminal, last)
    # The plain listing reads the live index and the workspace branches in
    # one for-each-ref: a git process is most of what status costs (issue 45).
    refs = repo.ref_ids([*LIVE_LISTING, WS_BRANCHES]) if run_id is None and ended == 0 else None
    chosen, errors = _select(repo, run_id, ended, refs)
    settled_now = set()
    records = []
    for stored in chosen:
        fresh = reconcile_quietly(repo, stored).record
        if fresh.terminal and not stored.record.terminal:
            settled_now.add(fresh.runId)  # listed this once, with the reason it vanished
        records.append(fresh)
    if run_id is None and not include_terminal and last is None:
        records = [r for r in records if not r.terminal or r.runId in settled_now]
    # Where each live workspace is, judged once (it reads the folder's git files).
    where = {r.runId: presence(repo, r) for r in records if not r.terminal}
    live = [Path(r.path) for r in records if not r.terminal and where[r.runId] == HERE]
    # A folder that is no longer the linked worktree git-harn made gets no git
    # run in it: it would read another repository, or the enclosing one.
    broken: dict[Path, list[DirtyPath] | str] = {
        path: f"no longer the linked worktree git-harn made: {problem}; no git is run in it"
        for path in live if (problem := linked_problem(repo, path, ask_git=False)) is not None}
    dirty = dirty_paths_many([path for path in live if path not in broken])
    remember(repo, {r.runId: found for r in records if isinstance(found := dirty.get(Path(r.path)), list)})
    dirty.update(broken)
    rows = [_row(repo, r, dirty.get(Path(r.path)), limit, where.get(r.runId)) for r in records]
    noticed = len(errors) + sum(_doctor_would_report(r, row) for r, row in zip(records, rows, strict=True))
    if run_id is None or any(r.terminal for r in records):
        listed = {row.runId: row for row in rows}
        for kept in kept_branches(repo, frozenset(r.runId for r in records if not r.terminal), refs):
            if run_id is not None and kept.record.runId != run_id:
                continue
            row = listed.get(kept.record.runId)
            if row is None:  # an ended run the listing left out: the branch is the only copy [P1]
                row = _row(repo, kept.record, None, limit)
                rows.append(row)
            row.keptCommits = kept.commits
            noticed += 1
    return StatusReport(rows, errors, noticed)


def _doctor_would_report(record: RunRecord, row: WorkspaceStatus) -> bool:
    """What doctor reports of a workspace, from what status read anyway: a
    preserved or away one, one it could not look into, a ``git harn run``
    that died before its command ended (its lock's holder is gone)."""
    if record.terminal or row.location in (REMOTE, FOREIGN):
        return False
    killed = record.state == ACTIVE and record.command is not None and record.exitCode is None and not row.busy
    return record.preserved or row.location in (MISSING, UNAVAILABLE) or row.error is not None or killed


def _row(repo: Repo, record: RunRecord, dirty: list[DirtyPath] | str | None,
         limit: int, found: str | None = None) -> WorkspaceStatus:
    """``found``: the record's presence, if the caller judged it already."""
    where = (found or presence(repo, record)) if not record.terminal else "none"
    row = WorkspaceStatus(
        runId=record.runId, workspaceId=record.workspaceId, state=record.state,
        attempts=record.attempts, branch=record.branch, path=record.path, host=record.host,
        location=where, lastOutcome=record.lastOutcome,
        # Where the workspace is matters more now than why it was last judged.
        reason=whereabouts(repo, record, where) or record.reason,
        next=next_steps(record, NEAR if where == FOREIGN and owning_clone(repo, record) else where),
        diverged=record.extra.get("diverged"),
    )
    if record.terminal:
        row.next = kept_steps(repo, record)
    else:
        row.busy = run_busy(repo, record.runId)
        if row.location != HERE:
            row.dirtyCount = None
    if isinstance(dirty, str):
        row.error = dirty
    elif dirty:
        row.dirtyCount = len(dirty)
        row.dirtyPaths = dirty[:limit]
        row.dirtyMore = max(0, len(dirty) - limit)
    return row
