"""Landing through GitHub [F1] [F2]: the branch pushed with a lease, one
pull request per task opened or found through the REST API (a loopback
server with GitHub's published response shapes), its state read, auto-merge
asked through GraphQL with the judged head [T4]. Real git, no network."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from git_harn.errors import BadInput, ForgeFailure, Refused
from git_harn.forge.choose import forge_for
from git_harn.forge.github import GitHub, api_roots
from git_harn.forge.model import State
from git_harn.forge.propose import proposal_state, propose
from git_harn.git.objects import to_oid
from git_harn.git.repo import open_repo
from tests.kit.local_forges import FakeGitHub, branch_at, git, make_clone, new_bare, squash

TOKEN = "ghp_s3cretTokenValue0123456789"
LANDING = "refs/heads/harnery/land/1.2"


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback server is reached directly, whatever proxy the machine names."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Path, Path, FakeGitHub]]:
    bare = new_bare(tmp_path)
    work = make_clone(tmp_path, bare)
    server = FakeGitHub(bare, TOKEN)
    try:
        yield work, bare, server
    finally:
        server.close()


def github(work: Path, server: FakeGitHub, token: str | None = TOKEN) -> GitHub:
    env = {"GH_TOKEN": token} if token else {"PATH": ""}
    forge = forge_for(open_repo(work), "origin", "github", server.api, env=env)
    assert isinstance(forge, GitHub)
    return forge


def one_squash(work: Path) -> str:
    return squash(work, git(work, "rev-parse", "main"), {"hello.txt": "hi\n"})


def test_a_proposal_pushes_the_landing_branch_and_opens_one_pull_request(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, bare, server = world
    sq = one_squash(work)
    got = propose(open_repo(work), github(work, server), "origin", "main", "1.2", to_oid(sq), "Add a greeting",
                  "The body.\n\nGates passed.")
    assert (got.number, got.state, got.head) == (1, State.OPEN, sq)
    assert got.url == f"{server.root}/octo/hello/pull/1"
    assert branch_at(bare, LANDING) == sq
    assert branch_at(bare, "refs/heads/main") != sq  # nothing lands on the base by itself
    post = server.posts()[0]
    assert post["body"]["head"] == "harnery/land/1.2" and post["body"]["base"] == "main"
    assert post["body"]["title"] == "Add a greeting" and post["body"]["body"].startswith("The body.")
    assert post["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert post["headers"]["x-github-api-version"] == "2022-11-28"


def test_asked_again_it_finds_the_request_and_opens_no_second(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, _, server = world
    sq = to_oid(one_squash(work))
    first = propose(open_repo(work), github(work, server), "origin", "main", "1.2", sq, "T", "B")
    again = propose(open_repo(work), github(work, server), "origin", "main", "1.2", sq, "T", "B")
    assert (again.number, again.url) == (first.number, first.url)
    assert len(server.posts()) == 1 and len(server.pulls) == 1


def test_a_request_another_attempt_opened_meanwhile_is_found_after_the_422(
        world: tuple[Path, Path, FakeGitHub]) -> None:
    work, bare, server = world
    sq = one_squash(work)
    git(work, "push", "-q", "origin", f"{sq}:{LANDING}")
    server.add_pull("harnery/land/1.2", sq)  # opened by an attempt that died before it could say so
    server.hide_open_once = True  # ... and the first look misses it: the POST meets GitHub's 422
    got = propose(open_repo(work), github(work, server), "origin", "main", "1.2", to_oid(sq), "T", "B")
    assert got.number == 1 and len(server.pulls) == 1
    assert len(server.posts()) == 1  # the one refused with "A pull request already exists"


def test_the_request_is_found_on_a_later_page(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, _, server = world
    server.page_cap = 2
    old = squash(work, git(work, "rev-parse", "main"), {"old.txt": "x\n"})
    for _ in range(5):
        server.add_pull("harnery/land/1.2", old, state="closed")  # earlier requests, closed
    sq = one_squash(work)
    server.add_pull("harnery/land/1.2", sq)  # the sixth: page 3 of 3
    git(work, "push", "-q", "origin", f"{sq}:{LANDING}")
    got = propose(open_repo(work), github(work, server), "origin", "main", "1.2", to_oid(sq), "T", "B")
    assert got.number == 6 and not server.posts()
    pages = [r["query"].get("page", ["1"])[0] for r in server.requests if r["method"] == "GET"]
    assert pages == ["1", "2", "3"]


def test_a_rebuilt_squash_moves_the_branch_under_the_same_request(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, bare, server = world
    first = to_oid(one_squash(work))
    propose(open_repo(work), github(work, server), "origin", "main", "1.2", first, "T", "B")
    (work / "other.txt").write_text("moved\n")
    git(work, "add", "other.txt")
    git(work, "commit", "-q", "-m", "someone else's change")
    git(work, "push", "-q", "origin", "main")
    second = to_oid(squash(work, git(work, "rev-parse", "main"), {"hello.txt": "hi\n"}))
    got = propose(open_repo(work), github(work, server), "origin", "main", "1.2", second, "T", "B", previous=first)
    assert branch_at(bare, LANDING) == second
    assert got.number == 1 and len(server.pulls) == 1 and server.pulls[0]["sha"] == second


def test_a_landing_branch_someone_else_moved_is_left_alone(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, bare, server = world
    first = to_oid(one_squash(work))
    propose(open_repo(work), github(work, server), "origin", "main", "1.2", first, "T", "B")
    foreign = squash(work, first, {"reviewer.txt": "a fix\n"})
    git(work, "push", "-q", "origin", f"{foreign}:{LANDING}")
    second = to_oid(squash(work, git(work, "rev-parse", "main"), {"hello.txt": "hello\n"}))
    with pytest.raises(Refused, match="did not push there"):
        propose(open_repo(work), github(work, server), "origin", "main", "1.2", second, "T", "B", previous=first)
    assert branch_at(bare, LANDING) == foreign


def test_no_token_is_bad_input_before_anything_is_pushed(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, bare, server = world
    with pytest.raises(BadInput, match="no token"):
        propose(open_repo(work), github(work, server, token=None), "origin", "main", "1.2",
                to_oid(one_squash(work)), "T", "B")
    assert branch_at(bare, LANDING) is None and not server.requests


def test_the_state_is_read_from_the_forge(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, _, server = world
    sq = to_oid(one_squash(work))
    got = propose(open_repo(work), github(work, server), "origin", "main", "1.2", sq, "T", "B")
    forge = github(work, server)
    assert proposal_state(open_repo(work), forge, "origin", got, "1.2").state is State.OPEN
    server.pulls[0].update(state="closed", merged=True, merge_commit_sha="a" * 40)
    merged = proposal_state(open_repo(work), forge, "origin", got, "1.2")
    assert (merged.state, merged.merge_commit, merged.by) == (State.MERGED, "a" * 40, "forge")
    server.pulls[0].update(merged=False, merge_commit_sha=None, closed_at="2026-02-03T04:05:06Z")
    closed = proposal_state(open_repo(work), forge, "origin", got, "1.2")
    assert closed.state is State.CLOSED and "2026-02-03" in closed.words


def test_without_a_token_the_state_is_told_by_content(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, _, server = world
    base = to_oid(git(work, "rev-parse", "main"))
    got = propose(open_repo(work), github(work, server), "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B")
    tokenless = github(work, server, token=None)
    assert proposal_state(open_repo(work), tokenless, "origin", got, "1.2", since=base).state is State.UNKNOWN
    git(work, "push", "-q", "origin", f"{got.head}:refs/heads/main")  # merged on the forge by a fast-forward
    merged = proposal_state(open_repo(work), tokenless, "origin", got, "1.2", since=base)
    assert (merged.state, merged.merge_commit, merged.by) == (State.MERGED, got.head, "content")


def test_auto_merge_is_asked_through_graphql_with_the_judged_head(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, _, server = world
    sq = to_oid(one_squash(work))
    got = propose(open_repo(work), github(work, server), "origin", "main", "1.2", sq, "T", "B", auto_merge=True,
                  merge_method="squash")
    assert got.auto_merge is not None and got.auto_merge.enabled
    asked = [r for r in server.requests if r["path"] == "/api/graphql"][0]["body"]["variables"]
    assert asked == {"id": "PR_node1", "head": sq, "method": "SQUASH"}
    assert server.pulls[0]["auto_merge"]["merge_method"] == "squash"


def test_a_repository_that_allows_no_auto_merge_says_so_and_the_request_stays(
        world: tuple[Path, Path, FakeGitHub]) -> None:
    work, _, server = world
    server.refuse_auto_merge = "Pull request Auto merge is not allowed for this repository"
    got = propose(open_repo(work), github(work, server), "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B",
                  auto_merge=True)
    assert got.number == 1 and got.auto_merge is not None
    assert not got.auto_merge.enabled and "not allowed" in got.auto_merge.words


def test_auto_merge_that_fails_to_be_asked_leaves_the_request_and_says_why(
        world: tuple[Path, Path, FakeGitHub]) -> None:
    work, _, server = world
    server.graphql_down = True
    got = propose(open_repo(work), github(work, server), "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B",
                  auto_merge=True)
    assert got.number == 1 and got.state is State.OPEN
    assert got.auto_merge is not None and not got.auto_merge.enabled and "502" in got.auto_merge.words


def test_the_api_roots_of_github_and_an_enterprise_server() -> None:
    assert api_roots(None, "github.com") == ("https://api.github.com", "https://api.github.com/graphql")
    assert api_roots(None, "ghe.example.com") == ("https://ghe.example.com/api/v3",
                                                  "https://ghe.example.com/api/graphql")
    assert api_roots("https://ghe.example.com", None)[0] == "https://ghe.example.com/api/v3"
    assert api_roots("https://github.com", None)[0] == "https://api.github.com"


def test_a_forge_url_that_would_carry_the_token_in_clear_is_refused(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, _, _ = world
    with pytest.raises(BadInput, match="plain http"):
        forge_for(open_repo(work), "origin", "github", "http://ghe.example.com/api/v3", env={"GH_TOKEN": TOKEN})
    with pytest.raises(BadInput, match="not an http"):
        forge_for(open_repo(work), "origin", "github", "file:///etc/passwd", env={"GH_TOKEN": TOKEN})


def test_a_forge_error_is_one_line_with_the_forges_words(world: tuple[Path, Path, FakeGitHub]) -> None:
    work, _, server = world
    forge = github(work, server, token="wrong")
    with pytest.raises(ForgeFailure, match="answered 401: Bad credentials"):
        propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B")
