"""The live index (issue 25 item 1) [P3]: every live run has a ref
refs/harnery/live/<run-id>, made and dropped in the ref transaction of the
event that starts or ends it, so `status`, the hooks and resume list the
live runs without reading an ended record."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from git_harn.git import open_repo
from git_harn.store import runs as store
from git_harn.store.ids import new_workspace_id
from git_harn.store.record import RELEASED, RunRecord
from git_harn.workspace.resume import workspaces_on
from tests.kit.harn import assert_valid, git, harn, make_repo, record, ref
from tests.kit.runners import at_failpoint
from tests.kit.sync_world import actions, add_record, change_record, harnery_refs, make_world, sync
from tests.kit.user_tools import start

MARKER = "refs/harnery/live-index/v1"


def entry(repo: Path, run_id: str) -> str | None:
    return ref(repo, f"refs/harnery/live/{run_id}")


def entries(repo: Path) -> set[str]:
    out = git(repo, "for-each-ref", "--format=%(refname:strip=3)", "refs/harnery/live/")
    return set(out.split())


def live_listed(repo: Path, *args: str) -> tuple[list[str], list[str]]:
    result = harn(repo, "status", *args, "--json")
    document = result.json()
    assert_valid(document, "status")
    return [w["runId"] for w in document["workspaces"]], [e["ref"] for e in document.get("errors", [])]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo")
    git(path, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    return path


def write_ended(repo: Path, count: int) -> list[str]:
    """``count`` released single-event runs written by the store."""
    handle = open_repo(repo)
    base = {"ref": "refs/heads/main", "oid": git(repo, "rev-parse", "HEAD")}
    ids = []
    for n in range(count):
        run_id = f"ended-{n:03d}"
        done = RunRecord(runId=run_id, workspaceId=new_workspace_id(), state=RELEASED, path=f"/gone/{run_id}",
                         branch=f"harnery/ws/{run_id}", base=base, host="here", createdAt="2026-01-01T00:00:00Z",
                         updatedAt="", attempts=1, lastOutcome=RELEASED)
        store.write(handle, done, RELEASED, "ended long ago", None)
        ids.append(run_id)
    return ids


def make_unreadable(repo: Path, run_ids: list[str]) -> None:
    """Delete the run.json blob of each record's tip: any read of it fails."""
    for run_id in run_ids:
        blob = git(repo, "rev-parse", f"refs/harnery/runs/{run_id}:run.json")
        loose = repo / ".git" / "objects" / blob[:2] / blob[2:]
        assert loose.is_file(), f"{run_id}'s record is packed: this test needs it loose"
        loose.unlink()


