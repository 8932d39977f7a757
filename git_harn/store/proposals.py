"""Proposals: a task's judged squash waiting in a pull (merge) request [F1].

``refs/harnery/proposals/<key>`` (``<id>`` or ``<id>-addendum-<n>``) is a
chain of ``proposal.json`` commits (a kind of ``store/chain``), written by
this clone as the proposal moves: ``proposing`` (the squash is made and kept,
before anything is pushed: what a killed integration left is finished from
it), ``open`` (the request exists: its URL and number), and the ends the next
run reconciles it to, ``merged``, ``closed`` or ``conflict`` [F2].

What the proposal lands is kept beside it, so no ``git gc`` takes it and the
task's branch may go: ``refs/harnery/proposed/<key>/squash`` (the commit on
the landing branch), ``/judged`` (what the gates and reviewers passed, which
their notes sit on) and ``/tip`` (the judged commit rebased onto the base the
squash was made on: what a rebuild onto a newer base starts from) [P1] [T4].
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

from git_harn.clock import now_iso
from git_harn.errors import CorruptRecord, GitFailure, HarnError, RaceLost
from git_harn.git import ANY, Oid, Repo, to_oid
from git_harn.store import chain, mac

PREFIX = chain.ROOT + "proposals/"
KEPT_ROOT = chain.ROOT + "proposed/"  # + <key>/squash|judged|tip
FILE = "proposal.json"
FORMAT_VERSION = 1
_KEY = re.compile(r"[0-9]+(\.[0-9]+)*(-addendum-[0-9]+)?")

# a proposal's states: where it stands, as this clone last saw it
PROPOSING = "proposing"  # the squash is made and kept; the push or the request may not have happened
OPEN = "open"
MERGED = "merged"  # the base took it (the forge said so, or its content is there)
CLOSED = "closed"  # closed without a merge: the task is refused, its branch kept
CONFLICT = "conflict"  # the base moved and the squash no longer applies: an operator looks
LIVE_STATES = (PROPOSING, OPEN, CONFLICT)  # what a run reconciles and holds out of selection
STATES = (PROPOSING, OPEN, MERGED, CLOSED, CONFLICT)


def _check_id(key: str) -> None:
    if not _KEY.fullmatch(key):
        raise CorruptRecord(f"not a proposal key: {key!r}")


def _check(key: str, raw: bytes, where: str) -> dict[str, Any]:
    data = chain.json_object(PROPOSALS, raw, where)
    if data.get("key") != key or data.get("state") not in STATES:
        raise CorruptRecord(f"{where}: not a proposal of {key}")
    return data


def _as_dict(body: dict[str, Any]) -> dict[str, Any]:
    return body


def _is_live(body: dict[str, Any]) -> bool:
    return body.get("state") in LIVE_STATES


# One ref per live proposal, made and dropped with the event that makes it
# live or ended (chain.publish), so what a run reconciles, and ``workflow
# list`` names, is found without reading one ended proposal: a year of
# proposals is thousands of chains, nearly all of them ended.
LIVE = chain.LiveIndex(chain.ROOT + "proposals-live/", chain.ROOT + "proposals-live-index/v1", _is_live)
PROPOSALS: chain.Kind[dict[str, Any]] = chain.Kind("proposal", PREFIX, FILE, "Harnery-Proposal", FORMAT_VERSION,
                                                   _check, _as_dict, check_id=_check_id, live=LIVE)


def kept_ref(key: str, what: str) -> str:
    """Where the ``squash``, ``judged`` or ``tip`` commit of a proposal is kept."""
    return f"{KEPT_ROOT}{key}/{what}"


def _verified(record: dict[str, Any]) -> bool:
    """Whether this machine's key verifies the record's MAC: git-harn wrote it.
    The ref is in the shared git dir, which a stage in flight can write; a
    record it made up would name a forge to send the token to, a head to
    push, a request to believe [T5] [T4]. One that does not verify is none."""
    return mac.unverified(PROPOSALS.noun, str(record.get("key")), record) is None


def read(repo: Repo, key: str) -> dict[str, Any] | None:
    """The proposal of ``key`` git-harn wrote (None: none, or one it did not write)."""
    found = chain.read(repo, PROPOSALS, key)
    return found.record if found is not None and _verified(found.record) else None


def live(repo: Repo) -> Iterator[dict[str, Any]]:
    """The live proposals of this clone (``LIVE_STATES``), by key, read
    from the index alone: no ended proposal is read (but once, to build the
    index of a repository written before it). The record decides, never the
    entry: an entry whose proposal ended is stale and dropped."""
    listed = repo.ref_ids([LIVE.namespace, LIVE.marker])
    entries = {name[len(LIVE.namespace):]: to_oid(oid) for name, oid in listed.items()
               if name.startswith(LIVE.namespace)}
    if LIVE.marker not in listed:
        entries.update(_build(repo, set(entries)))
    for key, entry in sorted(entries.items()):
        tip = repo.ref_oid(PROPOSALS.ref(key))
        try:
            body = chain.record_at(repo, PROPOSALS, key, tip) if tip is not None else None
        except HarnError:
            continue  # unreadable: it names no request, and is left as it is
        if body is not None and not _verified(body):
            continue  # not git-harn's: it names no request, and is left as it is
        if body is not None and _is_live(body):
            yield body
        elif not repo.packed_refs_locked():  # tidying only: a failure is left for the next read
            with suppress(RaceLost, GitFailure):
                repo.update_refs([(PROPOSALS.ref(key), tip, tip), (LIVE.entry(key), None, entry)])


def _build(repo: Repo, listed: set[str]) -> dict[str, Oid]:
    """The entries of a repository whose proposals were written before the
    index, and its marker, in one transaction (every proposal read once)."""
    built: dict[str, Oid] = {}
    found = repo.ref_ids([PROPOSALS.namespace])
    if not found:
        return built  # no proposal at all: nothing to index, and a look writes no ref (a dry run makes none)
    for name, oid in sorted(found.items()):
        key, tip = name[len(PROPOSALS.namespace):], to_oid(oid)
        try:
            wanted = _is_live(chain.record_at(repo, PROPOSALS, key, tip))
        except HarnError:
            wanted = False
        if wanted and key not in listed:
            built[key] = tip
    edits: list[tuple[str, Oid | None, Any]] = [*((LIVE.entry(key), tip, ANY) for key, tip in built.items()),
                                                (LIVE.marker, chain.index_marker(repo, LIVE), None)]
    with suppress(RaceLost):  # another listing built it first
        repo.update_refs(edits)
    return built


def every(repo: Repo) -> Iterator[dict[str, Any]]:
    """Every readable proposal of this clone git-harn wrote, live or ended,
    by key (an unreadable or unverified one is skipped: it names no request).
    Reads every one: for ``workflow list --all`` and doctor's look at ended requests only."""
    for found in chain.list_all(repo, PROPOSALS):
        if isinstance(found, chain.Stored) and _verified(found.record):
            yield found.record


