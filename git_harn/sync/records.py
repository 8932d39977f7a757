"""Record chains in a sync (``refs/harnery/runs/*``, ``refs/harnery/workflows/*``):
which of the five cases a remote head is in, the check of what it adds, and
what the merge of a diverged pair holds.

The chains themselves (their commits, trailers, history, the five cases and
the reproducible merge commit) are ``store/chain``; a kind of record joins
sync by a line in ``KINDS``. What is decided here is sync's own rule for a
diverged record: the owner's side wins a field changed on both (see
docs/sync.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from git_harn.errors import CorruptRecord, GitFailure, HarnError
from git_harn.git import ANY, Oid, Repo, to_oid
from git_harn.store import archive, chain
from git_harn.store.record import RunRecord
from git_harn.store.runs import RUNS
from git_harn.store.workflows import WORKFLOWS
from git_harn.sync.steps import AHEAD, ARCHIVED, FAST_FORWARD, MERGED, NEW, BadRemoteData, Step, canonical, three_way

HOST_TRAILER = "Harnery-Host"
DIVERGED_FIELD = "diverged"

Kind = chain.Kind[Any]
KINDS: tuple[Kind, ...] = (RUNS, WORKFLOWS)
PREFIXES = tuple(kind.namespace for kind in KINDS)


def kind_of(ref: str) -> Kind | None:
    for kind in KINDS:
        if ref.startswith(kind.namespace):
            return kind
    return None


def index_edits(repo: Repo, updates: list[tuple[str, str | None, str | None]]) -> list[tuple[str, Oid | None, Any]]:
    """What the live index must change for the record refs a sync moves
    (ref, new, old): to go into the transaction that moves them."""
    edits = []
    for kind in KINDS:
        moves = [(ref, to_oid(new)) for ref, new, _ in updates if new is not None and ref.startswith(kind.namespace)]
        if moves:
            edits += chain.index_edits(repo, kind, moves)
    gone = [RUNS.id_of(ref) for ref, new, _ in updates if new is None]
    if RUNS.live is not None and gone:  # an archived run has no entry, unless a stale one
        listed = set(repo.ref_ids([RUNS.live.namespace]))
        edits += [(entry, None, ANY) for run_id in gone
                  if run_id is not None and (entry := RUNS.live.entry(run_id)) in listed]
    return edits


def _oid(value: str | None) -> Oid | None:
    return to_oid(value) if value is not None else None


def plan(repo: Repo, kind: Kind, ref: str, local: str | None, remote: str | None,
         dry_run: bool, archive_tip: Oid | None = None) -> Step:
    """The five cases: new, same, ahead, fast-forward, diverged -> merged;
    or, for a run the archive at ``archive_tip`` holds, archived.
    BadRemoteData when the remote's chain cannot be taken."""
    step = Step(ref, chain.SAME, local, remote)
    record_id = ref[len(kind.namespace):]
    if kind is RUNS and archive_tip is not None and _archived(repo, step, record_id, archive_tip):
        return step
    try:
        case = chain.case(repo, _oid(local), _oid(remote))
        if case.action == NEW:
            chain.check_new(repo, kind, record_id, to_oid(str(remote)))
            step.action, step.local = NEW, remote
        elif case.action == AHEAD:
            step.action, step.push = AHEAD, local
        elif case.action in (FAST_FORWARD, MERGED):
            chain.check_new(repo, kind, record_id, to_oid(str(remote)), [to_oid(str(local))])
            step.action = case.action
            step.local = remote
            if case.action == MERGED:
                step.local = None if dry_run else str(merge(repo, kind, record_id, to_oid(str(local)),
                                                            to_oid(str(remote)), _base(case)))
                step.push = step.local
    except CorruptRecord as exc:
        raise BadRemoteData(exc.message) from exc
    return step


def _archived(repo: Repo, step: Step, run_id: str, archive_tip: Oid) -> bool:
    """A run ref that adds nothing to the archive (the archive both sides
    hold once this sync is done holds its state or a later one) is deleted
    on the side that has it: gc's work, shared by every clone. Kept here,
    unpushed, while the run's workspace folder is still here (gc would
    leave it too). False: a side holds more, or the archive's entry does
    not agree with this clone's chain, and the five cases decide."""
    found = archive.archived(repo, run_id, archive_tip)
    if found is None:
        return False
    local, remote = step.local_old, step.remote
    if any(oid is not None and not found.has_event(oid) for oid in (local, remote)):
        return False
    record = None if local is None else _archivable(repo, run_id, to_oid(local), found)
    if local is not None and record is None:
        return False
    step.action = ARCHIVED
    step.drop_remote = remote is not None
    if record is not None:
        step.drop_local = not (record.path and Path(record.path).exists())
        if not step.drop_local:
            step.detail = "archived; its ref stays here while its workspace folder exists"
    return True


