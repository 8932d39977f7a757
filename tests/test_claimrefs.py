"""The git plumbing of claims against a real bare remote: create only if
absent, move and delete only with a lease on the exact value [P3]."""

from __future__ import annotations

from pathlib import Path

from helpers import git, make_repo

from git_harn.git import claimrefs as refs
from git_harn.git import open_repo

REF = "refs/harnery/claims/4.2"


def _pair(tmp: Path) -> tuple[Path, Path]:
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
    work = make_repo(tmp / "work")
    git(work, "remote", "add", "origin", str(remote))
    return remote, work


def _remote_ref(remote: Path) -> str | None:
    out = git(remote, "for-each-ref", "--format=%(objectname)", REF)
    return out or None


def test_create_only_if_absent_then_move_and_delete_with_a_lease(tmp_path: Path) -> None:
    remote, work = _pair(tmp_path)
    repo = open_repo(work)
    first = refs.make_claim_commit(repo, b'{"claimId": "4.2"}\n', "claim: 4.2", None)
    assert refs.push_claim(repo, "origin", REF, first, None).landed
    assert _remote_ref(remote) == first
    other = refs.make_claim_commit(repo, b'{"claimId": "4.2", "x": 1}\n', "claim: 4.2 again", None)
    again = refs.push_claim(repo, "origin", REF, other, None)
    assert not again.landed and again.lost and _remote_ref(remote) == first  # never overwritten
    beat = refs.make_claim_commit(repo, b'{"claimId": "4.2", "beat": 1}\n', "heartbeat: 4.2", first)
    assert not refs.push_claim(repo, "origin", REF, beat, other).landed  # a lease on the wrong value
    assert refs.push_claim(repo, "origin", REF, beat, first).landed
    assert _remote_ref(remote) == beat
    assert refs.remote_claims(repo, "origin") == {REF: beat}
    content, parents = refs.read_claim(repo, beat)
    assert b'"beat": 1' in content and parents == [first]
    wrong = refs.push_claim(repo, "origin", REF, None, first)  # delete, but it moved
    assert not wrong.landed and wrong.lost and _remote_ref(remote) == beat
    assert refs.push_claim(repo, "origin", REF, None, beat).landed
    assert _remote_ref(remote) is None
    gone = refs.push_claim(repo, "origin", REF, None, beat)
    assert not gone.landed and gone.lost


def test_a_refusing_hook_is_refused_not_lost(tmp_path: Path) -> None:
    remote, work = _pair(tmp_path)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no claims, please'\nexit 1\n")
    hook.chmod(0o755)
    repo = open_repo(work)
    oid = refs.make_claim_commit(repo, b"{}\n", "claim", None)
    push = refs.push_claim(repo, "origin", REF, oid, None)
    assert not push.landed and push.lost is None
    assert push.refused and "pre-receive hook declined" in push.refused and "no claims, please" in push.refused
    assert _remote_ref(remote) is None
    unreachable = refs.push_claim(repo, str(tmp_path / "nowhere.git"), REF, oid, None)
    assert not unreachable.landed and unreachable.failure
