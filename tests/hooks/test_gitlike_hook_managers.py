"""Issue 11, item 5: git-harn's hooks beside the hook managers people already
use (pre-commit, git-lfs, husky), each with its real file layout, and chaining
that keeps a hook's own name."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.kit.harn import git, harn, make_repo, record, ref
from tests.kit.hook_repo import git_run, leave_a_vanished_worktree
from tests.kit.user_tools import (
    calls,
    files_with_our_marker,
    git_harn_logger,
    husky_prepare,
    husky_user_hook,
    pre_commit_config,
    pre_commit_exe,
    start,
    ws_path,
)

needs_pre_commit = pytest.mark.skipif(pre_commit_exe() is None,
                                      reason="pre-commit is not installed (pip install pre-commit)")
needs_git_lfs = pytest.mark.skipif(shutil.which("git-lfs") is None,
                                   reason="git-lfs is not installed (apt-get install git-lfs)")


def tool(cwd: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=120, check=False)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# --- pre-commit: migration mode moves an existing hook to <name>.legacy ---------------


@pytest.fixture
def pc_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository using pre-commit: its one hook, at post-checkout, leaves a line in the marker."""
    marker = tmp_path / "pre-commit-ran"
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n", ".pre-commit-config.yaml": pre_commit_config(marker)})
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    return repo, marker


def pre_commit(repo: Path, *args: str) -> None:
    exe = pre_commit_exe()
    assert exe is not None
    done = tool(repo, exe, *args, "-t", "post-checkout")
    assert done.returncode == 0, done.stdout + done.stderr


def harn_ok(repo: Path, *args: str) -> str:
    result = harn(repo, *args)
    assert result.code == 0, result.out + result.err
    return result.out


@needs_pre_commit
def test_hooks_status_recognises_git_harn_under_pre_commit(pc_repo: tuple[Path, Path]) -> None:
    repo, _ = pc_repo
    harn_ok(repo, "hooks", "install")
    pre_commit(repo, "install")
    hooks = repo / ".git" / "hooks"
    assert files_with_our_marker(hooks) == ["post-checkout.legacy", "pre-auto-gc", "reference-transaction"]
    entry = {h["name"]: h for h in harn(repo, "hooks", "status", "--json").json()["hooks"]}["post-checkout"]
    assert entry["state"] not in ("foreign", "missing"), entry
    assert "post-checkout.legacy" in str(entry), entry
    human = next(line for line in harn_ok(repo, "hooks", "status").splitlines() if line.startswith("post-checkout"))
    assert "pre-commit" in human and "foreign" not in human, human


@needs_pre_commit
def test_hooks_uninstall_removes_git_harn_from_a_pre_commit_chain(pc_repo: tuple[Path, Path],
                                                                 tmp_path: Path) -> None:
    repo, marker = pc_repo
    harn_ok(repo, "hooks", "install")
    pre_commit(repo, "install")
    harn_ok(repo, "hooks", "uninstall")
    hooks = repo / ".git" / "hooks"
    log = tmp_path / "git-harn.log"
    done = git_run(repo, "worktree", "add", "-q", str(tmp_path / "other"),
                   env=git_harn_logger(tmp_path / "fake", log))
    assert done.returncode == 0, done.stderr
    assert lines(marker) == ["pre-commit-ran"]  # pre-commit itself still runs
    assert calls(log) == [], "git-harn still runs after hooks uninstall"
    assert files_with_our_marker(hooks) == []


@needs_pre_commit
def test_reinstall_under_pre_commit_never_runs_git_harn_twice(pc_repo: tuple[Path, Path], tmp_path: Path) -> None:
    repo, marker = pc_repo
    harn_ok(repo, "hooks", "install")
    pre_commit(repo, "install")
    harn_ok(repo, "hooks", "install")
    leave_a_vanished_worktree(repo, tmp_path / "vanished")  # something for git-harn to settle
    marker.unlink()
    log = tmp_path / "git-harn.log"
    done = git_run(repo, "worktree", "add", "-q", str(tmp_path / "other"),
                   env=git_harn_logger(tmp_path / "fake", log))
    assert done.returncode == 0, done.stderr
    assert lines(marker) == ["pre-commit-ran"]
    assert len(calls(log)) == 1, calls(log)
    assert calls(log)[0].startswith("git-harn hooks run post-checkout ")


