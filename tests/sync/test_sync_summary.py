"""Issue 25 item 4: an unchanged sync compares a summary before listing
every ref, and every change on either side is still synced."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from git_harn.git import open_repo
from git_harn.git.reffiles import fingerprint
from git_harn.sync import summary
from git_harn.sync.summary import SUMMARY_REF
from tests.kit.harn import git, harn
from tests.kit.sync_world import (
    World,
    add_note,
    add_record,
    change_record,
    harnery_refs,
    make_world,
    remote_summary,
    sync,
)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def settle_clock() -> None:
    """Let the ref files age past the racy window, so a sync keeps its fingerprint."""
    time.sleep(summary.RACY_SECONDS + 0.1)


def traced_sync(clone: Path, tmp_path: Path, *args: str) -> tuple[dict[str, Any], list[list[str]], str]:
    """A sync with every git it runs traced: the document, each git's argv,
    and the protocol packets (what the remote advertised)."""
    events, packets = tmp_path / "events.json", tmp_path / "packets.txt"
    events.unlink(missing_ok=True)
    packets.unlink(missing_ok=True)
    from tests.kit.harn import assert_valid, harn
    done = harn(clone, "sync", "--json", *args,
                env={"GIT_TRACE2_EVENT": str(events), "GIT_TRACE_PACKET": str(packets)})
    assert done.code == 0, (done.err, done.out)
    document: dict[str, Any] = done.json()
    assert_valid(document, "sync-result")
    argvs = [event["argv"] for event in map(json.loads, events.read_text().splitlines())
             if event.get("event") == "start"]
    return document, argvs, packets.read_text() if packets.exists() else ""


# git's own options that take the next word as their value: ``-c k=v``,
# ``-C dir``, ``--git-dir dir`` … come before the subcommand, any number of them.
GIT_OPTIONS_WITH_VALUE = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                                    "--config-env"})


def subcommand(argv: list[str]) -> str | None:
    """The subcommand of a git argv, past every option of git's own
    (each git of the host carries several ``-c`` pairs first); None for
    another program or a git with no subcommand."""
    if not argv or Path(argv[0]).name != "git":
        return None
    words = argv[1:]
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option in GIT_OPTIONS_WITH_VALUE and words:
            words.pop(0)
    return words[0] if words else None


def ran(argvs: list[list[str]], command: str) -> bool:
    return any(subcommand(argv) == command for argv in argvs)


def test_the_subcommand_is_found_past_any_number_of_git_options() -> None:
    sealed = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "x.y=fetch",
              "--git-dir", "/p", "--no-replace-objects", "ls-remote", "--refs", "origin"]
    assert subcommand(sealed) == "ls-remote"
    assert ran([sealed], "ls-remote") and not ran([sealed], "fetch")
    assert subcommand(["git-upload-pack", "/r.git"]) is None and subcommand(["git", "-c", "a=b"]) is None


def in_step(world: World, *clones: Path) -> None:
    """Every clone synced, then synced again once its files are old enough to keep."""
    for clone in (*clones, *clones):
        sync(clone)
    settle_clock()
    for clone in clones:
        sync(clone, "--full")


def test_an_unchanged_sync_lists_nothing_fetches_nothing_pushes_nothing(world: World, tmp_path: Path) -> None:
    head = git(world.a, "rev-parse", "HEAD")
    for run_id in ("one", "two"):
        add_record(world.a, run_id)
    add_note(world.a, head, "gates", {"passed": True})
    in_step(world, world.a)
    full = sync(world.a, "--full")
    document, argvs, packets = traced_sync(world.a, tmp_path)
    assert document["unchanged"] is True and document["refs"] == []
    assert document["counts"] == {"same": 3} == full["counts"]
    assert document["summary"] == full["summary"]
    assert not ran(argvs, "ls-remote") and not ran(argvs, "push")
    listings = [argv for argv in argvs if "for-each-ref" in argv]
    assert all(name.startswith("refs/harnery-push/") for argv in listings for name in argv if "refs/" in name)
    # The one fetch asked for the summary alone, and the remote advertised only it.
    assert [argv for argv in argvs if "fetch" in argv] and all(
        f"+{SUMMARY_REF}:refs/probe" in argv for argv in argvs if "fetch" in argv)
    assert f"ref-prefix {SUMMARY_REF}" in packets
    assert "refs/harnery/runs/" not in packets and SUMMARY_REF in packets
    # The full path, for contrast, hears of every ref.
    _, argvs, packets = traced_sync(world.a, tmp_path, "--full")
    assert ran(argvs, "ls-remote") and "refs/harnery/runs/one" in packets


def test_the_remote_summary_names_what_the_remote_holds(world: World) -> None:
    head = git(world.a, "rev-parse", "HEAD")
    add_record(world.a, "one")
    add_note(world.a, head, "gates", {"passed": True})
    sync(world.a)
    held = {name: oid for name, oid in harnery_refs(world.remote).items()}
    first = git(world.remote, "rev-parse", SUMMARY_REF)
    assert remote_summary(world.remote) == summary.content(held).decode()
    add_record(world.b, "two")
    sync(world.b)
    assert git(world.remote, "rev-parse", SUMMARY_REF) != first  # every change moves it, forward
    assert git(world.remote, "rev-parse", f"{SUMMARY_REF}^") == first
    held = harnery_refs(world.remote)
    assert remote_summary(world.remote) == summary.content(held).decode()


def test_a_record_written_on_either_side_is_still_synced(world: World, tmp_path: Path) -> None:
    add_record(world.a, "one")
    in_step(world, world.a, world.b)
    assert sync(world.a)["unchanged"] and sync(world.b)["unchanged"]
    written = add_record(world.b, "two")  # b's own refs moved: b lists and pushes
    pushed = sync(world.b)
    assert not pushed["unchanged"] and pushed["pushedCount"] == 1
    document, argvs, _ = traced_sync(world.a, tmp_path)  # a's refs did not: the remote summary moved
    assert not document["unchanged"] and ran(argvs, "ls-remote")
    assert harnery_refs(world.a)["refs/harnery/runs/two"] == written
    event = change_record(world.a, "one", "touch", seen=True)
    assert sync(world.a)["pushedCount"] == 1
    assert harnery_refs(world.b).get("refs/harnery/runs/one") != event
    sync(world.b)
    assert harnery_refs(world.b)["refs/harnery/runs/one"] == event


def test_a_record_deleted_here_comes_back_from_the_remote(world: World) -> None:
    tip = add_record(world.a, "one")
    add_record(world.a, "two")
    in_step(world, world.a)
    git(world.a, "pack-refs", "--all")  # from packed-refs as well as from a loose file
    settle_clock()
    sync(world.a, "--full")
    git(world.a, "update-ref", "-d", "refs/harnery/runs/one")
    document = sync(world.a)
    assert not document["unchanged"]
    assert harnery_refs(world.a)["refs/harnery/runs/one"] == tip


def test_a_plain_push_to_the_remote_is_synced_by_full_or_once_the_listing_is_due(world: World) -> None:
    """A ref written on the remote past git-harn leaves the summary as it
    was; --full, the next change synced by any clone, or harn.syncFullAfter
    lists it (docs/sync.md)."""
    add_record(world.a, "one")
    in_step(world, world.a, world.b)
    plain = add_record(world.b, "plain")
    git(world.b, "push", "-q", "origin", "refs/harnery/runs/plain:refs/harnery/runs/plain")
    assert sync(world.a)["unchanged"]  # nothing says it changed
    git(world.a, "config", "harn.syncFullAfter", "0")
    assert not sync(world.a)["unchanged"]
    assert harnery_refs(world.a)["refs/harnery/runs/plain"] == plain
    git(world.a, "config", "--unset", "harn.syncFullAfter")
    other = add_record(world.b, "plain-two")
    git(world.b, "push", "-q", "origin", "refs/harnery/runs/plain-two:refs/harnery/runs/plain-two")
    document = sync(world.a, "--full")
    assert not document["unchanged"] and harnery_refs(world.a)["refs/harnery/runs/plain-two"] == other
    # The full listing put the summary right: b's own sync needs nothing more.
    assert sync(world.b)["pushedCount"] == 0


@pytest.mark.parametrize("damage", ["garbage", "missing", "kept-garbage"])
def test_a_bad_or_missing_summary_falls_back_to_the_full_sync(world: World, damage: str) -> None:
    add_record(world.a, "one")
    in_step(world, world.a, world.b)
    right = git(world.remote, "rev-parse", SUMMARY_REF)
    fresh = add_record(world.b, "two")
    git(world.b, "push", "-q", "origin", "refs/harnery/runs/two:refs/harnery/runs/two")
    if damage == "garbage":
        junk = git(world.remote, "hash-object", "-w", "--stdin", "-t", "blob")
        git(world.remote, "update-ref", SUMMARY_REF, junk)
    elif damage == "missing":  # as a remote with no chain yet
        git(world.remote, "update-ref", "-d", SUMMARY_REF)
    else:
        (world.a / ".git" / "harnery" / "sync" / "origin.json").write_text("{not json")
    if damage == "garbage":  # no chain grows from a blob, and none is forced or deleted [S1]
        done = harn(world.a, "sync", "--json")
        assert done.code == 0 and not done.json()["unchanged"], done.err
        assert harnery_refs(world.a)["refs/harnery/runs/two"] == fresh
        assert git(world.remote, "rev-parse", SUMMARY_REF) == junk  # left as it is
        assert f"git push origin :{SUMMARY_REF}" in done.err  # the operator is told how to clear it
        time.sleep(summary.RACY_SECONDS + 0.1)
        assert not sync(world.a)["unchanged"]  # nothing kept: each sync lists, none goes wrong
        return
    document = sync(world.a)
    assert not document["unchanged"]
    assert harnery_refs(world.a)["refs/harnery/runs/two"] == fresh
    restored = git(world.remote, "rev-parse", SUMMARY_REF)
    assert restored != right
    assert remote_summary(world.remote) == summary.content(harnery_refs(world.remote)).decode()


@pytest.mark.parametrize("flag", ["--full", "--salvage", "--dry-run"])
def test_full_salvage_and_dry_run_always_list(world: World, tmp_path: Path, flag: str) -> None:
    add_record(world.a, "one")
    in_step(world, world.a)
    assert sync(world.a)["unchanged"]
    document, argvs, _ = traced_sync(world.a, tmp_path, flag)
    assert not document["unchanged"] and ran(argvs, "ls-remote")
    assert document["refs"]


def test_a_salvage_branch_pushed_by_another_clone_is_shared(world: World) -> None:
    """Salvage branches are outside the summary: --salvage always lists them."""
    add_record(world.a, "one")
    in_step(world, world.a, world.b)
    git(world.b, "branch", "harnery/salvage/kept", "HEAD")
    sync(world.b, "--salvage")
    assert sync(world.a)["unchanged"]
    sync(world.a, "--salvage")
    assert git(world.a, "rev-parse", "harnery/salvage/kept") == git(world.b, "rev-parse", "HEAD")


def test_the_local_fingerprint_moves_with_every_ref_write(tmp_path: Path) -> None:
    from tests.kit.harn import make_repo
    path = make_repo(tmp_path / "repo")
    repo = open_repo(path)
    head = git(path, "rev-parse", "HEAD")
    names = summary.SUMMARIZED

    def now() -> str:
        found = fingerprint(open_repo(path), names)
        assert found is not None
        return found.value

    first = now()
    assert now() == first  # nothing changed, nothing differs
    git(path, "update-ref", "refs/harnery/runs/a", head)
    loose = now()
    assert loose != first
    git(path, "pack-refs", "--all")
    packed = now()
    assert packed != loose
    git(path, "commit", "-q", "--allow-empty", "-m", "two")
    git(path, "update-ref", "refs/harnery/runs/a", "HEAD")  # a packed ref gets a loose value
    assert now() != packed
    git(path, "update-ref", "refs/harnery/notes", head)
    with_notes = now()
    git(path, "update-ref", "refs/harnery/runs/sub/b", head)  # a folder below a namespace
    assert now() != with_notes
    (repo.common_dir / "refs" / "harnery" / "runs" / "c.lock").write_text("")
    assert fingerprint(repo, names) is None  # a write in flight: list instead


@pytest.mark.parametrize("point", ["push-staged", "sync-pushed"])
def test_a_sync_killed_around_its_push_never_leaves_a_summary_that_hides_a_change(world: World,
                                                                                  point: str) -> None:
    from tests.kit.runners import at_failpoint

    add_record(world.a, "one")
    in_step(world, world.a, world.b)
    fresh = add_record(world.a, "two")
    at_failpoint(world.a, point, "sync").kill_group()
    document = sync(world.a)
    assert not document["unchanged"]
    assert git(world.remote, "rev-parse", "refs/harnery/runs/two") == fresh
    assert remote_summary(world.remote) == summary.content(harnery_refs(world.remote)).decode()
    sync(world.b)
    assert harnery_refs(world.b)["refs/harnery/runs/two"] == fresh
