"""The worktree list read from git's admin files gives what
``git worktree list --porcelain -z`` gives: the same paths in the same order,
the same branch for each, the same main worktree (or none, when bare).

Each case builds real repositories with real git and opens the repository
from each of the places git-harn may be started in. git is asked from the
common git dir, where git-harn ran it before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from git_harn.git.repo import open_repo
from git_harn.git.worktrees import Listed, linked_problem, listed_worktrees, main_worktree, registered_worktrees
from tests.kit.harn import git, make_repo


def as_git_lists(common_dir: Path) -> list[Listed]:
    """``git worktree list --porcelain -z``, parsed: one entry per record."""
    done = subprocess.run(["git", "worktree", "list", "--porcelain", "-z"], cwd=common_dir,
                          capture_output=True, check=True)
    out = []
    for record in done.stdout.decode("utf-8", "surrogateescape").split("\0\0"):
        fields = [f for f in record.split("\0") if f]
        if not fields:
            continue
        assert fields[0].startswith("worktree "), fields
        branch = next((f[len("branch "):] for f in fields if f.startswith("branch ")), None)
        out.append(Listed(Path(fields[0][len("worktree "):]), branch, "bare" in fields))
    return out


def assert_as_git(start: Path) -> list[Listed]:
    repo = open_repo(start)
    expected = as_git_lists(repo.common_dir)
    listed = listed_worktrees(repo)
    assert [e.path for e in listed] == [e.path for e in expected]
    assert [e.branch for e in listed] == [e.branch for e in expected]
    assert [e.bare for e in listed] == [e.bare for e in expected]
    # What git-harn's callers see, built on the same list.
    assert registered_worktrees(repo) == {e.path: e.branch for e in expected}
    main = None if expected[0].bare else expected[0].path
    assert main_worktree(repo) == (main, [e.path for e in expected[1:]])
    return listed


def test_main_and_linked_worktrees_detached_and_deleted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "feature"))
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "detached"))
    git(repo, "worktree", "add", "-q", "-b", "gone", str(tmp_path / "gone"))
    git(repo, "worktree", "add", "-q", "-b", "kept", str(tmp_path / "kept"))
    git(repo, "worktree", "lock", "--reason", "on a stick", str(tmp_path / "kept"))
    shutil.rmtree(tmp_path / "gone")  # prunable: git still lists it, with its branch
    assert "prunable" in git(repo, "worktree", "list", "--porcelain")
    (tmp_path / "link").symlink_to(repo)
    for start in (repo, repo / "src", repo / ".git", tmp_path / "feature", tmp_path / "detached",
                  tmp_path / "link"):
        listed = assert_as_git(start)
    branches = {e.path.name: e.branch for e in listed}
    assert branches == {"repo": "refs/heads/main", "feature": "refs/heads/feature", "detached": None,
                        "gone": "refs/heads/gone", "kept": "refs/heads/kept"}


def test_an_unborn_branch_and_a_branch_switched_in_a_worktree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "nothing-yet")
    assert assert_as_git(repo)[0].branch == "refs/heads/nothing-yet"
    other = make_repo(tmp_path / "other")
    git(other, "worktree", "add", "-q", "-b", "first", str(tmp_path / "wt"))
    git(tmp_path / "wt", "switch", "-q", "-c", "second")
    assert assert_as_git(tmp_path / "wt")[1].branch == "refs/heads/second"


def test_an_entry_with_an_empty_or_missing_gitdir_file_is_left_out_as_git_does(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for name in ("empty", "missing", "fine"):
        git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / name))
    (repo / ".git" / "worktrees" / "empty" / "gitdir").write_text("")
    (repo / ".git" / "worktrees" / "missing" / "gitdir").unlink()
    listed = assert_as_git(repo)
    assert [e.path.name for e in listed] == ["repo", "fine"]


def test_a_relative_gitdir(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "-c", "worktree.useRelativePaths=true", "worktree", "add", "-q", "-b", "rel",
        str(tmp_path / "nested" / "rel"))
    gitdir = (repo / ".git" / "worktrees" / "rel" / "gitdir").read_text().strip()
    if os.path.isabs(gitdir):
        pytest.skip("this git writes no relative paths (worktree.useRelativePaths is git 2.48)")
    for start in (repo, tmp_path / "nested" / "rel"):
        listed = assert_as_git(start)
    assert listed[1] == Listed((tmp_path / "nested" / "rel").resolve(), "refs/heads/rel", False)


def test_a_bare_repository_with_a_linked_worktree(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "source")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(bare))
    git(bare, "worktree", "add", "-q", str(tmp_path / "linked"), "main")
    git(bare, "worktree", "add", "-q", "--detach", str(tmp_path / "loose"), "main")
    for start in (bare, tmp_path / "linked", tmp_path / "loose"):
        listed = assert_as_git(start)
    assert listed[0] == Listed(bare.resolve(), None, True)
    assert listed[1].branch == "refs/heads/main"


def test_a_bare_repository_in_a_dot_git_folder_beside_its_worktrees(tmp_path: Path) -> None:
    """The layout some use for bare repositories: ``project/.bare`` and a ``.git`` file naming it."""
    source = make_repo(tmp_path / "source")
    project = tmp_path / "project"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(project / ".bare"))
    (project / ".git").write_text("gitdir: ./.bare\n")
    git(project, "worktree", "add", "-q", str(project / "main"), "main")
    for start in (project, project / "main"):
        listed = assert_as_git(start)
    assert listed[0].bare


def test_a_repository_made_with_separate_git_dir(tmp_path: Path) -> None:
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "-b", "main", "--separate-git-dir", str(tmp_path / "store.git"), str(work))
    (work / "a.txt").write_text("a\n")
    git(work, "add", "a.txt")
    git(work, "commit", "-q", "-m", "a")
    git(work, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    for start in (work, tmp_path / "side", tmp_path / "store.git"):
        listed = assert_as_git(start)
    # git names the git dir itself as the main worktree here: so does the reader.
    assert listed[0].path == (tmp_path / "store.git").resolve()


def test_a_reftable_repository_is_listed_by_git(tmp_path: Path) -> None:
    """With the reftable backend HEAD files hold no branch: git is asked."""
    repo = tmp_path / "repo"
    made = subprocess.run(["git", "init", "-q", "-b", "main", "--ref-format=reftable", str(repo)],
                          capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip("this git has no reftable backend")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "a")
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    try:
        open_repo(repo)
    except Exception as exc:  # noqa: BLE001 - libgit2 may not open such a repository at all
        pytest.skip(f"pygit2 cannot open a reftable repository: {exc}")
    listed = assert_as_git(repo)
    assert [e.branch for e in listed] == ["refs/heads/main", "refs/heads/side"]


def test_a_head_that_is_a_symlink_names_its_branch_as_git_reads_it(tmp_path: Path) -> None:
    """core.preferSymlinkRefs: git writes HEAD as a symlink to the ref."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", "-b", "linked", str(tmp_path / "wt"))
    git(tmp_path / "wt", "-c", "core.preferSymlinkRefs=true", "switch", "-q", "-c", "by-link")
    admin = repo / ".git" / "worktrees" / "wt"
    if not (admin / "HEAD").is_symlink():
        pytest.skip("this git writes no symlink HEAD")
    listed = assert_as_git(repo)
    assert listed[1].branch == "refs/heads/by-link"


