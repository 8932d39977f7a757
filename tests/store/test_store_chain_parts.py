"""A kind kept as several files (``chain.Parts``): the record file without
one list member and that list one blob per item, so a write stores only the
items it changed (issue 25 item 5) [P3]. Readers, sync's check of a commit
from elsewhere and the merge of two heads all see the whole record."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from git_harn.errors import CorruptRecord
from git_harn.git import Oid, Repo, open_repo, to_oid
from git_harn.git.objects import BLOB_MODE
from git_harn.store import chain
from tests.kit.harn import git, make_repo


def _check(record_id: str, raw: bytes, where: str) -> dict[str, Any]:
    data = chain.json_object(BOXES, raw, where)
    if data.get("id") != record_id:
        raise CorruptRecord(f"corrupt box {where}: names another box")
    return data


BOXES: chain.Kind[dict[str, Any]] = chain.Kind("box", "refs/harnery/boxes/", "box.json", "Harnery-Box", 1, _check,
                                               lambda data: data, parts=chain.Parts("items", "items"))


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return open_repo(make_repo(tmp_path / "repo"))


def _files(repo: Repo, record: dict[str, Any], reuse: dict[int, Oid] | None = None) -> chain.Files:
    """The files a writer of boxes puts in a commit: items in ``reuse`` keep their blob."""
    head = {key: value for key, value in record.items() if key != "items"}
    files: dict[str, tuple[bytes | Oid, int]] = {"box.json": (chain.encode(head), BLOB_MODE)}
    for index, item in enumerate(record.get("items", [])):
        blob = (reuse or {}).get(index) or repo.write_blob(chain.encode(item))
        files[BOXES.parts.path(index)] = (blob, BLOB_MODE)  # type: ignore[union-attr]
    return files


def _tree(repo: Repo, rev: str) -> dict[str, str]:
    """path -> blob id of a commit's tree, as plain git lists it."""
    lines = git(Path(repo.common_dir), "ls-tree", "-r", rev).splitlines()
    return {line.split("\t")[1]: line.split()[2] for line in lines}


def _commit(repo: Repo, entries: str, parent: str | None = None) -> Oid:
    """A commit made with plain git: ``entries`` as mktree reads them (may name a subtree)."""
    cwd = Path(repo.common_dir)
    tree = subprocess.run(["git", "mktree"], cwd=cwd, input=entries, capture_output=True, text=True,
                          check=True).stdout.strip()
    message = "step: by hand\n\nHarnery-Box: b1\nHarnery-Event: step\n"
    return to_oid(git(cwd, "commit-tree", tree, "-m", message, *(["-p", parent] if parent else [])))


def _blob(repo: Repo, value: object) -> str:
    return str(repo.write_blob(json.dumps(value).encode()))


def test_items_are_blobs_of_their_own_and_an_unchanged_one_is_reused(repo: Repo) -> None:
    record = {"id": "b1", "n": 1, "items": [{"k": "a"}, {"k": "b"}]}
    first = chain.write_files(repo, BOXES, "b1", _files(repo, record), "step", "two items", [], None)
    before = _tree(repo, str(first))
    assert sorted(before) == ["box.json", "items/00000.json", "items/00001.json"]
    assert "items" not in json.loads(git(Path(repo.common_dir), "show", f"{first}:box.json"))
    record = {"id": "b1", "n": 2, "items": [{"k": "a"}, {"k": "b2"}, {"k": "c"}]}
    kept = {0: to_oid(before["items/00000.json"])}
    second = chain.write_files(repo, BOXES, "b1", _files(repo, record, kept), "step", "one changed", [], first)
    after = _tree(repo, str(second))
    assert after["items/00000.json"] == before["items/00000.json"]
    assert after["items/00001.json"] != before["items/00001.json"]
    stored = chain.read(repo, BOXES, "b1")
    assert stored is not None and stored.tip == second and stored.record == record
    chain.check_new(repo, BOXES, "b1", second)  # as sync checks what it fetched


def test_a_record_written_as_one_file_still_reads(repo: Repo) -> None:
    record = {"id": "b1", "items": [{"k": "a"}]}
    old = chain.write(repo, BOXES, "b1", json.dumps(record).encode(), "step", "one file", [], None)
    assert sorted(_tree(repo, str(old))) == ["box.json"]
    assert chain.read(repo, BOXES, "b1").record == record  # type: ignore[union-attr]
    chain.check_new(repo, BOXES, "b1", old)
    none = chain.write_files(repo, BOXES, "b1", _files(repo, {"id": "b1", "items": []}), "step", "empty", [], old)
    assert sorted(_tree(repo, str(none))) == ["box.json"]  # no items: no folder, and the member reads as []
    assert chain.read(repo, BOXES, "b1").record == {"id": "b1", "items": []}  # type: ignore[union-attr]


def test_a_merge_of_two_heads_is_kept_in_parts(repo: Repo) -> None:
    base = chain.write_files(repo, BOXES, "b1", _files(repo, {"id": "b1", "items": [{"k": "a"}]}), "step", "base",
                             [], None)
    ours = chain.make(repo, BOXES, "b1", json.dumps({"id": "b1", "items": [{"k": "ours"}]}).encode(), "step",
                      "ours", [], base)
    theirs = chain.make(repo, BOXES, "b1", json.dumps({"id": "b1", "items": [{"k": "theirs"}]}).encode(), "step",
                        "theirs", [], base)
    merged_record = {"id": "b1", "items": [{"k": "ours"}, {"k": "theirs"}]}
    merged = chain.merge(repo, BOXES, "b1", [ours, theirs], json.dumps(merged_record).encode(), "both")
    assert sorted(_tree(repo, str(merged))) == ["box.json", "items/00000.json", "items/00001.json"]
    assert chain.checked_record(repo, BOXES, "b1", merged) == merged_record


@pytest.mark.parametrize("layout, error", [
    ("gap", "items/00001.json is not item 0"),
    ("both", "items both in box.json and in items/"),
    ("not-json", "items/00000.json is not JSON"),
    ("blob-folder", "holds 2 entries"),  # a blob named like the folder is a stray file
    ("extra", "holds 3 entries"),
])
def test_a_commit_from_elsewhere_with_bad_parts_is_refused(repo: Repo, layout: str, error: str) -> None:
    item = _blob(repo, {"k": "a"})
    head = _blob(repo, {"id": "b1", "items": [{"k": "a"}]} if layout == "both" else {"id": "b1"})
    name = "00001.json" if layout == "gap" else "00000.json"
    part = str(repo.write_blob(b"{not json")) if layout == "not-json" else item
    folder = _commit(repo, f"100644 blob {part}\t{name}\n")
    folder_tree = git(Path(repo.common_dir), "rev-parse", f"{folder}^{{tree}}")
    entries = f"100644 blob {head}\tbox.json\n"
    entries += f"100644 blob {item}\titems\n" if layout == "blob-folder" else f"040000 tree {folder_tree}\titems\n"
    if layout == "extra":
        entries += f"100644 blob {item}\tstray.json\n"
    bad = _commit(repo, entries)
    with pytest.raises(CorruptRecord, match=error):
        chain.check_new(repo, BOXES, "b1", bad)
