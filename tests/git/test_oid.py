"""git-harn's own object id: a str of the hex, checked once; nothing above
git/ ever holds a pygit2 object (issue 24 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_harn.git import Oid, Signature, open_repo, to_oid
from git_harn.git.worktrees import head_of
from tests.kit.harn import git, make_repo

HEX = "0123456789abcdef0123456789abcdef01234567"


def test_an_oid_is_its_hex() -> None:
    oid = to_oid(HEX)
    assert type(oid) is Oid and oid == HEX and str(oid) == HEX and hash(oid) == hash(HEX)
    assert json.dumps({"tip": oid}) == f'{{"tip": "{HEX}"}}'
    assert {oid: 1}[HEX] == 1 and to_oid(HEX.upper()) == oid
    assert Oid(oid) is oid


@pytest.mark.parametrize("text", ["", "abc", HEX[:-1], HEX + "0", "g" * 40, " " + HEX[1:], "-" + HEX[1:]])
def test_a_bad_id_is_refused_when_made(text: str) -> None:
    with pytest.raises(ValueError, match="not an object id"):
        to_oid(text)


def test_every_id_git_hands_up_is_git_harns_own(tmp_path: Path) -> None:
    """Reads and writes of objects, refs, history and worktrees give Oid, and
    take it back: a round trip through pygit2 loses nothing."""
    path = make_repo(tmp_path / "r")
    git(path, "commit", "--allow-empty", "-q", "-m", "second")
    repo = open_repo(path)
    head = repo.resolve_commit("HEAD")
    info = repo.commit_info(head)
    blob = repo.write_blob(b"hello\n")
    tree = repo.tree_with(info.tree, {"a/b.txt": (blob, 0o100644), "c.txt": (b"c\n", 0o100644)})
    me = Signature("t", "t@example.com", 1_700_000_000, 0)
    made = repo.make_commit(tree, [head], "third\n", me)
    repo.create_ref("refs/heads/third", made, "test")
    found = [head, info.tree, *info.parents, blob, tree, made, repo.ref_oid("refs/heads/third"),
             repo.merge_base(made, head), repo.empty_tree(), repo.tree_without(tree, ["c.txt"]),
             repo.entry(made, "a/b.txt")[0],  # type: ignore[index]
             *(c.oid for c in repo.walk(made)), *(oid for _, oid in repo.refs_under("refs/heads/")),
             *repo.ref_tips(["refs/heads/"]).values(), head_of(path),
             *(change.new_id for change in repo.diff_trees(head, made))]
    assert found and all(type(oid) is Oid for oid in found), [type(oid) for oid in found]
    assert repo.read_file(made, "a/b.txt") == b"hello\n" and repo.read_blob(blob) == b"hello\n"
    assert repo.contains(made, head) and repo.ahead_behind(made, head) == (1, 0)
    repo.move_ref("refs/heads/third", head, made, "test")
    assert repo.ref_oid("refs/heads/third") == head
    assert git(path, "rev-parse", "refs/heads/third").strip() == head
