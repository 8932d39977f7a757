"""The archive and `git harn gc` (issue 25 item 3) [P3]: ended run records
folded into one archive chain, their refs deleted, read back byte for byte
by `log`, `status <id>`, `status --all` and `--last N`; a killed gc loses
no record, and a second one finishes the job."""

from __future__ import annotations

import json
import os
import shlex
import signal
import time
from pathlib import Path

import pytest

from git_harn.git import open_repo
from git_harn.store import notes
from git_harn.store import runs as store
from git_harn.store.archive import ARCHIVE_REF, blob_path
from tests.kit.harn import assert_valid, git, harn, make_repo, ref
from tests.kit.runners import at_failpoint
from tests.kit.sync_world import actions, add_record, make_world, sync
from tests.kit.user_tools import start

RUNS = "refs/harnery/runs/"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo")
    git(path, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    git(path, "config", "harn.archiveBatch", "2")  # several batches from a handful of runs
    return path


def ended(repo: Path, *run_ids: str) -> None:
    for run_id in run_ids:
        start(repo, run_id)
        assert harn(repo, "cleanup", run_id, "--yes").code == 0


def record_refs(repo: Path) -> set[str]:
    out = git(repo, "for-each-ref", "--format=%(refname)", RUNS)
    return {name[len(RUNS):] for name in out.split()}


def views(repo: Path, run_ids: list[str]) -> dict[tuple[str, ...], tuple[int, str, str]]:
    """What every reading command prints, for people and as JSON."""
    asked: list[tuple[str, ...]] = [("status", "--all"), ("status", "--all", "--last", "2"), ("status", "--last", "0")]
    for run_id in run_ids:
        asked += [("status", run_id), ("log", run_id)]
    seen = {}
    for args in asked:
        for shape in ((), ("--json",)):
            done = harn(repo, *args, *shape)
            seen[(*args, *shape)] = (done.code, done.out, done.err)
    return seen


def gc(repo: Path, *args: str) -> dict:
    done = harn(repo, "gc", *args, "--json")
    assert done.code == 0, done.err
    document = done.json()
    assert_valid(document, "gc-result")
    return document


def test_archived_runs_read_back_byte_for_byte(repo: Path) -> None:
    ended(repo, "c-old", "a-mid", "b-new", "d-last", "e-more")
    start(repo, "live")
    ids = ["a-mid", "b-new", "c-old", "d-last", "e-more", "live"]
    before = views(repo, ids)
    assert before[("status", "--all", "--json")][0] == 0
    document = gc(repo, "--older-than", "0")
    assert sorted(document["archived"]) == ["a-mid", "b-new", "c-old", "d-last", "e-more"]
    assert document["batches"] == 3 and document["outcome"] == "archived"
    assert record_refs(repo) == {"live"}
    assert ref(repo, ARCHIVE_REF) is not None
    after = views(repo, ids)
    for args, seen in before.items():
        assert after[args] == seen, args
    # The old chains are reachable from no ref: git gc can prune them.
    tip = json.loads(git(repo, "cat-file", "-p", f"{ARCHIVE_REF}:{blob_path('a-mid')}"))["tip"]
    assert git(repo, "for-each-ref", "--contains", tip) == ""
    again = gc(repo, "--older-than", "0")
    assert again["archived"] == [] and again["outcome"] == "ok"


def test_gc_leaves_live_preserved_recent_and_existing_workspaces(repo: Path, tmp_path: Path) -> None:
    start(repo, "live")
    kept = start(repo, "dirty")
    (kept / "wip.txt").write_text("unfinished\n")
    assert harn(repo, "cleanup", "dirty", "--yes").code == 3
    ended(repo, "young", "folder")
    folder = Path(json.loads(git(repo, "cat-file", "-p", f"{RUNS}folder:run.json"))["path"])
    folder.mkdir(parents=True)
    document = gc(repo)  # the default: harn.archiveAfter, else 30 days
    assert document["archived"] == [] and document["skipped"] == {"too-recent": 2}
    document = gc(repo, "--older-than", "0", "--dry-run")
    assert document["archived"] == ["young"] and document["outcome"] == "dry-run"
    assert record_refs(repo) == {"live", "dirty", "young", "folder"}  # a dry run writes nothing
    assert ref(repo, ARCHIVE_REF) is None
    document = gc(repo, "--older-than", "0")
    assert document["archived"] == ["young"] and document["skipped"] == {"workspace-exists": 1}
    assert record_refs(repo) == {"live", "dirty", "folder"}


def test_a_bad_duration_is_bad_input(repo: Path) -> None:
    ended(repo, "one")
    done = harn(repo, "gc", "--older-than", "soon")
    assert done.code == 2 and "--older-than 'soon'" in done.err
    assert record_refs(repo) == {"one"}


def test_a_record_written_while_gc_runs_stays_a_ref_and_wins(repo: Path) -> None:
    ended(repo, "moved", "still")
    git(repo, "config", "harn.archiveBatch", "10")
    with at_failpoint(repo, "gc-after-archive-commit", "gc", "--older-than", "0", "--json") as runner:
        handle = open_repo(repo)
        found = store.read(handle, "moved")
        assert found is not None
        found.record.reason = "written again"
        store.write(handle, found.record, "noted", "written while gc ran", found.tip)
        os.killpg(runner.pgid, signal.SIGCONT)
        out, _ = runner.proc.communicate(timeout=60)
    document = json.loads(out)
    assert document["kept"] == ["moved"] and document["archived"] == ["still"]
    assert record_refs(repo) == {"moved"}
    shown = harn(repo, "status", "moved", "--json").json()
    assert shown["workspaces"][0]["reason"] == "written again"  # the ref wins over its archive entry
    assert harn(repo, "log", "moved", "--json").json()["events"][0]["event"] == "noted"


@pytest.mark.parametrize("point", ["gc-after-archive-commit", "gc-after-ref-deletion", "gc-before-notes-prune"])
def test_a_killed_gc_loses_no_record_and_the_next_finishes(repo: Path, point: str) -> None:
    ended(repo, "r1", "r2", "r3", "r4", "r5")
    ids = ["r1", "r2", "r3", "r4", "r5"]
    before = views(repo, ids)
    with at_failpoint(repo, point, "gc", "--older-than", "0") as runner:
        runner.kill_group()
    assert views(repo, ids) == before  # each from its ref or from the archive
    assert ref(repo, ARCHIVE_REF) is not None  # the kill came after some work
    gc(repo, "--older-than", "0")
    assert record_refs(repo) == set()
    assert views(repo, ids) == before


def test_last_reads_only_the_newest_batches(repo: Path) -> None:
    for run_id in ("old-1", "old-2", "new-1", "new-2"):
        ended(repo, run_id)
        time.sleep(1.1)  # records are dated to the second
    gc(repo, "--older-than", "0")
    # Lose the blob of an old run: a listing that read every archived run would report it.
    blob = git(repo, "rev-parse", f"{ARCHIVE_REF}:{blob_path('old-1')}")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    newest = harn(repo, "status", "--last", "2", "--json")
    assert newest.code == 0, newest.err
    assert [w["runId"] for w in newest.json()["workspaces"]] == ["new-1", "new-2"]
    everything = harn(repo, "status", "--all", "--json")
    assert everything.code == 1 and "old-1" in everything.err


def test_gc_prunes_the_notes_of_deleted_salvage_branches(repo: Path) -> None:
    handle = open_repo(repo)
    git(repo, "branch", "harnery/salvage/kept")
    commits = [git(repo, "commit-tree", "-m", f"c{n}", "HEAD^{tree}") for n in range(3)]
    gone, kept, both = (handle.resolve_commit(oid) for oid in commits)
    notes.merge_note(handle, gone, "salvage", {"ref": "refs/heads/harnery/salvage/gone"})
    notes.merge_note(handle, kept, "salvage", {"ref": "refs/heads/harnery/salvage/kept"})
    notes.merge_note(handle, both, "salvage", {"ref": "refs/heads/harnery/salvage/gone"})
    notes.merge_note(handle, both, "assessment", {"verdict": "ok"})
    assert gc(repo, "--dry-run")["notesPruned"] == 2
    assert gc(repo)["notesPruned"] == 2
    assert notes.read_note(handle, gone) == {}
    assert "salvage" in notes.read_note(handle, kept)
    assert notes.read_note(handle, both) == {"assessment": {"verdict": "ok"}}


def test_cleanup_archives_past_the_threshold(repo: Path) -> None:
    git(repo, "config", "harn.archiveThreshold", "2")
    git(repo, "config", "harn.archiveAfter", "0")
    ended(repo, "r1", "r2")
    assert record_refs(repo) == {"r1", "r2"}  # at the threshold: nothing archived
    before = views(repo, ["r1", "r2"])
    ended(repo, "r3")
    assert record_refs(repo) == {"r3"}  # one batch (harn.archiveBatch 2), the oldest
    after = views(repo, ["r1", "r2"])
    for args in (("status", "r1"), ("log", "r2", "--json"), ("status", "r2", "--json")):
        assert after[args] == before[args], args
    assert "r3" in harn(repo, "status", "--all").out


def test_a_cleanups_archive_pass_folds_one_bounded_batch_of_the_oldest(repo: Path, tmp_path: Path) -> None:
    """An automatic pass folds one batch, reading only the first record refs
    by name (one for-each-ref with --count, never sorted by time: that read
    every record commit's header), never every record; a full batch lets
    the next cleanup go on, and gc folds the rest (issue 45 item 15:
    100,000 records folded at once took one cleanup 255 s, then 1.5 s)."""
    git(repo, "config", "harn.archiveThreshold", "0")  # off while the records are made
    git(repo, "config", "harn.archiveAfter", "0")
    ended(repo, "c1", "c2", "c3", "c4", "c5", "c6")
    git(repo, "config", "harn.archiveThreshold", "3")
    # a record far newer than any other, unreadable: never read by the pass
    empty = git(repo, "hash-object", "-t", "tree", "/dev/null")
    broken = git(repo, "commit-tree", empty, "-m", "not a record",
                 env={"GIT_COMMITTER_DATE": "2099-01-01T00:00:00Z"})
    git(repo, "update-ref", f"{RUNS}z-broken", broken)
    start(repo, "c7")
    trace = tmp_path / "trace"
    done = harn(repo, "cleanup", "c7", "--yes", env={"GIT_TRACE": str(trace)})
    assert done.code == 0, done.err
    lines = trace.read_text().splitlines()
    listings = [line for line in lines if "built-in: git for-each-ref" in line and RUNS in line]
    assert listings and all("--count=" in line and "--sort" not in line for line in listings), listings
    assert "z-broken" not in done.err
    # harn.archiveBatch 2: the two oldest, c1 and c2
    assert record_refs(repo) == {"c3", "c4", "c5", "c6", "c7", "z-broken"}
    start(repo, "c8")
    assert harn(repo, "cleanup", "c8", "--yes").code == 0  # a full batch before: this one goes on
    assert record_refs(repo) == {"c5", "c6", "c7", "c8", "z-broken"}
    gc(repo)
    assert record_refs(repo) == {"z-broken"}


def test_doctor_says_an_archive_is_due_and_its_advice_archives(repo: Path) -> None:
    git(repo, "config", "harn.archiveThreshold", "1")
    git(repo, "config", "harn.archiveAfter", "0")
    ended(repo, "r1")
    assert "archive-due" not in [f["code"] for f in harn(repo, "doctor", "--json").json()["findings"]]
    git(repo, "config", "harn.archiveThreshold", "0")  # cleanup archives nothing, so two refs are left
    ended(repo, "r2")
    git(repo, "config", "harn.archiveThreshold", "1")
    document = harn(repo, "doctor", "--json").json()
    assert_valid(document, "doctor")
    due = [f for f in document["findings"] if f["code"] == "archive-due"]
    assert len(due) == 1 and due[0]["subject"] == {"ended": 2, "threshold": 1}, due
    verb, *words = shlex.split(due[0]["fix"])
    assert verb == "git" and words[0] == "harn"
    done = harn(repo, *words[1:])
    assert done.code == 0, done.err
    assert record_refs(repo) == set()
    assert "archive-due" not in [f["code"] for f in harn(repo, "doctor", "--json").json()["findings"]]


def test_a_sync_does_not_bring_back_what_gc_archived(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    here, there = world.clones[0], world.clones[1]
    add_record(here, "done", state="released")
    sync(here)
    before = views(here, ["done"])
    gc(here, "--older-than", "0")
    document = sync(here)
    assert record_refs(here) == set()  # the remote's copy is not taken again: it is deleted there
    assert actions(document)[RUNS + "done"] == "archived"
    assert git(world.remote, "for-each-ref", RUNS) == ""
    assert views(here, ["done"]) == before
    sync(there)
    assert record_refs(there) == set()  # it reads the run from the archive it now shares
    assert views(there, ["done"]) == views(here, ["done"])