def test_the_common_dir_read_from_an_admin_folder_is_the_one_git_finds(tmp_path: Path) -> None:
    """``linked_problem`` answers as git run in the worktree finds its
    common dir (``commondir`` relative or absolute, another repository's, a
    folder git sees no repository in): whoever reads it, the two agree."""
    repo = make_repo(tmp_path / "repo")
    other = make_repo(tmp_path / "other")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "--detach", str(wt))
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    handle = open_repo(repo)

    def git_sees() -> str:
        done = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=wt,
                              capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    assert (admin / "commondir").read_text().strip() == "../.."  # git writes it relative
    assert linked_problem(handle, wt) is None and os.path.samefile(git_sees(), repo / ".git")
    (admin / "commondir").write_text(f"{repo / '.git'}\n")  # absolute: the same repository
    assert linked_problem(handle, wt) is None and os.path.samefile(git_sees(), repo / ".git")
    (admin / "commondir").write_text(f"{other / '.git'}\n")
    assert os.path.samefile(git_sees(), other / ".git")
    assert "not this repository" in (linked_problem(handle, wt) or "")
    (admin / "commondir").write_text("../..\n")
    (admin / "HEAD").unlink()
    assert git_sees() == ""
    assert "no repository" in (linked_problem(handle, wt) or "")
