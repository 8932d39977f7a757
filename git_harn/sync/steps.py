"""What a sync decides for one ref, and the words for it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The five cases of a mergeable ref (store/chain), and what else can happen to one.
from git_harn.errors import CorruptRecord
from git_harn.git import Oid, Repo, to_oid
from git_harn.store import chain
from git_harn.store.chain import AHEAD, FAST_FORWARD, MERGED, NEW, SAME

QUARANTINED = "quarantined"  # the remote's copy is not a valid chain: untouched, not pushed
DIVERGED = "diverged"  # a fast-forward-only branch that diverged: left as it is
ARCHIVED = "archived"  # a run record the shared archive holds at that state: its ref goes (sync/archive)
WAITING = "waiting"  # would move a ref of this clone's while a run's seal watches it: left for a later sync

# The strongest thing that happened to a ref over several rounds is reported.
RANK = {SAME: 0, AHEAD: 1, ARCHIVED: 2, NEW: 3, FAST_FORWARD: 4, MERGED: 5, WAITING: 6, DIVERGED: 7, QUARANTINED: 8}


__all__ = ["AHEAD", "ARCHIVED", "BOTH", "DIVERGED", "FAST_FORWARD", "MERGED", "NEW", "QUARANTINED", "RANK", "SAME",
           "WAITING", "BadRemoteData", "Step", "canonical", "one_side", "plan_united", "three_way"]


class BadRemoteData(Exception):
    """The remote's copy of a ref cannot be taken: it is quarantined."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Step:
    """The decision for one ref: ``action``; ``local`` is the value the local
    ref must get (None: leave it); ``push`` is what to push (None: nothing);
    ``drop_local``, ``drop_remote``: the ref is deleted here, or on the
    remote (leased on ``remote``), as the archive holds what it points at."""

    ref: str
    action: str
    local_old: str | None
    remote: str | None
    local: str | None = None
    push: str | None = None
    detail: str | None = None
    drop_local: bool = False
    drop_remote: bool = False


def plan_united(repo: Repo, ref: str, local: str | None, remote: str | None, dry_run: bool,
                check: Callable[[Oid, Oid | None], None],
                merge: Callable[[Oid, Oid, Oid | None], Oid]) -> Step:
    """The five cases of a ref whose two heads may share no history (the
    notes, the archive: each clone may start its own) and whose diverged
    heads are merged by ``merge``; ``check`` (the remote head, the local
    one) raises BadRemoteData for what cannot be taken."""
    step = Step(ref, SAME, local, remote)
    mine, theirs = (to_oid(local) if local else None), (to_oid(remote) if remote else None)
    try:
        case = chain.case(repo, mine, theirs, unrelated_ok=True)
    except CorruptRecord as exc:
        raise BadRemoteData(exc.message) from exc
    step.action = case.action
    if case.action == AHEAD:
        step.push = local
    elif theirs is not None and case.action in (NEW, FAST_FORWARD, MERGED):
        check(theirs, mine)
        if case.action != MERGED:
            step.local = remote
        elif mine is not None and not dry_run:
            step.local = step.push = str(merge(mine, theirs, case.base))
    return step


def canonical(data: Any, ascii_only: bool = True) -> bytes:
    """JSON as git-harn writes it: sorted keys, two-space indent, newline."""
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=ascii_only) + "\n").encode("utf-8")


class Missing:
    """A member absent on one side of a three-way merge."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = Missing()


BOTH: Any = object()  # changed on both sides, to different values


def one_side(base: Any, ours: Any, theirs: Any) -> Any:
    """The value a three-way merge takes when at most one side changed it
    (the same change on both counts as one), else BOTH."""
    if ours == theirs or theirs == base:
        return ours
    return theirs if ours == base else BOTH


def three_way(base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any],
              ours_win: bool, skip: frozenset[str] = frozenset()) -> tuple[dict[str, Any], list[str]]:
    """Merge members: a change on one side is taken; the same member changed
    on both sides to different values is decided for the winning side.
    Returns the merged object and the names decided that way."""
    merged: dict[str, Any] = {}
    decided: list[str] = []
    for key in sorted(set(base) | set(ours) | set(theirs)):
        if key in skip:
            continue
        b, o, t = base.get(key, MISSING), ours.get(key, MISSING), theirs.get(key, MISSING)
        value = one_side(b, o, t)
        if value is BOTH:
            value = o if ours_win else t
            decided.append(key)
        if value is not MISSING:
            merged[key] = value
    return merged, decided