@needs_pre_commit
def test_pre_commit_uninstall_after_git_harn_leaves_no_pre_commit_running(pc_repo: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:
    repo, marker = pc_repo
    pre_commit(repo, "install")
    harn_ok(repo, "hooks", "install")
    pre_commit(repo, "uninstall")
    leave_a_vanished_worktree(repo, tmp_path / "vanished")
    log = tmp_path / "git-harn.log"
    done = git_run(repo, "worktree", "add", "-q", str(tmp_path / "other"),
                   env=git_harn_logger(tmp_path / "fake", log))
    assert done.returncode == 0, done.stderr
    assert lines(marker) == [], "pre-commit still runs after pre-commit uninstall"
    assert len(calls(log)) == 1, calls(log)  # git-harn's own hook stays


# --- git-lfs: accepts only its own hook text at <hooks>/<name> -----------------------


@needs_git_lfs
def test_git_lfs_install_after_git_harn(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    harn_ok(repo, "hooks", "install")
    # git-lfs refuses any post-checkout it did not write (its own rule, exit 2);
    # the documented way in this order: --force, then reinstall, which chains lfs's.
    refused = tool(repo, "git", "lfs", "install", "--local")
    assert refused.returncode == 2 and "post-checkout" in refused.stderr, refused.stderr
    status = harn(repo, "hooks", "status")
    assert "git lfs install --force" in status.out, status.out
    done = tool(repo, "git", "lfs", "install", "--local", "--force")
    assert done.returncode == 0, done.stdout + done.stderr
    harn_ok(repo, "hooks", "install")
    hooks = repo / ".git" / "hooks"
    for name in ("pre-push", "post-commit", "post-merge"):
        assert "git lfs " + name in (hooks / name).read_text()
    # Both run on `git worktree add`, each once (git-harn's only when it has
    # something to do: a vanished worktree to settle).
    leave_a_vanished_worktree(repo, tmp_path / "vanished")
    log = tmp_path / "calls.log"
    env = git_harn_logger(tmp_path / "fake", log)
    (tmp_path / "fake" / "git-lfs").write_text(f'#!/bin/sh\necho "git-lfs $1" >> "{log}"\n')
    (tmp_path / "fake" / "git-lfs").chmod(0o755)
    added = git_run(repo, "worktree", "add", "-q", str(tmp_path / "other"), env=env)
    assert added.returncode == 0, added.stderr
    assert sorted(line.split()[0] for line in calls(log)) == ["git-harn", "git-lfs"], calls(log)
    entry = {h["name"]: h for h in harn(repo, "hooks", "status", "--json").json()["hooks"]}["post-checkout"]
    assert entry["state"] == "chained" and entry["chained"], entry


@needs_git_lfs
def test_hooks_status_says_git_lfs_is_chained(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    done = tool(repo, "git", "lfs", "install", "--local")
    assert done.returncode == 0, done.stdout + done.stderr
    harn_ok(repo, "hooks", "install")
    row = next(line for line in harn_ok(repo, "hooks", "status").splitlines() if line.startswith("post-checkout"))
    assert "chained" in row and "git-lfs" in row, row


# --- hooks that find their job from $0 --------------------------------------------------


def test_a_chained_hook_that_dispatches_on_its_name_still_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    shared = tmp_path / "shared-hooks"
    (shared / "hooks.d").mkdir(parents=True)
    marker = tmp_path / "ran"
    (shared / "dispatch").write_text('#!/bin/sh\njob="$(dirname "$(readlink -f "$0")")/hooks.d/$(basename "$0")"\n'
                                     '[ -x "$job" ] || exit 0\nexec "$job" "$@"\n')
    (shared / "hooks.d" / "post-checkout").write_text(f'#!/bin/sh\necho "post-checkout $3" >> "{marker}"\n')
    for script in (shared / "dispatch", shared / "hooks.d" / "post-checkout"):
        script.chmod(0o755)
    (repo / ".git" / "hooks" / "post-checkout").symlink_to(shared / "dispatch")  # a shared, symlinked hook
    git(repo, "checkout", "-q", "-b", "before")
    assert lines(marker) == ["post-checkout 1"]

    harn_ok(repo, "hooks", "install")
    git(repo, "checkout", "-q", "-b", "after")
    assert lines(marker) == ["post-checkout 1", "post-checkout 1"], "the chained hook lost its name"
    harn_ok(repo, "hooks", "uninstall")
    assert os.readlink(repo / ".git" / "hooks" / "post-checkout") == str(shared / "dispatch")


# --- husky v9: core.hooksPath = .husky/_ (relative, generated, git-ignored) ------------


@pytest.fixture
def husky_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository set up as `npm install` leaves a husky 9 project, with a
    committed .husky/post-checkout that leaves a line in the marker."""
    marker = tmp_path / "husky-ran"
    repo = make_repo(tmp_path / "repo")
    husky_user_hook(repo, "post-checkout", f'echo "husky post-checkout $3 in $(pwd)" >> "{marker}"')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "husky hooks")
    husky_prepare(repo)
    assert git(repo, "status", "--porcelain") == ""  # .husky/_ ignores itself
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    git(repo, "checkout", "-q", "-b", "probe")
    assert lines(marker) == [f"husky post-checkout 1 in {repo}"]
    marker.unlink()
    return repo, marker


def test_husky_hooks_still_run_after_git_harn_chains_them(husky_repo: tuple[Path, Path]) -> None:
    repo, marker = husky_repo
    # --force: today the only way past the refusal of a relative core.hooksPath.
    harn_ok(repo, "hooks", "install", "--force")
    git(repo, "checkout", "-q", "-b", "after-install")
    assert lines(marker) == [f"husky post-checkout 1 in {repo}"], "husky's post-checkout no longer runs"


def test_a_husky_user_gets_the_guard_in_workspaces(husky_repo: tuple[Path, Path]) -> None:
    repo, marker = husky_repo
    harn_ok(repo, "hooks", "install")
    git(repo, "checkout", "-q", "main")
    assert lines(marker) == [f"husky post-checkout 1 in {repo}"]  # husky still works in the main checkout

    # A preserved_unmerged workspace whose worktree was removed by hand: its
    # branch holds the only copy of a commit.
    first = start(repo, "r1")
    (first / "work.txt").write_text("only copy\n")
    git(first, "add", "work.txt")
    git(first, "commit", "-q", "-m", "only copy")
    tip = git(first, "rev-parse", "HEAD")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3
    git(repo, "worktree", "remove", str(first))

    # From another workspace, the guard refuses to delete that branch [H1].
    second = start(repo, "r2")
    done = git_run(second, "branch", "-D", "harnery/ws/r1")
    assert done.returncode != 0 and "git harn reclaim" in done.stderr, done.stderr
    assert ref(repo, "refs/heads/harnery/ws/r1") == tip
    assert record(repo, "r1")["state"] == "preserved_unmerged"
    assert ws_path(repo, "r2") == second


# --- a global core.hooksPath ---------------------------------------------------------------


def test_a_global_hooks_path_is_written_with_a_warning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Test Operator\n\temail = operator@example.com\n"
                                     "[core]\n\thooksPath = ~/.githooks\n")
    env = {"HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig")}
    repo = make_repo(tmp_path / "repo")
    result = harn(repo, "hooks", "install", env=env)
    assert result.code == 0, result.err
    assert (home / ".githooks" / "reference-transaction").is_file()
    assert "warning" in result.err and "every repositor" in result.err, result.err
