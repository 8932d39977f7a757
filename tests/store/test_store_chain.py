"""The one record-chain store [P3]: a kind is a small declaration, and the
store writes, reads, walks and compares its chains, whatever the kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from git_harn.errors import CorruptRecord, RaceLost
from git_harn.git import Repo, open_repo
from git_harn.store import chain
from tests.kit.harn import git, make_repo


def _check(record_id: str, raw: bytes, where: str) -> dict[str, Any]:
    data = chain.json_object(TOYS, raw, where)
    if data.get("id") != record_id:
        raise CorruptRecord(f"corrupt toy {where}: names another toy")
    return data


def _as_dict(data: dict[str, Any]) -> dict[str, Any]:
    return data


TOYS: chain.Kind[dict[str, Any]] = chain.Kind("toy", "refs/harnery/toys/", "toy.json", "Harnery-Toy", 2, _check,
                                              _as_dict)


def _content(record_id: str, **fields: Any) -> bytes:
    return json.dumps({"id": record_id, "schemaVersion": 2, **fields}).encode()


def _put(repo: Repo, record_id: str, n: int, old: Any = None) -> Any:
    return chain.write(repo, TOYS, record_id, _content(record_id, n=n), "step", f"n is {n}", [("Harnery-N", str(n))],
                       old)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return open_repo(make_repo(tmp_path / "repo"))


def test_a_new_kind_is_one_declaration(repo: Repo) -> None:
    first = _put(repo, "t1", 1)
    second = _put(repo, "t1", 2, first)
    stored = chain.read(repo, TOYS, "t1")
    assert stored is not None and stored.tip == second and stored.record["n"] == 2
    message = git(Path(repo.common_dir), "show", "-s", "--format=%B", "refs/harnery/toys/t1")
    assert message == "step: n is 2\n\nHarnery-Toy: t1\nHarnery-Event: step\nHarnery-N: 2"
    assert [(e.event, e.summary, e.trailers["Harnery-N"]) for e in chain.history(repo, TOYS, "t1")] == [
        ("step", "n is 2", "2"), ("step", "n is 1", "1")]
    with pytest.raises(RaceLost):
        _put(repo, "t1", 3, first)  # the tip moved: never overwritten
    assert chain.read(repo, TOYS, "t1").tip == second  # type: ignore[union-attr]


def test_update_retries_from_a_fresh_read_and_a_newer_format_is_refused(repo: Repo) -> None:
    _put(repo, "t1", 1)
    seen: list[int] = []

    def bump(current: chain.Stored[dict[str, Any]] | None) -> chain.Change[dict[str, Any]]:
        assert current is not None
        seen.append(current.record["n"])
        if len(seen) == 1:
            _put(repo, "t1", 10, current.tip)  # another writer lands between our read and our write
        n = current.record["n"] + 1
        return chain.Change({"n": n}, _content("t1", n=n), "bump", "one more")

    chain.update(repo, TOYS, "t1", bump)
    assert seen == [1, 10] and chain.read(repo, TOYS, "t1").record["n"] == 11  # type: ignore[union-attr]
    chain.write(repo, TOYS, "t2", json.dumps({"id": "t2", "schemaVersion": 3}).encode(), "start", "", [], None)
    with pytest.raises(CorruptRecord, match="schemaVersion 3, this git-harn reads 2"):
        chain.read(repo, TOYS, "t2")
    assert [type(item).__name__ for item in chain.list_all(repo, TOYS)] == ["Stored", "Unreadable"]


def test_the_five_cases_and_the_reproducible_merge(repo: Repo) -> None:
    root = _put(repo, "t1", 1)
    ours = _put(repo, "t1", 2, root)
    theirs = chain.make(repo, TOYS, "t1", _content("t1", n=3), "step", "elsewhere", [], root)
    assert chain.case(repo, None, root).action == chain.NEW
    assert chain.case(repo, root, root).action == chain.SAME
    assert chain.case(repo, ours, root).action == chain.AHEAD
    assert chain.case(repo, ours, None).action == chain.AHEAD
    assert chain.case(repo, root, ours).action == chain.FAST_FORWARD
    diverged = chain.case(repo, ours, theirs)
    assert (diverged.action, diverged.base) == (chain.MERGED, root)
    stranger = chain.make(repo, TOYS, "t1", _content("t1", n=9), "step", "unrelated", [], None)
    with pytest.raises(CorruptRecord, match="unrelated history"):
        chain.case(repo, ours, stranger)
    assert chain.case(repo, ours, stranger, unrelated_ok=True).base is None
    merged = chain.merge(repo, TOYS, "t1", [theirs, ours], _content("t1", n=5), "both kept")
    assert merged == chain.merge(repo, TOYS, "t1", [ours, theirs], _content("t1", n=5), "both kept")
    info = repo.commit_info(merged)
    assert list(info.parents) == sorted([ours, theirs], key=str)
    with pytest.raises(CorruptRecord, match="is not valid"):
        chain.merge(repo, TOYS, "t1", [ours, theirs], _content("t9"), "wrong id")
    repo.move_ref(TOYS.ref("t1"), merged, ours, "test")
    events = [e.summary for e in chain.history(repo, TOYS, "t1")]
    assert events[0] == "both kept" and sorted(events[1:3]) == ["elsewhere", "n is 2"] and events[3] == "n is 1"


def test_a_commit_from_elsewhere_must_be_one_of_the_kind(repo: Repo) -> None:
    head = repo.resolve_commit("HEAD")  # the project's own commit: two files, not toy.json
    with pytest.raises(CorruptRecord, match="holds 2 entries"):
        chain.check_new(repo, TOYS, "t1", head)
    other = chain.make(repo, TOYS, "t1", _content("t2"), "step", "names another", [], None)
    with pytest.raises(CorruptRecord, match=f"commit {str(other)[:12]}: corrupt toy .*names another toy"):
        chain.check_new(repo, TOYS, "t1", other)
    good = chain.make(repo, TOYS, "t1", _content("t1"), "step", "fine", [], None)
    chain.check_new(repo, TOYS, "t1", good)
