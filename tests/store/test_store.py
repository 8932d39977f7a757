"""The record store [P3]: commit chains under refs/harnery/runs, CAS writes,
concurrency, corrupt records, and `git harn log` [W6]."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pygit2
import pytest

from git_harn.git import open_repo
from git_harn.store import runs as store
from git_harn.store.record import RunRecord
from tests.kit.harn import assert_valid, git, harn, make_repo, record


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def test_one_commit_per_event_with_trailers(repo: Path) -> None:
    path = Path(harn(repo, "start", "r1", "--json").json()["path"])
    (path / "wip").write_text("x")
    harn(repo, "cleanup", "r1", "--yes")
    subjects = git(repo, "log", "--format=%s", "refs/harnery/runs/r1").split("\n")
    assert [s.split(":")[0] for s in subjects] == ["preserved_dirty", "freeze", "start"]
    assert git(repo, "show", "-s", "--format=%(trailers)", "refs/harnery/runs/r1").split("\n") == [
        "Harnery-Run: r1", "Harnery-Event: preserved_dirty", "Harnery-State: preserved_dirty",
        f"Harnery-Host: {socket.gethostname()}"]
    for commit in git(repo, "rev-list", "refs/harnery/runs/r1").split():
        assert_valid(json.loads(git(repo, "show", f"{commit}:run.json")), "run-record")
    shown = harn(repo, "log", "r1")
    assert shown.code == 0
    lines = shown.out.splitlines()
    assert "preserved_dirty:" in lines[1] and "start:" in lines[-1]




def test_a_first_cleanup_that_cannot_judge_keeps_its_freeze(repo: Path) -> None:
    """The intent this attempt froze is recorded even when judging fails
    (here the worktree's index is unreadable): a later move is blocked [W8]."""
    path = Path(harn(repo, "start", "r1", "--json").json()["path"])
    tip = git(repo, "rev-parse", "refs/heads/harnery/ws/r1")
    admin = Path(git(path, "rev-parse", "--absolute-git-dir"))
    (admin / "index").write_bytes(b"not an index")
    failed = harn(repo, "cleanup", "r1", "--yes")
    assert failed.code != 0 and "Traceback" not in failed.err, failed.err
    assert git(repo, "log", "-1", "--format=%s", "refs/harnery/runs/r1").startswith("freeze:")
    assert record(repo, "r1")["frozenIntent"]["oid"] == tip


def test_a_release_writes_the_frozen_intent_with_its_releasing_mark(repo: Path) -> None:
    """A first cleanup that releases writes no event of its own for the
    freeze: the intent is in the ``releasing`` event's record [W8]."""
    harn(repo, "start", "r1")
    tip = git(repo, "rev-parse", "refs/heads/harnery/ws/r1")
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    subjects = git(repo, "log", "--format=%s", "refs/harnery/runs/r1").split("\n")
    assert [s.split(":")[0] for s in subjects] == ["released", "releasing", "start"]
    assert f"froze harnery/ws/r1 at {tip}" in subjects[1]
    releasing = json.loads(git(repo, "show", "refs/harnery/runs/r1~1:run.json"))
    assert releasing["frozenIntent"]["oid"] == tip and releasing["releasing"]["oid"] == tip


def test_twenty_concurrent_starts_all_land(repo: Path) -> None:
    procs = [subprocess.Popen(["git", "harn", "start", f"c{i}"], cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(20)]
    outcomes = [(p.wait(timeout=120), p.stderr.read().decode() if p.stderr else "") for p in procs]
    assert [code for code, _ in outcomes] == [0] * 20, outcomes
    for i in range(20):
        assert record(repo, f"c{i}")["state"] == "active"
    status = harn(repo, "status", "--json").json()
    assert sorted(w["runId"] for w in status["workspaces"]) == sorted(f"c{i}" for i in range(20))


def test_lost_cas_race_is_retried_from_a_fresh_read(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    handle = open_repo(repo)
    calls = []

    def mutate(current: RunRecord | None) -> tuple[RunRecord, str, str]:
        assert current is not None
        calls.append(current.attempts)
        if len(calls) == 1:  # another writer lands between our read and our write
            rival = store.read(handle, "r1")
            assert rival is not None
            rival.record.attempts = 41
            store.write(handle, rival.record, "rival", "rival write", rival.tip)
        current.attempts += 1
        return current, "mine", "my write"

    store.update(handle, "r1", mutate)
    assert calls == [0, 41]
    assert record(repo, "r1")["attempts"] == 42
    events = [e.event for e in store.history(handle, "r1")]
    assert events[:3] == ["mine", "rival", "start"]


def test_stale_cas_write_is_refused(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    handle = open_repo(repo)
    stale = store.read(handle, "r1")
    assert stale is not None
    store.write(handle, stale.record, "first", "first", stale.tip)
    from git_harn.errors import RaceLost
    with pytest.raises(RaceLost):
        store.write(handle, stale.record, "second", "second", stale.tip)


def _plant(repo: Path, run_id: str, content: bytes, listed: bool = True) -> None:
    """A record git-harn did not write; ``listed``: with its live index entry,
    as a live record that went bad has."""
    handle = pygit2.Repository(str(repo))
    blob = handle.create_blob(content)
    builder = handle.TreeBuilder()
    builder.insert("run.json", blob, pygit2.enums.FileMode.BLOB)
    sig = pygit2.Signature("x", "x@example.com")
    commit = handle.create_commit(None, sig, sig, "bad", builder.write(), [])
    handle.references.create(f"refs/harnery/runs/{run_id}", commit)
    if listed:
        handle.references.create(f"refs/harnery/live/{run_id}", commit)


def test_corrupt_records_are_named_and_do_not_hide_the_others(repo: Path) -> None:
    assert harn(repo, "start", "good").code == 0
    _plant(repo, "bad-json", b"{not json")
    _plant(repo, "foreign", b'{"schemaVersion": 1, "hello": "world"}')
    _plant(repo, "unlisted", b"{not json", listed=False)
    # Listing every record (--all) reads the one no live index entry names too.
    every = harn(repo, "status", "--all", "--json")
    assert every.code == 1
    assert {e["ref"] for e in every.json()["errors"]} == {"refs/harnery/runs/bad-json", "refs/harnery/runs/foreign",
                                                         "refs/harnery/runs/unlisted"}
    result = harn(repo, "status", "--json")
    assert result.code == 1
    document = result.json()
    assert_valid(document, "status")
    assert [w["runId"] for w in document["workspaces"]] == ["good"]
    assert {e["ref"] for e in document["errors"]} == {"refs/harnery/runs/bad-json",
                                                      "refs/harnery/runs/foreign"}
    assert "refs/harnery/runs/bad-json" in result.err and "Traceback" not in result.err
    one = harn(repo, "cleanup", "bad-json", "--yes")
    assert one.code == 1 and "refs/harnery/runs/bad-json" in one.err
    assert len(one.err.strip().splitlines()) == 1
