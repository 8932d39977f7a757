"""Notes (``refs/harnery/notes``): the same five cases as a record chain, and
a merge per annotated commit.

Members of different kinds are united. The same member changed on both sides
to different values is decided for the side whose notes were written later
(the committer date of its notes head, then the greater commit id); the other
value stays in the notes history, a parent of the merge. A note on a commit
this clone does not have is kept like any other.
"""

from __future__ import annotations

import re
from typing import Any

from git_harn.files import loads_json
from git_harn.git import Repo
from git_harn.git import refsync as rs
from git_harn.store.notes import NOTES_REF
from git_harn.sync.steps import (
    AHEAD,
    FAST_FORWARD,
    MERGED,
    NEW,
    SAME,
    BadRemoteData,
    Step,
    canonical,
    three_way,
)

_ANNOTATED = re.compile(r"[0-9a-f]{40}")


def check_notes(repo: Repo, tip: str, hide: list[str]) -> None:
    """Every commit the remote adds is a commit; its head holds only notes."""
    try:
        for _ in rs.new_commits(repo, tip, hide):
            pass
        names = rs.flat_tree(repo, tip)
    except rs.ObjectProblem as exc:
        raise BadRemoteData(str(exc)) from exc
    for name in names:
        if not _ANNOTATED.fullmatch(name):
            raise BadRemoteData(f"notes head {tip[:12]} holds {name!r}, which names no object")


def plan(repo: Repo, local: str | None, remote: str | None, dry_run: bool) -> Step:
    step = Step(NOTES_REF, SAME, local, remote)
    if remote is None:
        step.action, step.push = AHEAD, local
        return step
    if not rs.is_commit(repo, remote):
        raise BadRemoteData(f"points at {remote[:12]}, which is not a commit")
    if local is None:
        check_notes(repo, remote, [])
        step.action, step.local = NEW, remote
        return step
    if local == remote:
        return step
    try:
        if rs.descends(repo, local, remote):
            step.action, step.push = AHEAD, local
            return step
        if rs.descends(repo, remote, local):
            check_notes(repo, remote, [local])
            step.action, step.local = FAST_FORWARD, remote
            return step
        base = rs.merge_base(repo, local, remote)
    except rs.ObjectProblem as exc:
        raise BadRemoteData(str(exc)) from exc
    check_notes(repo, remote, [local])
    step.action = MERGED
    if not dry_run:
        step.local = step.push = merge(repo, local, remote, base)
    return step


def _parse(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return {}
    try:
        data = loads_json(raw)
    except ValueError:  # NotJson: invalid, too deep, a key twice
        return None
    return data if isinstance(data, dict) else None


def merge(repo: Repo, local: str, remote: str, base: str | None) -> str:
    """The merge commit of two notes heads (``base`` None: no common history,
    every note is then new on its side)."""
    first, second = sorted([local, remote])
    infos = {oid: rs.commit_info(repo, oid) for oid in (first, second)}
    later = max((first, second), key=lambda oid: (infos[oid].time, oid))
    try:
        trees = {oid: rs.flat_tree(repo, oid) for oid in (first, second)}
        base_tree = rs.flat_tree(repo, base)
    except rs.ObjectProblem as exc:
        raise BadRemoteData(str(exc)) from exc
    merged: dict[str, str] = {}
    decided = 0
    for name in sorted(set(base_tree) | set(trees[first]) | set(trees[second])):
        b, o, t = base_tree.get(name), trees[first].get(name), trees[second].get(name)
        if o == t:
            value = o
        elif o == b:
            value = t
        elif t == b:
            value = o
        else:
            value = _merge_note(repo, b, o, t, later == first)
            decided += 1
        if value is not None:
            merged[name] = value
    message = (f"git-harn: merged notes {first[:12]} and {second[:12]}\n\n"
               f"Notes changed on both sides: {decided}; the later side wins a member changed on both.\n")
    return rs.merge_commit(repo, [first, second], merged, message)


def _merge_note(repo: Repo, base: str | None, ours: str | None, theirs: str | None,
                ours_win: bool) -> str | None:
    def read(oid: str | None) -> bytes | None:
        return rs.read_blob(repo, oid) if oid is not None else None

    try:
        parsed = [_parse(read(oid)) for oid in (base, ours, theirs)]
    except rs.ObjectProblem as exc:
        raise BadRemoteData(str(exc)) from exc
    b, o, t = parsed
    if b is None or o is None or t is None:
        return ours if ours_win else theirs  # not JSON objects: one note wins whole
    note, _ = three_way(b, o, t, ours_win)
    if not note:
        return None
    return rs.write_blob(repo, canonical(note, ascii_only=False))
