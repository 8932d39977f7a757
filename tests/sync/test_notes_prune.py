"""A notes prune is this clone's own: doctor prunes only notes on objects
this clone had and lost, and no prune travels through sync as a deletion
of notes another clone holds (notes merge by union) [P3] [P6]."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from git_harn.sync import summary
from tests.kit.harn import git, harn
from tests.kit.sync_world import World, add_note, make_world, sync

NOTES = "refs/harnery/notes"


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _notes_in(repo: Path, ref: str = NOTES) -> set[str]:
    listed = git(repo, "ls-tree", "-r", "--name-only", ref, check=False)
    return {name.replace("/", "") for name in listed.splitlines() if name}


def _remote_notes(world: World) -> set[str]:
    return _notes_in(world.remote)


def _doctor(repo: Path, *args: str) -> dict[str, object]:
    done = harn(repo, "doctor", "--json", *args)
    assert done.code in (0, 1), (done.code, done.err)
    document: dict[str, object] = json.loads(done.out)
    return document


def _codes(document: dict[str, object]) -> list[str]:
    findings = document["findings"]
    assert isinstance(findings, list)
    return [finding["code"] for finding in findings]


def _commit(repo: Path, name: str) -> str:
    (repo / name).write_text(f"{name}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "HEAD")


def _alpha_annotates(world: World, count: int) -> tuple[list[str], list[str]]:
    """Alpha: notes on commits pushed to main (squashes) and on a kept local
    branch, all synced; beta only ever runs ``git harn sync``."""
    a = world.a
    on_main = [_commit(a, f"main{n}.txt") for n in range(count)]
    git(a, "push", "-q", "origin", "main")
    git(a, "switch", "-q", "-c", "kept")
    kept = [_commit(a, f"kept{n}.txt") for n in range(count)]
    git(a, "switch", "-q", "main")
    for oid in on_main + kept:
        add_note(a, oid, "gates", {"passed": True, "on": oid})
    sync(a)
    sync(world.b)
    return on_main, kept


def test_the_behind_clone_never_claims_notes_it_never_had_and_its_fix_loses_no_note(world: World) -> None:
    on_main, kept = _alpha_annotates(world, 4)
    everything = set(on_main + kept)
    assert _notes_in(world.b) == everything  # beta holds the notes, not their objects
    assert git(world.b, "cat-file", "-t", on_main[0], check=False) == ""  # beta lacks the objects
    document = _doctor(world.b)
    assert "notes-object-gone" not in _codes(document)  # it never had them: nothing is "no longer" here
    fixed = harn(world.b, "doctor", "--fix", "--yes")
    assert fixed.code in (0, 1), fixed.err
    for clone in (world.b, world.a, world.b):
        sync(clone)
    assert _notes_in(world.a) == everything
    assert _notes_in(world.b) == everything
    assert _remote_notes(world) == everything


def test_a_prune_stays_in_its_clone_and_the_others_keep_every_note(world: World) -> None:
    on_main, kept = _alpha_annotates(world, 2)
    everything = set(on_main + kept)
    a = world.a
    git(a, "branch", "-D", "kept")
    git(a, "reflog", "expire", "--expire=now", "--all")
    git(a, "gc", "-q", "--prune=now")
    finding = next(f for f in _doctor(a)["findings"] if f["code"] == "notes-object-gone")  # type: ignore[index]
    assert sorted(finding["subject"]["objects"]) == sorted(kept)
    assert "loses nothing" not in finding["why"] or "other clones" in finding["why"]
    assert harn(a, "doctor", "--fix", "--yes").code in (0, 1)
    assert _notes_in(a) == set(on_main)
    for clone in (a, world.b, a, world.b):
        sync(clone)
    assert _notes_in(world.b) == everything  # no deletion travelled
    assert _remote_notes(world) == everything
    assert _notes_in(a) == set(on_main)  # the prune holds here, sync after sync
    assert "notes-object-gone" not in _codes(_doctor(a))  # and doctor does not ask for it again
    # the prune kept here costs no unchanged sync its short way (one summary read)
    time.sleep(summary.RACY_SECONDS + 0.1)
    sync(a, "--full")
    assert sync(a)["unchanged"] is True
    assert _notes_in(a) == set(on_main)
    # A note written after the prune still travels both ways.
    git(world.b, "fetch", "-q", "origin")
    add_note(world.b, on_main[0], "review", {"ok": True})
    add_note(a, on_main[1], "review", {"ok": True})
    for clone in (a, world.b, a):
        sync(clone)
    assert _notes_in(world.b) == everything and _notes_in(a) == set(on_main)
    for clone in (a, world.b):
        for oid in on_main:
            assert "review" in json.loads(git(clone, "show", f"{NOTES}:{oid}"))


def test_a_member_pruned_in_one_clone_stays_in_the_others(world: World) -> None:
    """``gc`` drops the salvage member of a note whose salvage branch is gone
    here; another clone that still has that branch keeps the member."""
    from git_harn.git import open_repo
    from git_harn.store.notes import prune_salvage_notes

    on_main, _ = _alpha_annotates(world, 1)
    commit = on_main[0]
    salvage = {"ref": "refs/heads/harnery/salvage/x", "runId": "x"}
    add_note(world.a, commit, "salvage", salvage)
    for clone in (world.a, world.b):
        sync(clone)
    git(world.b, "fetch", "-q", "origin")
    git(world.b, "branch", "harnery/salvage/x", commit)  # beta still has the branch; alpha never had it
    assert prune_salvage_notes(open_repo(world.a)) == 1
    assert "salvage" not in json.loads(git(world.a, "show", f"{NOTES}:{commit}"))
    for clone in (world.a, world.b, world.a, world.b):
        sync(clone)
    for where in (world.b, world.remote):
        assert json.loads(git(where, "show", f"{NOTES}:{commit}"))["salvage"] == salvage
    assert "salvage" not in json.loads(git(world.a, "show", f"{NOTES}:{commit}"))  # the prune holds here
    assert json.loads(git(world.a, "show", f"{NOTES}:{commit}"))["gates"]["passed"] is True
