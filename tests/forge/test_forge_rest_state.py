"""GitLab and Gitea with a token [F2]: the request a push opened is read
back through the REST API (a loopback server answering from what the bare
repository's hooks recorded): open, merged with the forge's merge commit,
closed; a rerun whose push changed nothing still finds its request; Gitea's
auto-merge asked with the judged head [T4]. Real git, no network."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from git_harn.forge.choose import forge_for
from git_harn.forge.model import State
from git_harn.forge.propose import proposal_state, propose
from git_harn.git.objects import to_oid
from git_harn.git.repo import open_repo
from tests.kit.local_forges import FakeRest, bare_forge, git, make_clone, squash

TOKENS = {"GITLAB_TOKEN": "glpat-restStateToken", "GITEA_TOKEN": "gitea-restStateToken", "PATH": ""}


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture(params=["gitlab", "gitea"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path, FakeRest]]:
    kind = request.param
    bare = bare_forge(tmp_path, kind)
    work = make_clone(tmp_path, bare)
    server = FakeRest(bare, kind, TOKENS["GITLAB_TOKEN" if kind == "gitlab" else "GITEA_TOKEN"])
    try:
        yield kind, work, server
    finally:
        server.close()


def test_the_state_is_read_with_the_token(world: tuple[str, Path, FakeRest]) -> None:
    kind, work, server = world
    forge = forge_for(open_repo(work), "origin", kind, server.root, env=TOKENS)
    sq = to_oid(squash(work, git(work, "rev-parse", "main"), {"hello.txt": "hi\n"}))
    got = propose(open_repo(work), forge, "origin", "main", "1.2", sq, "T", "B")
    assert got.number == 1
    opened = proposal_state(open_repo(work), forge, "origin", got, "1.2")
    assert (opened.state, opened.by, opened.head) == (State.OPEN, "forge", sq)
    server.update(1, state="merged" if kind == "gitlab" else "closed", merged=True, merge_commit_sha="b" * 40)
    merged = proposal_state(open_repo(work), forge, "origin", got, "1.2")
    assert (merged.state, merged.merge_commit) == (State.MERGED, "b" * 40)
    server.update(1, state="closed", merged=False, merge_commit_sha=None)
    assert proposal_state(open_repo(work), forge, "origin", got, "1.2").state is State.CLOSED
    sent = [r["headers"] for r in server.requests]
    assert sent and all(("private-token" in h) == (kind == "gitlab") for h in sent)


def test_gitlab_a_rerun_whose_push_changed_nothing_finds_its_request(tmp_path: Path) -> None:
    bare = bare_forge(tmp_path, "gitlab")
    work = make_clone(tmp_path, bare)
    server = FakeRest(bare, "gitlab", TOKENS["GITLAB_TOKEN"])
    try:
        forge = forge_for(open_repo(work), "origin", "gitlab", server.root, env=TOKENS)
        sq = to_oid(squash(work, git(work, "rev-parse", "main"), {"hello.txt": "hi\n"}))
        first = propose(open_repo(work), forge, "origin", "main", "1.2", sq, "T", "B")
        again = propose(open_repo(work), forge, "origin", "main", "1.2", sq, "T", "B")
    finally:
        server.close()
    assert (again.number, again.url, again.state) == (first.number, first.url, State.OPEN)


def test_gitea_auto_merge_is_asked_with_the_judged_head(tmp_path: Path) -> None:
    bare = bare_forge(tmp_path, "gitea")
    work = make_clone(tmp_path, bare)
    server = FakeRest(bare, "gitea", TOKENS["GITEA_TOKEN"])
    try:
        forge = forge_for(open_repo(work), "origin", "gitea", server.root, env=TOKENS)
        sq = to_oid(squash(work, git(work, "rev-parse", "main"), {"hello.txt": "hi\n"}))
        got = propose(open_repo(work), forge, "origin", "main", "1.2", sq, "T", "B", auto_merge=True)
    finally:
        server.close()
    assert got.auto_merge is not None and got.auto_merge.enabled
    [asked] = [r["body"] for r in server.requests if r["method"] == "POST"]
    assert asked == {"Do": "merge", "merge_when_checks_succeed": True, "head_commit_id": sq}
