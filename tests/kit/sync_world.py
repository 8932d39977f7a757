"""Three clones of one bare remote, each on its own host, for the sync tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from git_harn.clock import now_iso
from git_harn.git import open_repo, to_oid
from git_harn.git.identity import host_name
from git_harn.store import notes as note_store
from git_harn.store import runs as store
from git_harn.store.ids import new_workspace_id
from git_harn.store.record import ACTIVE, RunRecord
from git_harn.sync.summary import OLD_SUMMARY_REF, SUMMARY_REF
from tests.kit.harn import Result, all_refs, assert_valid, git, harn, make_repo

HOSTS = ("alpha", "beta", "gamma")


@dataclass
class World:
    remote: Path
    clones: list[Path]

    @property
    def a(self) -> Path:
        return self.clones[0]

    @property
    def b(self) -> Path:
        return self.clones[1]

    @property
    def c(self) -> Path:
        return self.clones[2]


def make_world(root: Path) -> World:
    seed = make_repo(root / "seed")
    remote = root / "remote.git"
    git(root, "clone", "-q", "--bare", str(seed), str(remote))
    clones = []
    for host in HOSTS:
        clone = root / host
        git(root, "clone", "-q", str(remote), str(clone))
        git(clone, "config", "harn.host", host)
        clones.append(clone)
    return World(remote, clones)


def sync(clone: Path, *args: str, expect: int = 0) -> dict[str, Any]:
    """`git harn sync --json`, checked against its schema and exit code."""
    result = harn(clone, "sync", "--json", *args)
    assert result.code == expect, (result.code, result.err, result.out)
    document: dict[str, Any] = result.json()
    assert_valid(document, "sync-result")
    return document


def sync_raw(clone: Path, *args: str) -> Result:
    return harn(clone, "sync", *args)


def actions(document: dict[str, Any]) -> dict[str, str]:
    return {entry["ref"]: entry["action"] for entry in document["refs"]}


# The live index is each clone's own (sync never pushes it): not what clones share;
# nor is the remote's sync summary, which only a remote holds.
LOCAL_ONLY = ("refs/harnery/live/", "refs/harnery/live-index/", SUMMARY_REF, OLD_SUMMARY_REF)


def harnery_refs(repo: Path) -> dict[str, str]:
    """What a clone shares of refs/harnery/*."""
    return {name: oid for name, oid in all_refs(repo).items()
            if name.startswith("refs/harnery/") and not name.startswith(LOCAL_ONLY)}


def add_record(clone: Path, run_id: str, **fields: Any) -> str:
    """A run record written in ``clone`` as its host would write it."""
    repo = open_repo(clone)
    record = RunRecord(
        runId=run_id, workspaceId=new_workspace_id(), state=ACTIVE, path=f"/nowhere/{run_id}",
        branch=f"harnery/ws/{run_id}", base={"ref": "refs/heads/main", "oid": git(clone, "rev-parse", "HEAD")},
        host=host_name(repo), createdAt=now_iso(), updatedAt="", attempts=0)
    for key, value in fields.items():
        setattr(record, key, value)
    return str(store.write(repo, record, "start", "written by a test", None))


def change_record(clone: Path, run_id: str, event: str = "note", **fields: Any) -> str:
    """One more event on ``run_id`` in ``clone``; extra fields land in the record's extra."""
    repo = open_repo(clone)
    stored = store.read(repo, run_id)
    assert stored is not None
    record = stored.record
    for key, value in fields.items():
        if key in RunRecord.__dataclass_fields__:
            setattr(record, key, value)
        else:
            record.extra[key] = value
    return str(store.write(repo, record, event, f"{event} by a test", stored.tip))


def add_note(clone: Path, commit: str, kind: str, value: Any) -> None:
    repo = open_repo(clone)
    note_store.merge_note(repo, repo.resolve_commit(commit), kind, value)


def read_note(clone: Path, commit: str) -> dict[str, Any]:
    return note_store.read_note(open_repo(clone), to_oid(commit))


def chain(repo: Path, ref: str) -> set[str]:
    return set(git(repo, "rev-list", ref).split())


def remote_summary(remote: Path) -> str:
    """The summary the remote's summary ref names (a commit's message), newline-ended."""
    tip = git(remote, "rev-parse", SUMMARY_REF)
    assert git(remote, "cat-file", "-t", tip) == "commit"
    return git(remote, "log", "-1", "--format=%B", tip).strip() + "\n"
