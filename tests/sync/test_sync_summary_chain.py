"""Issue 45 item 1: the remote's sync summary is only ever created or moved forward.

The remote is guarded the way a strict server is: an ``update`` hook logs
every ref it is asked to move and refuses any update of an existing ref to
a value that does not descend from the old one."""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from git_harn.git import open_repo
from git_harn.sync import summary
from git_harn.sync.summary import OLD_SUMMARY_REF, SUMMARY_REF
from tests.kit.harn import git
from tests.kit.sync_world import World, add_note, add_record, change_record, harnery_refs, make_world, sync

ZERO = "0" * 40
STRICT = """#!/bin/sh
kind=$(git cat-file -t "$3" 2>/dev/null || echo none)
echo "$1 $2 $3 $kind" >> "{log}"
if [ "$2" != {zero} ] && [ "$3" != {zero} ]; then
  git merge-base --is-ancestor "$2" "$3" 2>/dev/null || {{ echo "non-fast-forward: $1" >&2; exit 1; }}
fi
exit 0
"""


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def strict(remote: Path) -> Path:
    log = remote / "updates.log"
    hook = remote / "hooks" / "update"
    hook.write_text(STRICT.format(log=log, zero=ZERO))
    hook.chmod(0o755)
    return log


def summary_moves(log: Path) -> list[tuple[str, str, str]]:
    """(old, new, type of new) of every update of the summary the remote was asked for."""
    found = []
    for line in log.read_text().splitlines() if log.exists() else []:
        ref, old, new, kind = line.split()
        if ref == SUMMARY_REF:
            found.append((old, new, kind))
    return found


def assert_names_the_remote(world: World) -> None:
    tip = git(world.remote, "rev-parse", SUMMARY_REF)
    assert git(world.remote, "cat-file", "-t", tip) == "commit"
    message = git(world.remote, "log", "-1", "--format=%B", tip).strip() + "\n"
    assert message == summary.content(harnery_refs(world.remote)).decode()


def test_every_sync_moves_the_summary_forward_on_a_strict_remote(world: World) -> None:
    log = strict(world.remote)
    add_record(world.a, "one")
    assert sync(world.a)["outcome"] == "synced"
    for number, clone in enumerate((world.b, world.c, world.a, world.b)):
        add_record(clone, f"more-{number}")
        document = sync(clone)
        assert document["outcome"] == "synced", document
        assert_names_the_remote(world)
    change_record(world.c, "one", "touch", seen=True)
    assert sync(world.c)["outcome"] == "synced"
    moves = summary_moves(log)
    assert len(moves) == 6  # every changing sync moved it, and the hook let every move through
    assert moves[0][0] == ZERO
    for (_, new, kind), (old, _, _) in zip(moves, moves[1:], strict=False):
        assert kind == "commit" and old == new  # each one replaces the one before it
    # Each summary is a commit whose parent is the one it replaced: one chain, forward only.
    chain = git(world.remote, "rev-list", "--first-parent", SUMMARY_REF).split()
    assert chain == [new for _, new, _ in reversed(moves)]
    for clone in world.clones:
        sync(clone)
        assert harnery_refs(clone) == harnery_refs(world.remote)


def test_an_unchanged_sync_still_reads_one_ref_and_moves_nothing(world: World) -> None:
    add_record(world.a, "one")
    sync(world.a)
    sync(world.a)
    time.sleep(summary.RACY_SECONDS + 0.1)
    sync(world.a, "--full")
    log = strict(world.remote)
    assert sync(world.a)["unchanged"]
    assert not log.exists()  # nothing was pushed


NO_DELETIONS = """if [ "$3" = {zero} ]; then echo "deletion: $1" >&2; exit 1; fi
"""


def stricter(remote: Path) -> Path:
    """The remote as a server that refuses what a sync must never do:
    receive.denyDeletes and receive.denyNonFastForwards set (git applies
    them to branches only), and an update hook that logs every move and
    refuses, for every ref, a deletion or a move that is not forward."""
    git(remote, "config", "receive.denyDeletes", "true")
    git(remote, "config", "receive.denyNonFastForwards", "true")
    log = strict(remote)
    hook = remote / "hooks" / "update"
    hook.write_text(hook.read_text().replace("exit 0\n", NO_DELETIONS.format(zero=ZERO) + "exit 0\n"))
    return log