def test_a_run_has_an_entry_while_it_is_live_and_none_once_it_ended(repo: Path) -> None:
    path = start(repo, "r1")
    first = ref(repo, "refs/harnery/runs/r1")
    assert entry(repo, "r1") == first
    (path / "wip.txt").write_text("unfinished\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3  # preserved: still live
    assert record(repo, "r1")["state"] == "preserved_dirty"
    assert ref(repo, "refs/harnery/runs/r1") != first
    assert entry(repo, "r1") == first  # an event that keeps the run live leaves its entry
    assert harn(repo, "reclaim", "r1", "--discard", "--yes").code == 0
    assert record(repo, "r1")["state"] == "released"
    assert entry(repo, "r1") is None
    start(repo, "r1")  # the same run id, started again: live again
    assert entry(repo, "r1") == ref(repo, "refs/harnery/runs/r1")
    assert live_listed(repo) == (["r1"], [])


def test_listing_live_runs_reads_no_ended_record(repo: Path, tmp_path: Path) -> None:
    start(repo, "live-1")
    start(repo, "live-2")
    start(repo, "done-1")
    assert harn(repo, "cleanup", "done-1", "--yes").code == 0
    ended = ["done-1", *write_ended(repo, 30)]
    assert ref(repo, MARKER) is not None  # written with the first record: nothing to build
    assert live_listed(repo) == (["live-1", "live-2"], [])
    make_unreadable(repo, ended)
    # Reading them fails: status --all, which lists every record, names each one.
    every, errors = live_listed(repo, "--all")
    assert every == ["live-1", "live-2"] and sorted(errors) == sorted(f"refs/harnery/runs/{i}" for i in ended)

    assert live_listed(repo) == (["live-1", "live-2"], [])
    assert [r.runId for r in workspaces_on(open_repo(repo), "harnery/ws/live-1")] == ["live-1"]  # resume
    assert harn(repo, "hooks", "install").code == 0
    gc = harn(repo, "hooks", "run", "pre-auto-gc")
    assert gc.code == 0 and gc.err == "", gc.err
    # post-checkout on a worktree add, with live-2's folder gone: it settles live-2 alone.
    shutil.rmtree(Path(record(repo, "live-2")["path"]))
    added = subprocess.run(["git", "worktree", "add", "-q", "-b", "other", str(tmp_path / "other"), "main"],
                           cwd=repo, capture_output=True, text=True, check=False)
    assert added.returncode == 0, added.stderr
    assert "live-2" in added.stderr and "warning" not in added.stderr, added.stderr
    assert record(repo, "live-2")["state"] == "already_gone"
    assert entry(repo, "live-2") is None
    assert live_listed(repo) == (["live-1"], [])
    # The branch guard reads the one record its branch names.
    assert harn(repo, "cleanup", "live-1", "--yes").code == 0
    assert live_listed(repo) == ([], [])


def test_a_repository_written_before_the_index_is_indexed_once(repo: Path) -> None:
    start(repo, "live-1")
    start(repo, "done-1")
    assert harn(repo, "cleanup", "done-1", "--yes").code == 0
    write_ended(repo, 5)
    assert ref(repo, MARKER) is not None  # written with the first record
    # As an older git-harn left it: records, no index, no marker.
    git(repo, "update-ref", "-d", "refs/harnery/live/live-1")
    git(repo, "update-ref", "-d", MARKER)
    assert entries(repo) == set() and ref(repo, MARKER) is None
    assert live_listed(repo) == (["live-1"], [])
    assert entries(repo) == {"live-1"} and ref(repo, MARKER) is not None
    # Built once: from now on an ended record's blob is never read.
    make_unreadable(repo, ["done-1", "ended-000"])
    assert live_listed(repo) == (["live-1"], [])


def test_a_repository_without_records_gets_no_index_from_a_listing(repo: Path) -> None:
    before = git(repo, "for-each-ref")
    assert live_listed(repo) == ([], [])
    assert git(repo, "for-each-ref") == before


def test_a_stale_entry_is_dropped_when_read_and_never_trusted(repo: Path) -> None:
    start(repo, "live-1")
    start(repo, "done-1")
    assert harn(repo, "cleanup", "done-1", "--yes").code == 0
    assert live_listed(repo) == (["live-1"], [])
    # Entries a tool that does not keep the index left: an ended run's, a removed run's.
    git(repo, "update-ref", "refs/harnery/live/done-1", ref(repo, "refs/harnery/runs/done-1") or "")
    git(repo, "update-ref", "refs/harnery/live/no-such-run", git(repo, "rev-parse", "HEAD"))
    assert live_listed(repo) == (["live-1"], [])
    assert entries(repo) == {"live-1"}
    assert record(repo, "done-1")["state"] == "released"


def test_a_record_is_not_written_live_without_its_entry(repo: Path) -> None:
    """All or none: when the entry cannot be made, the record is not written."""
    lock = repo / ".git" / "refs" / "harnery" / "live" / "r1.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")  # another git is writing the entry
    failed = harn(repo, "start", "r1")
    assert failed.code != 0 and failed.err.startswith("git harn: error: "), failed.err
    assert ref(repo, "refs/harnery/runs/r1") is None and entry(repo, "r1") is None
    assert ref(repo, "refs/heads/harnery/ws/r1") is None
    lock.unlink()
    start(repo, "r1")
    assert entry(repo, "r1") == ref(repo, "refs/harnery/runs/r1")


def test_an_entry_that_cannot_be_dropped_is_left_stale_and_the_run_still_ends(repo: Path) -> None:
    start(repo, "r1")
    lock = repo / ".git" / "refs" / "harnery" / "live" / "r1.lock"
    lock.write_text("")
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    assert record(repo, "r1")["state"] == "released"
    assert entry(repo, "r1") is not None  # stale: the record says the run ended
    assert live_listed(repo) == ([], [])
    lock.unlink()
    assert live_listed(repo) == ([], [])
    assert entry(repo, "r1") is None  # dropped once it could be


