"""The live proposals are listed without reading the ended ones [F2]: a
proposal has a ref refs/harnery/proposals-live/<key> while it is live,
made and dropped with the event that makes it live or ended, so a run's
reconcile, ``workflow list`` and doctor read only the live ones, however many
ended before (a year of proposals is thousands of chains). ``every`` (for
``workflow list --all``) still reads them all."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from git_harn.git import Repo, open_repo
from git_harn.store import chain, mac, proposals
from tests.kit.harn import git, make_repo, ref

ENDED = 2000
MARKER = "refs/harnery/proposals-live-index/v1"


def _body(key: str, state: str) -> dict[str, object]:
    return {"key": key, "taskId": key, "addendum": None, "state": state, "remote": "origin", "base": "main",
            "landingBranch": f"harnery/land/{key}", "head": "0" * 40, "words": ""}


def _ended_in_bulk(path: Path, count: int) -> None:
    """``count`` merged proposals, one commit and ref each, made by one git
    fast-import (as a year of them would stand: no live entry)."""
    lines = []
    for n in range(count):
        key = f"{n + 100}.1"  # signed as git-harn signs what it writes: an unsigned record is none
        raw = json.dumps(mac.sign(proposals.PROPOSALS.noun, key, _body(key, proposals.MERGED))).encode()
        lines += [b"commit refs/harnery/proposals/%d.1" % (n + 100), b"committer t <t@t> 0 +0000",
                  b"data 7", b"merged\n", b"M 100644 inline proposal.json", b"data %d" % len(raw), raw, b""]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=b"\n".join(lines) + b"\n", check=True)


class Reads:
    """How many proposal records were read (chain.record_at of the proposal kind)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = chain.record_at

        def counted(repo: Repo, kind: chain.Kind[object], record_id: str, tip: object) -> object:
            if kind is proposals.PROPOSALS:
                self.count += 1
            return real(repo, kind, record_id, tip)  # type: ignore[arg-type]

        monkeypatch.setattr(chain, "record_at", counted)

    def of(self, listing: object) -> tuple[list[str], int]:
        self.count = 0
        keys = [r["key"] for r in listing]  # type: ignore[attr-defined]
        return keys, self.count


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Repo]:
    path = make_repo(tmp_path / "repo")
    handle = open_repo(path)
    for key in ("1.1", "1.2", "1.3"):
        proposals.write(handle, _body(key, proposals.OPEN), proposals.OPEN, "opened")
    _ended_in_bulk(path, ENDED)
    return path, handle


def test_the_live_listing_reads_the_live_proposals_only_however_many_ended(
        world: tuple[Path, Repo], monkeypatch: pytest.MonkeyPatch) -> None:
    path, handle = world
    reads = Reads(monkeypatch)
    assert reads.of(proposals.live(handle)) == (["1.1", "1.2", "1.3"], 3)  # not 2,003
    keys, count = reads.of(proposals.every(handle))  # --all: every one, read
    assert len(keys) == ENDED + 3 and count == ENDED + 3
    ended = proposals.write(handle, dict(proposals.read(handle, "1.2") or {}, state=proposals.MERGED),
                            proposals.MERGED, "merged")
    assert ended["state"] == "merged" and ref(path, "refs/harnery/proposals-live/1.2") is None  # dropped with it
    assert reads.of(proposals.live(handle)) == (["1.1", "1.3"], 2)
    assert proposals.read(handle, "1.2") is not None  # the ended one is still there, read alone


def test_a_repository_written_before_the_index_builds_it_once(world: tuple[Path, Repo],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path, handle = world
    for key in ("1.1", "1.2", "1.3"):
        git(path, "update-ref", "-d", f"refs/harnery/proposals-live/{key}")
    git(path, "update-ref", "-d", MARKER)
    reads = Reads(monkeypatch)
    assert reads.of(proposals.live(handle)) == (["1.1", "1.2", "1.3"], ENDED + 6)  # all once, to build
    assert ref(path, MARKER) is not None
    assert reads.of(proposals.live(handle)) == (["1.1", "1.2", "1.3"], 3)  # and never again


def test_a_stale_entry_is_dropped_when_read(world: tuple[Path, Repo], monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = world
    merged = git(path, "rev-parse", "refs/harnery/proposals/100.1")
    git(path, "update-ref", "refs/harnery/proposals-live/100.1", merged)  # a tool that keeps no index
    handle = open_repo(path)
    assert [r["key"] for r in proposals.live(handle)] == ["1.1", "1.2", "1.3"]
    assert ref(path, "refs/harnery/proposals-live/100.1") is None