def write(repo: Repo, body: dict[str, Any], event: str, summary: str) -> dict[str, Any]:
    """Append ``body`` (the whole proposal after ``event``) to its chain, with CAS."""
    key = str(body["key"])
    _check_id(key)
    now = mac.sign(PROPOSALS.noun, key, dict(body, schemaVersion=FORMAT_VERSION, updatedAt=now_iso()))

    def change(current: chain.Stored[dict[str, Any]] | None) -> chain.Change[dict[str, Any]]:
        return chain.Change(now, chain.encode(now), event, summary,
                            [("Harnery-Task", str(now["taskId"]))])

    chain.update(repo, PROPOSALS, key, change)
    return now


def keep(repo: Repo, key: str, what: str, oid: Oid) -> None:
    """Point ``kept_ref(key, what)`` at ``oid``: git-harn's own ref, moved from what it held."""
    ref = kept_ref(key, what)
    for _ in range(3):
        try:
            repo.move_ref(ref, oid, repo.ref_oid(ref), f"git-harn: keep the {what} of proposal {key}")
            return
        except RaceLost:
            continue


def drop_kept(repo: Repo, key: str) -> None:
    """The kept commits of a proposal that ended: another ref holds each now."""
    for what in ("squash", "judged", "tip"):
        ref = kept_ref(key, what)
        oid = repo.ref_oid(ref)
        if oid is not None:
            with suppress(RaceLost):
                repo.delete_ref(ref, oid)
