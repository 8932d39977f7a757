"""Landing through GitLab (push options) and Gitea/Forgejo (the AGit flow)
[F1] [F2], against local bare repositories whose hooks record what the forge
would make of each push and refuse what it would refuse; and a merge done
on the "forge" (a merge, a squash merge, a rebase merge) recognised by
content when the forge cannot be asked. Real git, no network."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from git_harn.errors import BadInput, ForgeFailure
from git_harn.forge.choose import forge_for
from git_harn.forge.gitea import Gitea
from git_harn.forge.gitlab import GitLab
from git_harn.forge.landing import delete_branch
from git_harn.forge.model import State
from git_harn.forge.propose import proposal_state, propose
from git_harn.git.objects import to_oid
from git_harn.git.repo import open_repo
from tests.kit.local_forges import bare_forge, branch_at, git, make_clone, requests_of, squash

LANDING = "refs/heads/harnery/land/1.2"
NO_TOKENS = {"PATH": ""}


def gitlab_world(tmp: Path, push_options: bool = True) -> tuple[Path, Path, GitLab]:
    bare = bare_forge(tmp, "gitlab", push_options)
    work = make_clone(tmp, bare)
    forge = forge_for(open_repo(work), "origin", "gitlab", "https://gitlab.example", env=NO_TOKENS)
    assert isinstance(forge, GitLab)
    return work, bare, forge


def gitea_world(tmp: Path) -> tuple[Path, Path, Gitea]:
    bare = bare_forge(tmp, "gitea")
    work = make_clone(tmp, bare)
    forge = forge_for(open_repo(work), "origin", "gitea", "https://gitea.example", env=NO_TOKENS)
    assert isinstance(forge, Gitea)
    return work, bare, forge


def one_squash(work: Path, text: str = "hi\n") -> str:
    return squash(work, git(work, "rev-parse", "main"), {"hello.txt": text})


# --- GitLab ------------------------------------------------------------------------


def test_gitlab_opens_the_merge_request_by_push_options(tmp_path: Path) -> None:
    work, bare, forge = gitlab_world(tmp_path)
    sq = one_squash(work)
    got = propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(sq), "Add a greeting",
                  "Plan: greet.\nGates: passed.")
    assert (got.number, got.url, got.state) == (1, "https://gitlab.example/octo/hello/-/merge_requests/1",
                                                State.OPEN)
    assert branch_at(bare, LANDING) == sq and branch_at(bare, "refs/heads/main") != sq
    [request] = requests_of(bare)
    assert request["source"] == "harnery/land/1.2" and request["target"] == "main"
    assert request["title"] == "Add a greeting"
    assert request["description"] == "Plan: greet. Gates: passed."  # a push option is one line
    assert request["remove_source_branch"] and not request["auto_merge"]


def test_gitlab_asked_again_pushes_nothing_and_opens_nothing(tmp_path: Path) -> None:
    work, bare, forge = gitlab_world(tmp_path)
    sq = to_oid(one_squash(work))
    propose(open_repo(work), forge, "origin", "main", "1.2", sq, "T", "B")
    again = propose(open_repo(work), forge, "origin", "main", "1.2", sq, "T", "B")
    assert len(requests_of(bare)) == 1
    assert again.state is State.UNKNOWN and again.number is None  # no hook ran, no token to ask


def test_gitlab_a_rebuilt_squash_updates_the_same_request(tmp_path: Path) -> None:
    work, bare, forge = gitlab_world(tmp_path)
    first = to_oid(one_squash(work))
    propose(open_repo(work), forge, "origin", "main", "1.2", first, "T", "B")
    second = to_oid(one_squash(work, "hello\n"))
    got = propose(open_repo(work), forge, "origin", "main", "1.2", second, "T", "B", previous=first, auto_merge=True)
    [request] = requests_of(bare)
    assert request["sha"] == second and got.number == 1 and branch_at(bare, LANDING) == second
    assert "merge_request.merge_when_pipeline_succeeds" in request["options"]


def test_gitlab_refusing_the_push_leaves_no_branch(tmp_path: Path) -> None:
    work, bare, forge = gitlab_world(tmp_path)
    with pytest.raises(ForgeFailure, match="target branch trunk does not exist"):
        propose(open_repo(work), forge, "origin", "trunk", "1.2", to_oid(one_squash(work)), "T", "B")
    assert branch_at(bare, LANDING) is None and not requests_of(bare)


def test_a_remote_without_push_options_is_a_clear_failure(tmp_path: Path) -> None:
    work, bare, forge = gitlab_world(tmp_path, push_options=False)
    with pytest.raises(ForgeFailure, match="push options"):
        propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B")
    assert branch_at(bare, LANDING) is None


# --- Gitea / Forgejo -----------------------------------------------------------------


def test_gitea_opens_the_pull_request_by_the_agit_flow(tmp_path: Path) -> None:
    work, bare, forge = gitea_world(tmp_path)
    sq = one_squash(work)
    got = propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(sq), "Add a greeting", "Body\ntwo")
    assert (got.number, got.url) == (1, "https://gitea.example/octo/hello/pulls/1")
    [request] = requests_of(bare)
    assert (request["topic"], request["base"], request["title"], request["description"]) == (
        "harnery/land/1.2", "main", "Add a greeting", "Body two")
    assert branch_at(bare, "refs/pull/1/head") == sq
    assert branch_at(bare, LANDING) is None and branch_at(bare, "refs/heads/main") != sq  # no branch, no landing
    assert "force-push=true" not in request["options"]


def test_gitea_asked_again_finds_the_same_request(tmp_path: Path) -> None:
    work, bare, forge = gitea_world(tmp_path)
    sq = to_oid(one_squash(work))
    first = propose(open_repo(work), forge, "origin", "main", "1.2", sq, "T", "B")
    again = propose(open_repo(work), forge, "origin", "main", "1.2", sq, "T", "B")
    assert again.number == first.number == 1 and len(requests_of(bare)) == 1


def test_gitea_a_rebuilt_squash_is_force_pushed_onto_the_same_request(tmp_path: Path) -> None:
    work, bare, forge = gitea_world(tmp_path)
    first = to_oid(one_squash(work))
    propose(open_repo(work), forge, "origin", "main", "1.2", first, "T", "B")
    second = to_oid(one_squash(work, "hello\n"))
    got = propose(open_repo(work), forge, "origin", "main", "1.2", second, "T", "B", previous=first)
    [request] = requests_of(bare)
    assert got.number == 1 and request["sha"] == second and "force-push=true" in request["options"]
    assert branch_at(bare, "refs/pull/1/head") == second


def test_the_agit_forge_refuses_a_push_without_a_topic(tmp_path: Path) -> None:
    """The stand-in forge is as strict as Gitea: what git-harn sends passes because it names its topic."""
    work, bare, _ = gitea_world(tmp_path)
    sq = one_squash(work)
    done = subprocess.run(["git", "push", "origin", f"{sq}:refs/for/main"], cwd=work, capture_output=True,
                          text=True, check=False)
    assert done.returncode != 0 and "topic-branch is empty" in done.stderr
    assert not requests_of(bare)


# --- merged on the forge, told by content ----------------------------------------------


def forge_merge(work: Path, how: str, sq: str) -> str:
    """Merge ``sq`` into the remote's main as a forge would (``merge``,
    ``squash`` or ``rebase``), after someone else's commit moved main."""
    git(work, "fetch", "-q", "origin", "main")
    git(work, "checkout", "-q", "-B", "forge-side", "origin/main")
    (work / "unrelated.txt").write_text("meanwhile\n")
    git(work, "add", "unrelated.txt")
    git(work, "commit", "-q", "-m", "meanwhile on main")
    message = git(work, "log", "-1", "--format=%B", sq)
    if how == "merge":
        git(work, "merge", "-q", "--no-ff", "-m", "Merge request !1", sq)
    elif how == "squash":  # the forge's own message: the request's title, the commit's trailers kept
        git(work, "merge", "-q", "--squash", sq)
        git(work, "commit", "-q", "-m", "Add a greeting (#1)\n\n" + message.split("\n\n", 1)[1])
    else:  # rebase: the same change and message, a new commit
        git(work, "cherry-pick", sq)
    git(work, "push", "-q", "origin", "HEAD:main")
    return git(work, "rev-parse", "HEAD")


