"""The archive in a sync (issue 25 item 3) [P3] [P4]: archives merge like
records (never forced, the five cases, a union for two that diverged), a
run ref the shared archive holds is deleted on every side that has it, a
later event stays a ref, and a remote archive that is not one is
quarantined without costing a ref."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from git_harn.git import Signature, open_repo, to_oid
from git_harn.git.objects import BLOB_MODE
from git_harn.store import archive
from git_harn.store.archive import ARCHIVE_REF, archived, blob_path
from git_harn.sync import archive as sync_archive
from git_harn.sync import summary
from tests.kit.harn import git, harn, ref
from tests.kit.runners import at_failpoint
from tests.kit.sync_world import actions, add_record, change_record, harnery_refs, make_world, sync
from tests.store.test_archive import gc, record_refs

RUNS = "refs/harnery/runs/"


def remote_refs(remote: Path, prefix: str) -> set[str]:
    out = git(remote, "for-each-ref", "--format=%(refname)", prefix)
    return set(out.split())


def readings(clone: Path, run_id: str) -> tuple[str, str]:
    """What `log` and `status <id>` say of a run, as JSON."""
    return harn(clone, "log", run_id, "--json").out, harn(clone, "status", run_id, "--json").out


def test_two_clones_archives_merge_into_their_union(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    add_record(world.a, "from-a", state="released")
    sync(world.a)
    add_record(world.b, "from-b", state="released")
    before = {"from-a": readings(world.a, "from-a"), "from-b": readings(world.b, "from-b")}
    gc(world.a, "--older-than", "0")
    first = sync(world.a)
    assert actions(first)[RUNS + "from-a"] == "archived" and actions(first)[ARCHIVE_REF] == "ahead"
    assert remote_refs(world.remote, RUNS) == set()  # the remote's ref went, leased
    gc(world.b, "--older-than", "0")  # an archive of its own, unrelated to a's
    merged = sync(world.b)
    assert actions(merged)[ARCHIVE_REF] == "merged"
    assert actions(sync(world.a))[ARCHIVE_REF] == "fast-forward"
    tip = ref(world.remote, ARCHIVE_REF)
    assert tip is not None and ref(world.a, ARCHIVE_REF) == ref(world.b, ARCHIVE_REF) == tip
    assert len(git(world.a, "rev-list", "--parents", "-n", "1", ARCHIVE_REF).split()) == 3
    for clone in (world.a, world.b):
        assert record_refs(clone) == set()
        for run_id, said in before.items():
            assert readings(clone, run_id) == said  # byte for byte, on both clones
    sync(world.c)
    assert harnery_refs(world.c) == harnery_refs(world.a) == harnery_refs(world.b)
    assert readings(world.c, "from-b") == before["from-b"]


def test_the_merge_is_the_same_commit_whichever_clone_makes_it(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    add_record(world.a, "one", state="released")
    add_record(world.b, "two", state="already_gone")
    gc(world.a, "--older-than", "0")
    gc(world.b, "--older-than", "0")
    git(world.a, "fetch", "-q", str(world.b), f"{ARCHIVE_REF}:refs/theirs")
    repo = open_repo(world.a)
    ours, theirs = to_oid(ref(world.a, ARCHIVE_REF) or ""), to_oid(ref(world.a, "refs/theirs") or "")
    made = sync_archive.merge(repo, ours, theirs, None)
    assert sync_archive.merge(repo, theirs, ours, None) == made
    for run_id in ("one", "two"):
        assert archived(repo, run_id, made) is not None
    batches = json.loads(git(world.a, "show", f"{made}:batches.json"))
    assert [b["count"] for b in batches] == [1, 1]  # the kept side's batch, and one for what the other adds


def test_a_clone_that_holds_the_run_drops_its_ref_once_archived(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    add_record(world.a, "done", state="released")
    sync(world.a)
    sync(world.b)
    before = readings(world.b, "done")
    assert record_refs(world.b) == {"done"}
    gc(world.a, "--older-than", "0")
    sync(world.a)
    document = sync(world.b)
    assert actions(document)[RUNS + "done"] == "archived"
    assert record_refs(world.b) == set()
    assert readings(world.b, "done") == before
    time.sleep(summary.RACY_SECONDS + 0.1)  # past the racy window: a sync keeps its fingerprint
    assert set(sync(world.b)["counts"]) <= {"same"}
    assert sync(world.b)["unchanged"] is True  # settled: the next sync compares summaries only


def test_a_later_event_than_the_archive_stays_a_ref_everywhere(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    add_record(world.a, "done", state="released")
    sync(world.a)
    sync(world.b)
    gc(world.a, "--older-than", "0")
    sync(world.a)
    change_record(world.b, "done", "noted")  # b moved it on before hearing of the archive
    document = sync(world.b)
    assert actions(document)[RUNS + "done"] == "ahead"
    assert record_refs(world.b) == {"done"}
    sync(world.a)
    assert record_refs(world.a) == {"done"}  # the ref wins over the archive
    assert harn(world.a, "log", "done", "--json").json()["events"][0]["event"] == "noted"


def test_a_run_live_here_is_kept_and_shared_whatever_the_archive_says(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    tip = add_record(world.b, "going")  # live
    sync(world.b)
    sync(world.c)
    # c says, past git-harn, that the run is archived at that very commit, and deletes its ref
    repo = open_repo(world.c)
    entry = archive.snapshot(repo, "going", to_oid(tip))
    _forge_archive(world.c, world.remote, {blob_path("going"): entry.blob()})
    git(world.c, "push", "-q", str(world.remote), f":{RUNS}going")
    document = sync(world.b)
    assert actions(document)[ARCHIVE_REF] == "new"  # a valid archive: taken
    assert actions(document)[RUNS + "going"] == "ahead"  # the live ref is kept and pushed back
    assert ref(world.b, RUNS + "going") == tip and ref(world.remote, RUNS + "going") == tip


def _forge_archive(clone: Path, remote: Path, files: dict[str, bytes]) -> None:
    """Push to the remote an archive commit holding ``files``, past git-harn."""
    repo = open_repo(clone)
    parent = repo.ref_oid(ARCHIVE_REF)
    someone = Signature("someone", "someone@example.com", 0, 0)
    commit = repo.commit_files({path: (data, BLOB_MODE) for path, data in files.items()}, "forged\n",
                               [parent] if parent is not None else [], someone)
    git(clone, "push", "-q", "--force", str(remote), f"{commit}:{ARCHIVE_REF}")


def test_a_remote_archive_that_is_not_one_is_quarantined_and_costs_no_ref(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    tip = add_record(world.a, "kept", state="released")
    sync(world.a)
    entry = {"v": 1, "tip": tip, "record": "not a record", "events": [[tip, 0, "start", "", "released"]]}
    _forge_archive(world.b, world.remote, {blob_path("kept"): json.dumps(entry).encode()})
    document = sync(world.a, expect=1)
    assert actions(document)[ARCHIVE_REF] == "quarantined"
    assert actions(document).get(RUNS + "kept", "same") == "same"
    assert ref(world.a, RUNS + "kept") == tip and ref(world.a, ARCHIVE_REF) is None
    _forge_archive(world.c, world.remote, {"evil.txt": b"x"})
    assert actions(sync(world.a, expect=1))[ARCHIVE_REF] == "quarantined"


def test_without_atomic_push_the_archive_goes_before_the_refs_it_replaces(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    add_record(world.a, "done", state="released")
    sync(world.a)
    git(world.remote, "config", "receive.advertiseAtomic", "false")
    log = world.remote / "pushed.log"
    hook = world.remote / "hooks" / "post-receive"
    hook.write_text(f'#!/bin/sh\nwhile read old new ref; do echo "$ref" >> "{log}"; done\nexit 0\n')
    hook.chmod(0o755)
    gc(world.a, "--older-than", "0")
    document = sync(world.a)
    assert document["atomic"] is False
    assert log.read_text().split() == [ARCHIVE_REF, RUNS + "done", summary.SUMMARY_REF]
    assert remote_refs(world.remote, RUNS) == set()


@pytest.mark.parametrize("point", ["push-staged", "sync-pushed"])
def test_a_killed_sync_of_an_archive_loses_no_run(tmp_path: Path, point: str) -> None:
    world = make_world(tmp_path)
    for run_id in ("one", "two"):
        add_record(world.a, run_id, state="released")
    sync(world.a)
    sync(world.b)
    before = {run_id: readings(world.b, run_id) for run_id in ("one", "two")}
    gc(world.a, "--older-than", "0")
    with at_failpoint(world.a, point, "sync", "--json") as runner:
        runner.kill_group()  # git-harn and the git it runs
    for clone in (world.a, world.b):
        for run_id, said in before.items():
            assert readings(clone, run_id) == said  # from a ref or from an archive
    sync(world.a)
    sync(world.b)
    sync(world.a)
    assert harnery_refs(world.a) == harnery_refs(world.b)
    assert record_refs(world.b) == set() and remote_refs(world.remote, RUNS) == set()
    for clone in (world.a, world.b):
        for run_id, said in before.items():
            assert readings(clone, run_id) == said
