"""reclaim, cleanup and status's resolve line from any clone on the host
(issue 45, item 12) [P1] [P2].

Clone A made the workspace; clone B sees its record after ``sync``. When
the record's clone is on this host and its git dir is where the record
says (the same clone id in its own config), B acts through A: A's locks,
A's refs, A's worktree registration, and says so. B's own refs are not
touched; the next sync brings A's result to B. Anywhere else B refuses,
naming where the workspace lives and the command to run there.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from tests.kit.git_crashes import TwoClones, start_in, two_clones
from tests.kit.harn import all_refs, assert_valid, git, harn, record, ref
from tests.kit.salvage_trees import tree_files, worktree_files

SALVAGE = "refs/heads/harnery/salvage/x"


def _preserved_in_a(tmp_path: Path) -> tuple[TwoClones, Path]:
    clones = two_clones(tmp_path)
    wt = start_in(clones.a, "x")
    (wt / "README.md").write_text("A's work\n")
    (wt / "new.txt").write_text("A's new file\n")
    assert harn(clones.a, "cleanup", "x", "--yes").code == 3
    for clone in (clones.a, clones.b):
        synced = harn(clone, "sync")
        assert synced.code == 0, synced.err
    assert record(clones.b, "x")["state"] == "preserved_dirty"
    return clones, wt


def _row(repo: Path, run_id: str) -> dict:  # type: ignore[type-arg]
    done = harn(repo, "status", "--json")
    assert done.code == 0, done.err
    assert_valid(done.json(), "status")
    return [w for w in done.json()["workspaces"] if w["runId"] == run_id][0]  # type: ignore[no-any-return]


def _branches(repo: Path) -> dict[str, str]:
    return {n: o for n, o in all_refs(repo).items() if not n.startswith("refs/harnery/")}


def test_reclaim_from_another_clone_on_the_host_acts_through_the_owner(tmp_path: Path) -> None:
    clones, wt = _preserved_in_a(tmp_path)
    expected = worktree_files(wt)
    row = _row(clones.b, "x")
    assert row["location"] == "foreign" and row["next"] == ["git harn reclaim x", "git harn reclaim x --discard --yes"]
    before_b = _branches(clones.b)
    notes = harn(clones.b, "doctor", "--json").json()["notes"]
    assert "1 live workspace(s) of another clone on this host: reclaim and cleanup act on them through it " \
        "from here" in notes, notes

    done = subprocess.run(shlex.split(row["next"][0]), cwd=clones.b, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr  # today: "workspace of another clone … act on it there"
    assert str(clones.a) in done.stderr and "through" in done.stderr, done.stderr  # it says so
    assert tree_files(clones.a, SALVAGE) == expected  # A's salvage branch, A's registration
    assert record(clones.a, "x")["state"] == "released" and not wt.exists()
    assert str(wt) not in git(clones.a, "worktree", "list")
    assert _branches(clones.b) == before_b  # nothing of B's was touched

    for clone in (clones.a, clones.b):
        assert harn(clone, "sync").code == 0, clone
    assert record(clones.b, "x")["state"] == "released"  # the next sync shows it everywhere


def test_cleanup_from_another_clone_on_the_host_acts_through_the_owner(tmp_path: Path) -> None:
    clones, wt = _preserved_in_a(tmp_path)
    (wt / "new.txt").unlink()
    git(wt, "checkout", "--", "README.md")  # clean again: cleanup can release it
    dry = harn(clones.b, "cleanup", "x", "--json")
    assert dry.code == 0 and dry.json()["wouldBe"] == "released", dry.out + dry.err
    done = harn(clones.b, "cleanup", "x", "--yes", "--json")
    assert done.code == 0, done.err
    assert done.json()["state"] == "released" and str(clones.a) in done.err
    assert record(clones.a, "x")["state"] == "released" and not wt.exists()


def test_a_record_whose_clone_is_not_where_it_says_is_refused_naming_it(tmp_path: Path) -> None:
    clones, wt = _preserved_in_a(tmp_path)
    git(clones.a, "config", "harn.cloneId", "someone-else")  # A's git dir holds another clone now
    work, refs = worktree_files(wt), all_refs(clones.b)
    assert _row(clones.b, "x")["next"] == []
    refused = harn(clones.b, "reclaim", "x")
    assert refused.code == 3 and str(clones.a) in refused.err, refused.err
    assert worktree_files(wt) == work and all_refs(clones.b) == refs


def test_another_hosts_workspace_is_refused_naming_the_host_and_the_command(tmp_path: Path) -> None:
    clones, wt = _preserved_in_a(tmp_path)
    git(clones.b, "config", "harn.host", "elsewhere")
    refused = harn(clones.b, "reclaim", "x", "--discard", "--yes")
    assert refused.code == 3, refused.err
    assert "git harn reclaim x --discard --yes" in refused.err and "on host" in refused.err, refused.err
    assert ref(clones.a, SALVAGE) is None and wt.exists()


def test_an_owner_that_no_longer_has_the_record_is_not_acted_through(tmp_path: Path) -> None:
    clones, wt = _preserved_in_a(tmp_path)
    git(clones.a, "update-ref", "-d", "refs/harnery/runs/x")
    work, refs = worktree_files(wt), all_refs(clones.b)
    refused = harn(clones.b, "reclaim", "x")
    assert refused.code == 3 and str(clones.a) in refused.err, refused.err  # not "unknown run id"
    assert worktree_files(wt) == work and all_refs(clones.b) == refs
