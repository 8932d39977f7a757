"""Pushing what is ahead: never forced, atomic when the server takes it, else
one ref at a time in order (salvage branches, then records, then notes), so
no note reaches a clone before what it annotates. Every push goes through
the one remote door (``git/remote``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from git_harn.git import Repo
from git_harn.git import remote as door
from git_harn.notices import info
from git_harn.store.bookkeeping import STAGING_ROOT
from git_harn.store.notes import NOTES_REF

__all__ = ["STAGING_ROOT", "Pushed", "push_all", "sweep_staging"]


@dataclass
class Pushed:
    pushed: set[str] = field(default_factory=set)
    moved: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    failure: str | None = None
    atomic: bool = True
    said: list[str] = field(default_factory=list)

    def take(self, outcome: door.Outcome) -> None:
        self.pushed |= set(outcome.having(door.PUSHED))
        self.moved.update(outcome.having(door.MOVED_ON))
        self.refused.update(outcome.having(door.REFUSED_BY_HOOK))
        self.refused.update(outcome.having(door.REJECTED))
        if not outcome.ok and not outcome.refs:  # the push failed as a whole (transport, permission)
            self.failure = self.failure or outcome.words
        self.said += [line for line in outcome.said if line not in self.said]


def sweep_staging(repo: Repo) -> int:
    """Remove what killed syncs left staged: every sync does, whatever it has
    to push (the sync lock keeps any live one out) [P6]."""
    return door.sweep(repo, STAGING_ROOT)


def _order(ref: str) -> int:
    if ref == NOTES_REF:
        return 2
    return 0 if ref.startswith("refs/heads/") else 1


def _push(repo: Repo, remote: str, moves: list[door.Update], atomic: bool) -> door.Outcome:
    return door.push(repo, remote, moves, lease=False, atomic=atomic, staging=STAGING_ROOT)


def push_all(repo: Repo, remote: str, updates: list[tuple[str, str]], atomic: bool,
             summary: door.Update | None = None, drops: Sequence[tuple[str, str]] = ()) -> Pushed:
    """Push ``(oid, ref)`` pairs; ``atomic`` False when the server is known
    not to take ``--atomic``. ``summary`` (the remote summary, leased) goes
    in the same atomic push, or last, once everything else went. ``drops``:
    ``(ref, oid)`` to delete, each leased on that oid (archived runs: never
    a ref the remote moved since it was read)."""
    result = Pushed(atomic=atomic)
    if not updates and not drops and summary is None:
        return result
    updates = sorted(updates, key=lambda pair: (_order(pair[1]), pair[1]))
    moves = [door.Update(ref, oid) for oid, ref in updates]
    deletions = [door.Update(ref, None, oid, leased=True) for ref, oid in sorted(drops)]
    last = [summary] if summary is not None else []
    if atomic:
        outcome = _push(repo, remote, moves + deletions + last, atomic=True)
        if not outcome.atomic_unsupported:
            result.take(outcome)
            return result
        info(f"{remote} does not take an atomic push; pushing records first, then notes")
        result.atomic = False
    # Records in one push (each ref on its own), then the deletions of archived
    # runs (only once the archive that holds them is there), then the notes,
    # then the summary.
    records = [move for move in moves if move.ref != NOTES_REF]
    notes = [move for move in moves if move.ref == NOTES_REF]
    for group in (records, deletions, notes):
        if group and result.failure is None and not (group is deletions and (result.moved or result.refused)):
            result.take(_push(repo, remote, group, atomic=False))
    # A summary names the remote as a whole: only once all of it is there.
    if last and result.failure is None and not result.moved and not result.refused:
        result.take(_push(repo, remote, last, atomic=False))
    return result