@pytest.mark.parametrize("point", ["record-index-before", "record-index-after"])
def test_a_start_killed_with_its_git_at_the_index_write_leaves_no_live_run_unlisted(repo: Path, point: str) -> None:
    runner = at_failpoint(repo, point, "start", "r1")
    runner.kill_group()
    written = ref(repo, "refs/harnery/runs/r1")
    assert (written is None) == (point == "record-index-before")
    assert entry(repo, "r1") == written  # both or neither
    again = harn(repo, "start", "r1")
    assert again.code in (0, 1), again.err
    state = record(repo, "r1")["state"] if ref(repo, "refs/harnery/runs/r1") else None
    assert (entry(repo, "r1") is not None) == (state not in (None, "released", "already_gone"))
    assert live_listed(repo)[1] == []


@pytest.mark.parametrize("point", ["record-index-before", "record-index-after"])
def test_a_cleanup_killed_with_its_git_at_the_index_write_ends_on_rerun(repo: Path, point: str) -> None:
    start(repo, "r1")
    runner = at_failpoint(repo, point, "cleanup", "r1", "--yes")
    runner.kill_group()
    state = record(repo, "r1")["state"]
    assert (entry(repo, "r1") is None) == (state == "released"), state  # both or neither
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    assert record(repo, "r1")["state"] == "released" and entry(repo, "r1") is None
    assert live_listed(repo) == ([], [])


def indexed_as_recorded(clone: Path) -> None:
    """Each clone's entries are exactly its live records."""
    out = git(clone, "for-each-ref", "--format=%(refname:strip=3)", "refs/harnery/runs/")
    live = {run_id for run_id in out.split() if record(clone, run_id)["state"] not in ("released", "already_gone")}
    assert entries(clone) == live


def test_sync_indexes_the_records_it_fetches_and_merges(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    add_record(world.a, "r1")
    add_record(world.a, "r2")
    add_record(world.a, "d1", state="released")
    sync(world.a)
    sync(world.b)  # new to b
    assert entries(world.b) == {"r1", "r2"}
    assert ref(world.b, MARKER) is not None  # its first records: indexed as they came, nothing to build
    change_record(world.a, "r1", "release", state="released")
    sync(world.a)
    change_record(world.a, "r2", "release", state="released")  # diverged: a ends it, b notes it
    change_record(world.b, "r2", "note")
    assert actions(sync(world.b))["refs/harnery/runs/r1"] == "fast-forward"
    assert entries(world.b) == {"r2"}
    assert actions(sync(world.a))["refs/harnery/runs/r2"] == "merged"
    sync(world.b)
    for clone in (world.a, world.b):
        assert record(clone, "r2")["state"] == "released"  # the owner's side won
        indexed_as_recorded(clone)
        assert entries(clone) == set()
    assert harnery_refs(world.a).keys() == harnery_refs(world.b).keys()
    assert not [ref for ref in git(world.remote, "for-each-ref", "--format=%(refname)").split()
                if ref.startswith("refs/harnery/live")]  # the index is never pushed


def test_twenty_starts_at_once_all_succeed_and_the_index_is_whole(repo: Path) -> None:
    """Issue 45 item 14: every first start of a repository would write the
    marker in its own transaction; all but one lost its lock."""
    ids = [f"many-{n:02d}" for n in range(20)]
    procs = [subprocess.Popen(["git", "harn", "start", run_id], cwd=repo, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for run_id in ids]
    failed = []
    for run_id, proc in zip(ids, procs, strict=True):
        out, err = proc.communicate(timeout=240)
        if proc.returncode != 0:
            failed.append((run_id, proc.returncode, err))
    assert failed == []
    assert entries(repo) == set(ids)
    assert ref(repo, MARKER) is not None
    assert sorted(live_listed(repo)[0]) == ids


def test_a_start_whose_marker_lock_another_transaction_holds_still_succeeds(repo: Path) -> None:
    """The race of the test above, made certain: another first start holds
    the marker's lock while this one writes its record."""
    lock = repo / ".git" / "refs" / "harnery" / "live-index" / "v1.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    result = harn(repo, "start", "held")
    assert result.code == 0, result.err
    assert entries(repo) == {"held"}
    lock.unlink()
    assert live_listed(repo)[0] == ["held"]
    assert ref(repo, MARKER) is not None  # the listing wrote it, having read every record once
