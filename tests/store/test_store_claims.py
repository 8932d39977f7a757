"""Claims against a real bare remote, through the one remote door: create
only if absent, move and delete only with a lease on the exact value [P3]."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_harn.errors import CorruptRecord
from git_harn.git import open_repo
from git_harn.git import remote as door
from git_harn.store import claims as refs
from tests.kit.harn import git, make_repo

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


def _claim(repo_path: Path, body: str, parent: str | None = None) -> str:
    return refs.make(open_repo(repo_path), "4.2", body.encode(), "claim", "4.2 by a test", [], parent)


def test_create_only_if_absent_then_move_and_delete_with_a_lease(tmp_path: Path) -> None:
    remote, work = _pair(tmp_path)
    repo = open_repo(work)
    first = _claim(work, '{"claimId": "4.2"}\n')
    assert refs.push_claim(repo, "origin", REF, first, None).status == door.PUSHED
    assert _remote_ref(remote) == first
    other = _claim(work, '{"claimId": "4.2", "x": 1}\n')
    again = refs.push_claim(repo, "origin", REF, other, None)
    assert again.status == door.MOVED_ON and _remote_ref(remote) == first  # never overwritten
    beat = _claim(work, '{"claimId": "4.2", "beat": 1}\n', first)
    assert not refs.push_claim(repo, "origin", REF, beat, other).ok  # a lease on the wrong value
    assert refs.push_claim(repo, "origin", REF, beat, first).ok
    assert _remote_ref(remote) == beat
    assert refs.remote_claims(repo, "origin") == {REF: beat}
    assert refs.read_claim(repo, "4.2", beat)["beat"] == 1
    assert git(work, "rev-list", "--parents", "-n", "1", beat).split()[1:] == [first]
    trailers = git(work, "show", "-s", "--format=%(trailers)", beat).splitlines()
    assert trailers[:2] == ["Harnery-Claim: 4.2", "Harnery-Event: claim"]
    wrong = refs.push_claim(repo, "origin", REF, None, first)  # delete, but it moved
    assert wrong.status == door.MOVED_ON and _remote_ref(remote) == beat
    assert refs.push_claim(repo, "origin", REF, None, beat).ok
    assert _remote_ref(remote) is None
    gone = refs.push_claim(repo, "origin", REF, None, beat)
    assert gone.status == door.MOVED_ON


def test_a_refusing_hook_is_refused_not_lost(tmp_path: Path) -> None:
    remote, work = _pair(tmp_path)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no claims, please'\nexit 1\n")
    hook.chmod(0o755)
    repo = open_repo(work)
    oid = _claim(work, "{}\n")
    push = refs.push_claim(repo, "origin", REF, oid, None)
    assert push.status == door.REFUSED_BY_HOOK
    assert "pre-receive hook declined" in push.why and "remote: no claims, please" in push.why
    assert _remote_ref(remote) is None
    unreachable = refs.push_claim(repo, str(tmp_path / "nowhere.git"), REF, oid, None)
    assert unreachable.status == door.UNREACHABLE and "remote repository" in unreachable.words


def test_a_commit_that_is_not_a_claim_of_the_task_is_not_read_as_one(tmp_path: Path) -> None:
    _, work = _pair(tmp_path)
    repo = open_repo(work)
    with pytest.raises(CorruptRecord, match="not a claim of this task"):
        refs.read_claim(repo, "4.2", _claim(work, '{"claimId": "9.9"}\n'))
    with pytest.raises(CorruptRecord, match="holds 2 entries"):
        refs.read_claim(repo, "4.2", git(work, "rev-parse", "HEAD"))