def _archivable(repo: Repo, run_id: str, tip: Oid, found: archive.Archived) -> RunRecord | None:
    """The record at ``tip`` if the archive's entry may stand for it: an
    ended record, not live here, whose every event the entry lists (and, at
    the same tip, whose file it holds byte for byte); else None."""
    try:
        record = chain.record_at(repo, RUNS, run_id, tip)
        events = archive.history_at(repo, tip)
        raw = repo.read_file(tip, RUNS.file, limit=chain.READ_LIMIT)
    except HarnError:
        return None
    listed = RUNS.live is not None and repo.ref_oid(RUNS.live.entry(run_id)) is not None
    archived_oids = {str(event[0]) for event in found.events}
    agrees = all(str(event.oid) in archived_oids for event in events) and (
        found.tip != str(tip) or found.raw.encode("utf-8") == raw)
    return record if record.terminal and not listed and agrees else None


def _base(case: chain.Case) -> Oid:
    assert case.base is not None  # a diverged pair always has its base
    return case.base


# --- the merge of a diverged chain ------------------------------------------------


def _document(repo: Repo, kind: Kind, record_id: str, oid: Oid) -> dict[str, Any]:
    return kind.as_dict(chain.checked_record(repo, kind, record_id, oid))


def owner_of(data: dict[str, Any]) -> str | None:
    """The host that owns a record: a run record's ``host`` (where its
    workspace was made), a workflow record's ``runner.host`` (where it ran)."""
    host = data.get("host")
    if isinstance(host, str):
        return host
    runner = data.get("runner")
    found = runner.get("host") if isinstance(runner, dict) else None
    return found if isinstance(found, str) else None


def _side_hosts(repo: Repo, kind: Kind, record_id: str, tip: Oid, base: Oid) -> set[str]:
    """The hosts that wrote the events on one side since the base. A commit
    without a Harnery-Host trailer (written before it existed) counts as the
    record's own host; merge commits count for no one."""
    hosts: set[str] = set()
    try:
        added = chain.entries(repo, tip, [base])
    except GitFailure as exc:
        raise CorruptRecord(exc.message) from exc
    for entry in added:
        if len(entry.parents) > 1:
            continue
        host = entry.trailers.get(HOST_TRAILER)
        if host is None:
            data = _document(repo, kind, record_id, entry.oid)
            host = owner_of(data)
        if host:
            hosts.add(host)
    return hosts


def merge(repo: Repo, kind: Kind, record_id: str, local: Oid, remote: Oid, base: Oid) -> Oid:
    """The merge commit of two diverged heads of a chain, decided the same
    way on every clone (owner wins; see docs/sync.md)."""
    sides = sorted([local, remote], key=str)
    documents = {oid: _document(repo, kind, record_id, oid) for oid in (*sides, base)}
    base_data = documents[base]
    owner = owner_of(base_data)
    hosts = {oid: _side_hosts(repo, kind, record_id, oid, base) for oid in sides}
    touched = {oid: owner is not None and owner in hosts[oid] for oid in sides}
    first, second = sides
    if touched[first] != touched[second]:
        winner, rule = (first if touched[first] else second), "owner"
    else:
        winner = max(sides, key=lambda oid: (str(documents[oid].get("updatedAt", "")), str(oid)))
        rule = "later-update"
    merged, decided = three_way(base_data, documents[first], documents[second], winner == first,
                                skip=frozenset({DIVERGED_FIELD}))
    stamps = [stamp for oid in sides if isinstance(stamp := documents[oid].get("updatedAt"), str)]
    if len(stamps) == 2:
        merged["updatedAt"] = max(stamps)
    merged[DIVERGED_FIELD] = {
        "base": str(base),
        "heads": [str(oid) for oid in sides],
        "hosts": sorted(hosts[first] | hosts[second]),
        "owner": owner,
        "decidedBy": rule,
        "winner": str(winner),
        "fields": [key for key in decided if key != "updatedAt"],
    }
    state = merged.get("state")
    more = [("Harnery-State", state)] if isinstance(state, str) else []
    return chain.merge(repo, kind, record_id, sides, canonical(merged),
                       f"chains diverged from {str(base)[:12]}, decided by {rule}", more)
