"""Record chains written before the one chain store read back unchanged [P3].

``fixtures/legacy-chains.bundle`` holds refs/harnery/* as git-harn wrote them
at 91202bd (``fixtures/make_legacy_chains.py`` made it): two run chains (one
line of events, and one that sync merged), a workflow record that sync
merged, notes, and a claim with a heartbeat. ``legacy-chains.json`` is what
that git-harn read back from each. Today's reads must give the same, except
where the old one was wrong: a workflow record's history showed the first
parent of a merge only, so one side of a synced record was missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from git_harn.git import open_repo, to_oid
from git_harn.store import notes
from git_harn.store import runs as store
from git_harn.workflow.ledger import claims, record
from tests.kit.harn import git, harn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BUNDLE = FIXTURES / "legacy-chains.bundle"
EXPECTED: dict[str, Any] = json.loads((FIXTURES / "legacy-chains.json").read_text())


def _unbundle(path: Path, bare: bool = False) -> Path:
    git(path.parent, "init", "-q", *(["--bare"] if bare else []), "-b", "main", str(path))
    git(path, "fetch", "-q", "--update-head-ok", str(BUNDLE), "+refs/*:refs/*")
    if not bare:
        git(path, "reset", "-q", "--hard")
    return path


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    return _unbundle(tmp_path / "legacy")


def test_run_records_and_their_histories_read_back_unchanged(legacy: Path) -> None:
    repo = open_repo(legacy)
    listed = list(store.list_records(repo))
    assert [item.record.runId for item in listed if isinstance(item, store.Stored)] == ["r1", "r2"]
    for run_id, want in EXPECTED["runs"].items():
        stored = store.read(repo, run_id)
        assert stored is not None
        assert str(stored.tip) == want["tip"] and stored.record.as_dict() == want["record"]
        history = [[str(e.oid), e.time, e.event, e.summary, e.state] for e in store.history(repo, run_id)]
        assert history == want["history"]


def test_a_synced_workflow_record_shows_both_sides_of_its_history(legacy: Path) -> None:
    """Failed before: the workflow history walked first parents only, so the
    'end' event written on alpha was missing after sync merged beta's 'note'."""
    repo = open_repo(legacy)
    want = EXPECTED["workflows"]["wf-legacy"]
    stored = record.read(repo, "wf-legacy")
    assert str(stored.tip) == want["tip"] and stored.body == want["body"] and stored.time == want["time"]
    every = set(git(legacy, "rev-list", "refs/harnery/workflows/wf-legacy").split())
    events = record.events(repo, "wf-legacy")
    assert {e["commit"] for e in events} == every  # both parents of the merge, and all before them
    old = [e["commit"] for e in want["events"]]
    assert [e["commit"] for e in events if e["commit"] in old] == old  # the old line, in its order
    assert [e["event"] for e in events][0] == "merged"
    assert sorted(e["event"] for e in events) == ["end", "merged", "note", "start", "task"]
    shown = harn(legacy, "workflow", "show", "wf-legacy")
    assert shown.code == 0, shown.err
    assert "end: workflow ended on alpha" in shown.out and "note: seen on beta" in shown.out


def test_notes_read_back_unchanged(legacy: Path) -> None:
    repo = open_repo(legacy)
    for commit, note in EXPECTED["notes"].items():
        assert notes.read_note(repo, to_oid(commit)) == note


def test_a_claim_reads_back_unchanged_from_the_remote(legacy: Path, tmp_path: Path) -> None:
    remote = _unbundle(tmp_path / "remote.git", bare=True)
    git(legacy, "remote", "add", "origin", str(remote))
    want = EXPECTED["claims"]["4.2"]
    git(legacy, "update-ref", "-d", "refs/harnery/claims/4.2")  # read from the remote, not from here
    found = claims.read_remote(open_repo(legacy), "origin")
    assert [(c.claimId, c.oid, c.body, c.error) for c in found] == [("4.2", want["tip"], want["body"], None)]


@pytest.mark.parametrize("ref", ["refs/harnery/runs/r2", "refs/harnery/workflows/wf-legacy"])
def test_sync_merges_the_legacy_heads_into_the_same_commit(legacy: Path, tmp_path: Path, ref: str) -> None:
    """The merge is reproducible: today's sync of the two heads the old one
    merged makes the very commit the old one made."""
    merged = EXPECTED["refs"][ref]
    first, second = git(legacy, "rev-list", "--parents", "-n", "1", merged).split()[1:]
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(legacy, "remote", "add", "origin", str(remote))
    git(legacy, "push", "-q", "origin", "main", f"{first}:{ref}")
    git(legacy, "update-ref", ref, second)
    for name in git(legacy, "for-each-ref", "--format=%(refname)", "refs/harnery-remotes/").split():
        git(legacy, "update-ref", "-d", name)
    done = harn(legacy, "sync", "--json")
    assert done.code == 0, done.err
    assert git(legacy, "rev-parse", ref) == merged
    assert git(remote, "rev-parse", ref) == merged
