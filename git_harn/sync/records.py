"""Record chains (``refs/harnery/runs/*``, ``refs/harnery/workflows/*``): the
five cases of a merge, the check of a remote chain, and the merge commit of a
diverged one.

A chain is a line of commits whose trees hold one JSON file (the whole record
after each event). Kinds differ only in how that file is checked, so a new
kind of record joins by a line in ``KINDS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from git_harn.errors import BadInput, CorruptRecord
from git_harn.files import loads_json
from git_harn.git import Repo
from git_harn.git import refsync as rs
from git_harn.store.ids import validate_run_id
from git_harn.store.record import RunRecord
from git_harn.store.runs import RECORD_FILE, RUNS_PREFIX
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

WORKFLOWS_PREFIX = "refs/harnery/workflows/"
HOST_TRAILER = "Harnery-Host"
DIVERGED_FIELD = "diverged"


def _check_run(ref: str, name: str, raw: bytes) -> dict[str, Any]:
    if name != RECORD_FILE:
        raise BadRemoteData(f"holds {name!r}, not {RECORD_FILE}")
    try:
        validate_run_id(ref[len(RUNS_PREFIX):])
        record = RunRecord.from_json(raw, ref)
    except (CorruptRecord, BadInput) as exc:
        raise BadRemoteData(exc.message) from exc
    if record.runId != ref[len(RUNS_PREFIX):]:
        raise BadRemoteData(f"names another run ({record.runId!r})")
    return record.as_dict()


def _check_json(ref: str, name: str, raw: bytes) -> dict[str, Any]:
    if not name.endswith(".json"):
        raise BadRemoteData(f"holds {name!r}, not a JSON file")
    try:
        data = loads_json(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRemoteData(f"not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise BadRemoteData("not a JSON object")
    own_id = ref[len(WORKFLOWS_PREFIX):]
    if "/" in own_id:
        raise BadRemoteData("a workflow id is one ref name component")
    if isinstance(data.get("workflowId"), str) and data["workflowId"] != own_id:
        raise BadRemoteData(f"names another workflow ({data['workflowId']!r})")
    return data


@dataclass(frozen=True)
class Kind:
    prefix: str
    id_trailer: str
    check: Callable[[str, str, bytes], dict[str, Any]]


KINDS = (
    Kind(RUNS_PREFIX, "Harnery-Run", _check_run),
    Kind(WORKFLOWS_PREFIX, "Harnery-Workflow", _check_json),
)
PREFIXES = tuple(kind.prefix for kind in KINDS)


def kind_of(ref: str) -> Kind | None:
    for kind in KINDS:
        if ref.startswith(kind.prefix):
            return kind
    return None


def _file(repo: Repo, kind: Kind, ref: str, oid: str) -> tuple[str, dict[str, Any]]:
    try:
        name, raw = rs.single_file(repo, oid)
    except rs.ObjectProblem as exc:
        raise BadRemoteData(str(exc)) from exc
    try:
        return name, kind.check(ref, name, raw)
    except BadRemoteData as exc:
        raise BadRemoteData(f"commit {oid[:12]}: {exc.message}") from exc
    except RecursionError as exc:
        raise BadRemoteData(f"commit {oid[:12]}: JSON nested too deeply") from exc


def check_chain(repo: Repo, kind: Kind, ref: str, tip: str, hide: list[str]) -> None:
    """Every commit the remote adds must be a record commit of this ref."""
    try:
        for info in rs.new_commits(repo, tip, hide):
            _file(repo, kind, ref, info.oid)
    except rs.ObjectProblem as exc:
        raise BadRemoteData(str(exc)) from exc


def plan(repo: Repo, kind: Kind, ref: str, local: str | None, remote: str | None,
         dry_run: bool) -> Step:
    """The five cases: new, same, ahead, fast-forward, diverged -> merged.
    BadRemoteData when the remote's chain cannot be taken."""
    step = Step(ref, SAME, local, remote)
    if remote is None:
        step.action, step.push = AHEAD, local
        return step
    if not rs.is_commit(repo, remote):
        raise BadRemoteData(_not_commit(repo, remote))
    if local is None:
        check_chain(repo, kind, ref, remote, [])
        step.action, step.local = NEW, remote
        return step
    if local == remote:
        return step
    try:
        if rs.descends(repo, local, remote):
            step.action, step.push = AHEAD, local
            return step
        if rs.descends(repo, remote, local):
            check_chain(repo, kind, ref, remote, [local])
            step.action, step.local = FAST_FORWARD, remote
            return step
        base = rs.merge_base(repo, local, remote)
    except rs.ObjectProblem as exc:
        raise BadRemoteData(str(exc)) from exc
    if base is None:
        raise BadRemoteData("unrelated history: it shares no commit with the local chain")
    check_chain(repo, kind, ref, remote, [local])
    step.action = MERGED
    if not dry_run:
        merged = merge(repo, kind, ref, local, remote, base)
        step.local = step.push = merged
    return step


