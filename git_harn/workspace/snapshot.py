"""What reclaim knows of a workspace, read once and passed on [W5] [P1].

Reclaim and the cleanup it hands off to judge the same workspace several
times over; each reads the record, the workspace branch, the worktree's HEAD
and every ref from this one snapshot, and the writes git-harn makes itself
(all compare-and-swap) are applied to it, so nothing is read twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from git_harn.git import Oid, Repo
from git_harn.git.worktrees import admin_dir, detached_head, head_of, head_ref_of
from git_harn.store import runs as store
from git_harn.store.bookkeeping import history_tips
from git_harn.store.record import RunRecord


@dataclass
class Snapshot:
    stored: store.Stored
    admin: Path | None  # the worktree's admin folder in the common git dir
    tip: Oid | None  # the workspace branch
    head: Oid | None  # what the worktree has checked out
    head_ref: str | None  # the branch its HEAD names (None: detached)
    tips: dict[str, Oid]  # every ref's commit (Repo.ref_tips)
    nested: list[str] | None = None  # nested repositories found, once looked for

    @property
    def record(self) -> RunRecord:
        return self.stored.record

    @property
    def path(self) -> Path:
        return Path(self.stored.record.path)

    @property
    def detached(self) -> Oid | None:
        """The commit a detached HEAD holds (None when HEAD names a branch)."""
        return detached_head(self.admin) if self.head_ref is None else None

    def moved(self, ref: str, oid: Oid) -> None:
        """git-harn moved ``ref`` to ``oid`` (with CAS): keep the snapshot true."""
        self.tips[ref] = oid
        if ref == self.record.branch_ref:
            self.tip = oid

    def restored(self, oid: Oid) -> None:
        """The worktree was reset onto the workspace branch at ``oid``."""
        self.head, self.head_ref = oid, self.record.branch_ref

    def detached_at(self, oid: Oid) -> None:
        """The worktree's HEAD was detached at ``oid``, whose tree it holds."""
        self.head, self.head_ref = oid, None


def take(repo: Repo, stored: store.Stored) -> Snapshot:
    record = stored.record
    path = Path(record.path)
    tips = history_tips(repo)
    return Snapshot(stored=stored, admin=admin_dir(repo, path), tip=tips.get(record.branch_ref),
                    head=head_of(path), head_ref=head_ref_of(path), tips=tips)
