"""The pure parts of landing through a forge: merged by content [F2], where
a remote's URL says a forge is, and the landing branch's name [F1]."""

from __future__ import annotations

import json

import pytest

from git_harn.errors import BadInput
from git_harn.forge.content import merged_by_content
from git_harn.forge.model import Proposal, State, landing_branch, proposal_from
from git_harn.forge.place import forge_of_host, place_of
from git_harn.git.objects import to_oid
from git_harn.git.patches import BaseCommit
from git_harn.text import jsonable

SQUASH = BaseCommit(to_oid("1" * 40), to_oid("a" * 40), "Add it\n\nHarnery-Task: 1.2\n", "p" * 40)


def commit(n: str, tree: str = "f", message: str = "other\n", patch: str | None = None) -> BaseCommit:
    return BaseCommit(to_oid(n * 40), to_oid(tree * 40), message, patch)


def test_the_squash_itself_on_the_base_is_merged() -> None:
    assert merged_by_content(SQUASH, [commit("2"), SQUASH], "1.2") == SQUASH.oid


def test_the_trailer_and_the_judged_tree_are_a_squash_merge() -> None:
    forge_squash = commit("3", "a", "Add it (#7)\n\nHarnery-Task: 1.2\nCo-authored-by: x <x@example.com>\n")
    assert merged_by_content(SQUASH, [commit("2"), forge_squash], "1.2") == forge_squash.oid


@pytest.mark.parametrize("other", [
    commit("3", "b", "Add it\n\nHarnery-Task: 1.2\n"),  # the trailer, another tree
    commit("3", "a", "Add it\n\nHarnery-Task: 1.20\n"),  # the tree, another task's trailer
    commit("3", "a", "Add it\n\nHarnery-Task: 1.2\nHarnery-Addendum: 1\n"),  # an addendum's squash
    commit("3", "a", "Add it\n\nsee Harnery-Task: 1.2 for more\n"),  # the words, not a trailer line
    commit("3", "a", "Add it\n", "q" * 40),  # the tree and another change
])
def test_near_misses_are_not_the_tasks_squash(other: BaseCommit) -> None:
    assert merged_by_content(SQUASH, [other], "1.2") is None


def test_an_addendum_is_told_by_its_own_trailer() -> None:
    addendum = BaseCommit(to_oid("1" * 40), to_oid("a" * 40), "x\n\nHarnery-Task: 1.2\nHarnery-Addendum: 2\n", None)
    landed = commit("4", "a", "x (#9)\n\nHarnery-Task: 1.2\nHarnery-Addendum: 2\n")
    assert merged_by_content(addendum, [landed], "1.2", 2) == landed.oid
    assert merged_by_content(addendum, [landed], "1.2", 1) is None


def test_the_same_patch_id_on_a_moved_base_is_a_rebase_merge() -> None:
    rebased = commit("5", "c", "Add it\n", "p" * 40)
    assert merged_by_content(SQUASH, [commit("2"), rebased], "1.2") == rebased.oid
    no_diff = BaseCommit(SQUASH.oid, SQUASH.tree, SQUASH.message, None)
    assert merged_by_content(no_diff, [commit("6", "c", "x\n", None)], "1.2") is None  # None matches nothing


@pytest.mark.parametrize("url, host, path, forge", [
    ("https://github.com/octo/hello.git", "github.com", "octo/hello", "github"),
    ("git@github.com:octo/hello.git", "github.com", "octo/hello", "github"),
    ("ssh://git@gitlab.example.org:2222/group/sub/proj.git", "gitlab.example.org", "group/sub/proj", "gitlab"),
    ("https://codeberg.org/octo/hello", "codeberg.org", "octo/hello", "gitea"),
    ("https://gitea.internal:3000/octo/hello.git", "gitea.internal", "octo/hello", "gitea"),
    ("https://git.example.org/octo/hello.git", "git.example.org", "octo/hello", None),
    ("/srv/git/octo/hello.git", None, "srv/git/octo/hello", None),
    ("file:///srv/git/octo/hello.git", None, "srv/git/octo/hello", None),
])
def test_where_a_remote_is(url: str, host: str | None, path: str, forge: str | None) -> None:
    place = place_of(url)
    assert (place.host, place.path, forge_of_host(place.host)) == (host, path, forge)


def test_the_web_root_keeps_an_http_port_only() -> None:
    assert place_of("https://gitea.internal:3000/o/r.git").web == "https://gitea.internal:3000"
    assert place_of("ssh://git@gitlab.example.org:2222/g/p.git").web == "https://gitlab.example.org"


def test_the_landing_branch_names_the_work() -> None:
    assert landing_branch("1.2") == "harnery/land/1.2"
    assert landing_branch("1.2", 3) == "harnery/land/1.2-addendum-3"
    for bad in ("1..2", "-x", "1.2/../main", ""):
        with pytest.raises(BadInput):
            landing_branch(bad)


def test_a_proposal_comes_back_from_its_record_or_not_at_all() -> None:
    kept = Proposal("github", "https://github.com/o/r/pull/3", 3, to_oid("1" * 40), "harnery/land/1.2", "main",
                    State.OPEN)
    assert proposal_from(json.loads(json.dumps(jsonable(kept)))) == kept
    for bad in ({**jsonable(kept), "number": "3"}, {**jsonable(kept), "head": "HEAD"},
                {**jsonable(kept), "state": "landed"}, {"forge": "github"}):
        with pytest.raises(BadInput, match="not a proposal"):
            proposal_from(bad)