def _not_commit(repo: Repo, oid: str) -> str:
    if not rs.has_object(repo, oid):
        return f"object {oid[:12]} is missing"
    return f"points at {oid[:12]}, which is not a commit"


# --- the merge of a diverged chain ------------------------------------------------


def _trailers(message: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Harnery-"):
            found[key] = value.strip()
    return found


def owner_of(data: dict[str, Any]) -> str | None:
    """The host that owns a record: a run record's ``host`` (where its
    workspace was made), a workflow record's ``runner.host`` (where it ran)."""
    host = data.get("host")
    if isinstance(host, str):
        return host
    runner = data.get("runner")
    found = runner.get("host") if isinstance(runner, dict) else None
    return found if isinstance(found, str) else None


def _side_hosts(repo: Repo, kind: Kind, ref: str, tip: str, base: str) -> set[str]:
    """The hosts that wrote the events on one side since the base. A commit
    without a Harnery-Host trailer (written before it existed) counts as the
    record's own host; merge commits count for no one."""
    hosts: set[str] = set()
    for info in rs.new_commits(repo, tip, [base]):
        if len(info.parents) > 1:
            continue
        host = _trailers(info.message).get(HOST_TRAILER)
        if host is None:
            host = owner_of(_file(repo, kind, ref, info.oid)[1])
        if host:
            hosts.add(host)
    return hosts


def merge(repo: Repo, kind: Kind, ref: str, local: str, remote: str, base: str) -> str:
    """The merge commit of two diverged heads of a chain, decided the same
    way on every clone (owner wins; see the README)."""
    sides = sorted([local, remote])
    files = {oid: _file(repo, kind, ref, oid) for oid in (*sides, base)}
    base_data = files[base][1]
    owner = owner_of(base_data)
    hosts = {oid: _side_hosts(repo, kind, ref, oid, base) for oid in sides}
    touched = {oid: owner is not None and owner in hosts[oid] for oid in sides}
    first, second = sides
    if touched[first] != touched[second]:
        winner, rule = (first if touched[first] else second), "owner"
    else:
        winner = max(sides, key=lambda oid: (str(files[oid][1].get("updatedAt", "")), oid))
        rule = "later-update"
    merged, decided = three_way(base_data, files[first][1], files[second][1], winner == first,
                                skip=frozenset({DIVERGED_FIELD}))
    stamps = [stamp for oid in sides if isinstance(stamp := files[oid][1].get("updatedAt"), str)]
    if len(stamps) == 2:
        merged["updatedAt"] = max(stamps)
    merged[DIVERGED_FIELD] = {
        "base": base,
        "heads": sides,
        "hosts": sorted(hosts[first] | hosts[second]),
        "owner": owner,
        "decidedBy": rule,
        "winner": winner,
        "fields": [key for key in decided if key != "updatedAt"],
    }
    name = min(files[first][0], files[second][0])
    raw = canonical(merged)
    try:
        kind.check(ref, name, raw)
    except BadRemoteData as exc:
        raise BadRemoteData(f"the merge of {first[:12]} and {second[:12]} is not valid: {exc.message}") \
            from exc
    record_id = ref[len(kind.prefix):]
    state = merged.get("state")
    message = (
        f"merged: chains diverged from {base[:12]}, decided by {rule}\n\n"
        f"{kind.id_trailer}: {record_id}\n"
        "Harnery-Event: merged\n"
        + (f"Harnery-State: {state}\n" if isinstance(state, str) else "")
    )
    return rs.merge_commit(repo, sides, {name: rs.write_blob(repo, raw)}, message)