def plant_old_summary(remote: Path) -> str:
    """What an older git-harn left: the summary a blob under the old name, no chain."""
    old = remote / "old-summary"
    old.write_bytes(summary.content(harnery_refs(remote)))
    blob = git(remote, "hash-object", "-w", str(old))
    git(remote, "update-ref", OLD_SUMMARY_REF, blob)
    if git(remote, "for-each-ref", SUMMARY_REF):
        git(remote, "update-ref", "-d", SUMMARY_REF)
    return blob


def test_a_remote_with_an_old_blob_summary_only_sees_creations_and_fast_forwards(world: World) -> None:
    """Issue 45: the chain starts under its own name; the old summary is
    never deleted nor overwritten, so a server that denies deletions and
    forced updates takes every sync from every clone [S1]."""
    add_record(world.a, "one")
    sync(world.a)
    sync(world.b)
    blob = plant_old_summary(world.remote)
    log = stricter(world.remote)
    for number, clone in enumerate((world.b, world.a, world.b, world.a)):
        add_record(clone, f"more-{number}")
        document = sync(clone)
        assert document["outcome"] == "synced", document
        assert_names_the_remote(world)
    for clone in (world.a, world.b):
        assert sync(clone)["outcome"] == "synced"
    moved = [line.split() for line in log.read_text().splitlines()]
    assert moved and all(new != ZERO for _, _, new, _ in moved)  # nothing deleted
    assert OLD_SUMMARY_REF not in {ref for ref, _, _, _ in moved}  # the old one never touched
    assert git(world.remote, "rev-parse", OLD_SUMMARY_REF) == blob
    for ref, old, new, _ in moved:
        if old != ZERO:
            done = subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=world.remote, check=False)
            assert done.returncode == 0, (ref, old, new)
    chain = summary_moves(log)
    assert chain[0][0] == ZERO and len(chain) == 4  # created once, then moved forward by each change
    assert harnery_refs(world.a) == harnery_refs(world.b) == harnery_refs(world.remote)


def test_the_old_summary_still_spares_an_unchanged_sync_its_listing(world: World, tmp_path: Path) -> None:
    """A clone that kept the old summary's id (its last sync was by an older
    git-harn) and a remote with no chain yet: the unchanged check reads the
    old ref and lists nothing; a change then starts the chain beside it."""
    add_record(world.a, "one")
    sync(world.a)
    time.sleep(summary.RACY_SECONDS + 0.1)
    sync(world.a, "--full")
    repo = open_repo(world.a)
    last = summary.kept(repo, "origin")
    assert last is not None
    blob = plant_old_summary(world.remote)
    summary.keep(repo, "origin", replace(last, summary=blob))
    log = stricter(world.remote)
    document = sync(world.a)
    assert document["unchanged"] and not log.exists()
    git(world.remote, "update-ref", OLD_SUMMARY_REF, git(world.remote, "rev-parse", "HEAD"))  # moved past git-harn
    assert not sync(world.a).get("unchanged")  # no longer what was kept: it lists
    assert summary_moves(log)[0][0] == ZERO  # and the chain starts, a creation
    assert_names_the_remote(world)


def test_no_sync_moves_any_ref_on_a_strict_remote_but_forward(world: World) -> None:
    """Records changed in two clones at once (merged), notes written in
    both (united): the remote still only sees creations and fast-forwards."""
    log = strict(world.remote)
    head = git(world.a, "rev-parse", "HEAD")
    add_record(world.a, "shared")
    sync(world.a)
    sync(world.b)
    change_record(world.a, "shared", "touch", seenByA=True)
    change_record(world.b, "shared", "touch", seenByB=True)
    add_note(world.a, head, "alpha", True)
    add_note(world.b, head, "beta", True)
    for clone in (world.a, world.b, world.a):
        assert sync(clone)["outcome"] == "synced"
    moved = [line.split() for line in log.read_text().splitlines()]
    updates = [(ref, old, new) for ref, old, new, _ in moved if ZERO not in (old, new)]
    assert {ref for ref, _, _ in updates} >= {"refs/harnery/runs/shared", "refs/harnery/notes", SUMMARY_REF}
    for ref, old, new in updates:  # the hook let each through: each a fast-forward
        done = subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=world.remote, check=False)
        assert done.returncode == 0, (ref, old, new)
    assert len(summary_moves(log)) >= 3
    assert harnery_refs(world.a) == harnery_refs(world.b) == harnery_refs(world.remote)
