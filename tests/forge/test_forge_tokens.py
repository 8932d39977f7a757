"""Forge tokens stay with the host [T5]: never in the argv of a git, never
in a log, an exception or a proposal; never sent where a redirect points;
and gh, when it is asked at all, is asked for a token and nothing else."""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_harn.errors import ForgeFailure
from git_harn.forge.choose import forge_for
from git_harn.forge.propose import proposal_state, propose
from git_harn.forge.tokens import Token, gh_token
from git_harn.git.objects import to_oid
from git_harn.git.repo import open_repo
from git_harn.text import jsonable
from tests.kit.local_forges import FakeGitHub, bare_forge, git, make_clone, new_bare, recorded, recorder, squash

GH = "ghp_TokenThatMustNotLeak0001"
GL = "glpat-TokenThatMustNotLeak02"
GT = "gitea_TokenThatMustNotLeak3"


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def git_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every git run from here on (git-harn's, and the remote's hooks') records its argv."""
    real = shutil.which("git")
    assert real is not None
    log = tmp_path / "git-argv.jsonl"
    shim = recorder(tmp_path / "shim", "git", real, log)
    monkeypatch.setenv("PATH", f"{shim.parent}:{os.environ['PATH']}")
    yield log


def one_squash(work: Path) -> str:
    return squash(work, git(work, "rev-parse", "main"), {"hello.txt": "hi\n"})


def test_no_token_reaches_a_git_argv_a_log_or_a_result(tmp_path: Path, git_log: Path,
                                                       caplog: pytest.LogCaptureFixture,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    env = {"GH_ENTERPRISE_TOKEN": GH, "GITLAB_TOKEN": GL, "GITEA_TOKEN": GT, "PATH": ""}
    results: list[object] = []
    # GitHub, through the loopback server
    bare = new_bare(tmp_path / "gh")
    work = make_clone(tmp_path / "gh", bare)
    server = FakeGitHub(bare, GH)
    try:
        forge = forge_for(open_repo(work), "origin", "github", server.api, env=env)
        got = propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B",
                      auto_merge=True)
        results += [got, proposal_state(open_repo(work), forge, "origin", got, "1.2")]
        assert server.requests and all(r["headers"]["authorization"] == f"Bearer {GH}" for r in server.requests)
    finally:
        server.close()
    # GitLab and Gitea, by push: their tokens are for the REST API only
    for kind, url in (("gitlab", "https://gitlab.example"), ("gitea", "https://gitea.example")):
        bare = bare_forge(tmp_path / kind, kind)
        work = make_clone(tmp_path / kind, bare)
        forge = forge_for(open_repo(work), "origin", kind, url, env=env)
        results.append(propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B"))
    argv = recorded(git_log)
    assert any("push" in args for args in argv)  # the recorder saw git-harn's pushes
    seen = json.dumps(argv) + json.dumps(jsonable(results)) + repr(results) + caplog.text
    out = capsys.readouterr()
    for token in (GH, GL, GT):
        assert token not in seen + out.out + out.err


def test_a_forge_that_echoes_the_token_has_it_scrubbed_from_the_error(tmp_path: Path) -> None:
    bare = new_bare(tmp_path)
    work = make_clone(tmp_path, bare)
    server = FakeGitHub(bare, GH)
    server.echo_auth = True  # its 500 names the Authorization header it got
    try:
        forge = forge_for(open_repo(work), "origin", "github", server.api, env={"GH_ENTERPRISE_TOKEN": GH})
        with pytest.raises(ForgeFailure) as caught:
            propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B")
    finally:
        server.close()
    assert "Bearer ***" in caught.value.message and GH not in str(caught.value)
    assert caught.value.__suppress_context__  # no traceback shows the HTTP error underneath


def test_a_redirect_is_not_followed_with_the_token(tmp_path: Path) -> None:
    bare = new_bare(tmp_path)
    work = make_clone(tmp_path, bare)
    server, elsewhere = FakeGitHub(bare, GH), FakeGitHub(bare, "other")
    server.redirect_to = elsewhere.root
    try:
        forge = forge_for(open_repo(work), "origin", "github", server.api, env={"GH_ENTERPRISE_TOKEN": GH})
        with pytest.raises(ForgeFailure, match="answered 301.*it points to"):
            propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B")
    finally:
        server.close()
        elsewhere.close()
    assert server.requests and not elsewhere.requests


def test_a_token_never_prints_itself() -> None:
    token = Token(GH, "GH_TOKEN")
    assert GH not in repr(token) and GH not in str(token) and GH not in f"{token}"
    with pytest.raises(TypeError):
        pickle.dumps(token)


def test_a_stand_in_gh_is_asked_for_a_token_and_nothing_else(tmp_path: Path) -> None:
    log = tmp_path / "gh-argv.jsonl"
    shim = recorder(tmp_path / "bin", "gh", "/nonexistent", log, prints="gho_FromGh")
    token = gh_token("ghe.example.com", {"PATH": str(shim.parent), "GH_TOKEN": "", "HOME": str(tmp_path)})
    assert token is not None and token.reveal() == "gho_FromGh" and token.source == "gh auth token"
    assert recorded(log) == [["auth", "token", "--hostname", "ghe.example.com"]]


@pytest.mark.skipif(shutil.which("gh") is None, reason="gh is not installed")
def test_a_real_gh_is_used_only_to_read_a_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which("gh")
    assert real is not None
    config = tmp_path / "gh-config"
    config.mkdir()
    (config / "hosts.yml").write_text(f"127.0.0.1:\n    oauth_token: {GH}\n    user: octo\n    git_protocol: https\n")
    log = tmp_path / "gh-argv.jsonl"
    shim = recorder(tmp_path / "bin", "gh", real, log)
    bare = new_bare(tmp_path)
    work = make_clone(tmp_path, bare)
    server = FakeGitHub(bare, GH)
    env = {"PATH": f"{shim.parent}:{os.environ['PATH']}", "GH_CONFIG_DIR": str(config),
           "HOME": str(tmp_path), "GH_PROMPT_DISABLED": "1"}
    try:
        forge = forge_for(open_repo(work), "origin", "github", server.api, env=env)
        got = propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B")
        proposal_state(open_repo(work), forge, "origin", got, "1.2")
    finally:
        server.close()
    calls = recorded(log)
    assert calls and all(call[:2] == ["auth", "token"] for call in calls), calls
    assert all(r["headers"]["authorization"] == f"Bearer {GH}" for r in server.requests)
    assert subprocess.run([real, "--version"], capture_output=True, check=False).returncode == 0