@pytest.mark.parametrize("how", ["merge", "squash", "rebase"])
def test_a_request_merged_on_the_forge_is_recognised_by_content(tmp_path: Path, how: str) -> None:
    work, _, forge = gitlab_world(tmp_path)
    base = to_oid(git(work, "rev-parse", "main"))
    got = propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B")
    before = proposal_state(open_repo(work), forge, "origin", got, "1.2", since=base)
    assert (before.state, before.by) == (State.UNKNOWN, "content")
    merged_tip = forge_merge(work, how, got.head)
    after = proposal_state(open_repo(work), forge, "origin", got, "1.2", since=base)
    assert (after.state, after.by) == (State.MERGED, "content")
    assert after.merge_commit == (got.head if how == "merge" else merged_tip)


def test_another_tasks_squash_is_not_taken_for_this_one(tmp_path: Path) -> None:
    work, _, forge = gitea_world(tmp_path)
    base = to_oid(git(work, "rev-parse", "main"))
    got = propose(open_repo(work), forge, "origin", "main", "1.2", to_oid(one_squash(work)), "T", "B")
    other = squash(work, base, {"other.txt": "x\n"}, task="1.3")  # another task's trailer, another change
    git(work, "push", "-q", "origin", f"{other}:refs/heads/main")
    assert proposal_state(open_repo(work), forge, "origin", got, "1.2", since=base).state is State.UNKNOWN


def test_an_unknown_forge_is_one_line_of_bad_input(tmp_path: Path) -> None:
    work, _, _ = gitlab_world(tmp_path)
    with pytest.raises(BadInput, match="unknown forge 'bitbucket': github, gitlab or gitea"):
        forge_for(open_repo(work), "origin", "bitbucket", env=NO_TOKENS)
    with pytest.raises(BadInput, match="cannot tell which forge remote origin is"):
        forge_for(open_repo(work), "origin", env=NO_TOKENS)


def test_a_merged_requests_branch_is_deleted_only_from_the_squash_git_harn_pushed(tmp_path: Path) -> None:
    work, bare, forge = gitlab_world(tmp_path)
    first = to_oid(one_squash(work))
    propose(open_repo(work), forge, "origin", "main", "1.2", first, "T", "B")
    foreign = squash(work, first, {"reviewer.txt": "a fix\n"})
    git(work, "push", "-q", "origin", f"+{foreign}:{LANDING}")
    assert not delete_branch(open_repo(work), "origin", "harnery/land/1.2", first)
    assert branch_at(bare, LANDING) == foreign  # someone else's commit is kept
    git(work, "push", "-q", "origin", f"+{first}:{LANDING}")
    assert delete_branch(open_repo(work), "origin", "harnery/land/1.2", first)
    assert branch_at(bare, LANDING) is None
    assert delete_branch(open_repo(work), "origin", "harnery/land/1.2", first)  # gone already: done
