"""hooks install / uninstall / status: etiquette toward hooks git-harn did not write [H1]-[H3]."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.kit.harn import assert_valid, git, harn, make_repo
from tests.kit.hook_repo import HOOKS, SHIPPED, git_run, remove_folder, state


def snapshot(folder: Path) -> dict[str, tuple[bytes, int, int, int]]:
    """Every file's bytes, mode, inode and mtime: 'nothing changed' means all equal."""
    out = {}
    for path in sorted(folder.iterdir()):
        info = path.lstat()
        content = path.read_bytes() if path.is_file() else b"(folder)"
        out[path.name] = (content, info.st_mode, info.st_ino, info.st_mtime_ns)
    return out


def hooks_status(repo: Path) -> dict[str, dict[str, object]]:
    result = harn(repo, "hooks", "status", "--json")
    assert result.code == 0, result.err
    document = result.json()
    assert_valid(document, "hooks-status")
    return {h["name"]: h for h in document["hooks"]}


def write_hook(path: Path, body: str, mode: int = 0o750) -> bytes:
    content = f"#!/bin/sh\n{body}\n".encode()
    path.write_bytes(content)
    path.chmod(mode)
    return content


def test_install_writes_the_shipped_scripts_and_status_says_ours(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert {h["state"] for h in hooks_status(repo).values()} == {"missing"}
    result = harn(repo, "hooks", "install")
    assert result.code == 0, result.err
    for name in HOOKS:
        installed = repo / ".git" / "hooks" / name
        assert installed.read_bytes() == (SHIPPED / name).read_bytes()
        assert installed.stat().st_mode & stat.S_IXUSR
    states = hooks_status(repo)
    assert {h["state"] for h in states.values()} == {"ours"}
    assert all(h["current"] and h["chained"] is None for h in states.values())


def test_foreign_hooks_are_chained_run_first_and_restored_byte_for_byte(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    log = tmp_path / "foreign.log"
    foreign_rt = write_hook(hooks_dir / "reference-transaction",
                            f'echo "rt $1" >> "{log}"\ncat >> "{log}"', mode=0o700)
    foreign_pc = write_hook(hooks_dir / "post-checkout", 'echo "foreign post-checkout ran" >&2')

    assert harn(repo, "hooks", "install").code == 0
    states = hooks_status(repo)
    assert states["reference-transaction"]["state"] == "chained"
    assert states["post-checkout"]["state"] == "chained"
    assert states["pre-auto-gc"]["state"] == "ours"

    # The chained reference-transaction hook still sees every update, with git's own input.
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    head = git(repo, "rev-parse", "HEAD")
    lines = log.read_text().splitlines()
    assert lines[0] == "rt prepared"
    assert lines[1].split()[1:] == [head, "HEAD"]
    assert lines[2].split()[1:] == [head, "refs/heads/main"]
    assert "rt committed" in lines

    # Both post-checkout hooks run, the foreign one first: a vanished workspace
    # is reconciled by ours after the foreign one spoke.
    assert harn(repo, "start", "gone").code == 0
    remove_folder(repo, "gone")
    done = git_run(repo, "worktree", "add", "-q", str(tmp_path / "other"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.index("foreign post-checkout ran") < done.stderr.index("run gone: workspace is now")

    before_second = snapshot(hooks_dir)
    again = harn(repo, "hooks", "install")
    assert again.code == 0 and again.out.count("unchanged") == 3
    assert snapshot(hooks_dir) == before_second

    assert harn(repo, "hooks", "uninstall").code == 0
    assert (hooks_dir / "reference-transaction").read_bytes() == foreign_rt
    assert stat.S_IMODE((hooks_dir / "reference-transaction").stat().st_mode) == 0o700
    assert (hooks_dir / "post-checkout").read_bytes() == foreign_pc
    assert stat.S_IMODE((hooks_dir / "post-checkout").stat().st_mode) == 0o750
    assert not (hooks_dir / "pre-auto-gc").exists()
    assert not [p.name for p in hooks_dir.iterdir() if ".harn-" in p.name]
    assert harn(repo, "hooks", "uninstall").code == 0  # twice is harmless


def test_a_chained_hook_keeps_its_veto(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write_hook(repo / ".git" / "hooks" / "reference-transaction",
               'if [ "$1" = prepared ] && grep -q refs/heads/blocked; then echo "foreign says no" >&2; exit 1; fi')
    assert harn(repo, "hooks", "install").code == 0
    done = git_run(repo, "branch", "blocked")
    assert done.returncode != 0 and "foreign says no" in done.stderr
    assert git_run(repo, "rev-parse", "-q", "--verify", "refs/heads/blocked").returncode != 0
    assert git_run(repo, "branch", "allowed").returncode == 0


def test_core_hooks_path_is_honoured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "core.hooksPath", ".githooks")
    (repo / "sub").mkdir()
    # A relative hooksPath is read from each worktree's top: install uses the
    # main worktree's, and says so (start copies it into workspaces).
    result = harn(repo / "sub", "hooks", "install")
    assert result.code == 0, result.err
    assert "relative" in result.err
    for name in HOOKS:
        assert (repo / ".githooks" / name).read_bytes() == (SHIPPED / name).read_bytes()
    assert not (repo / ".git" / "hooks" / "reference-transaction").exists()
    assert not (repo / "sub" / ".githooks").exists()
    assert Path(harn(repo, "hooks", "status", "--json").json()["hooksDir"]) == repo / ".githooks"

    shared = tmp_path / "shared-hooks"
    git(repo, "config", "core.hooksPath", str(shared))
    assert harn(repo, "hooks", "install").code == 0
    assert {p.name for p in shared.iterdir()} == set(HOOKS)
    # git fires them from there: a vanished workspace is reconciled on worktree add.
    assert harn(repo, "start", "r1").code == 0
    remove_folder(repo, "r1")
    git(repo, "worktree", "add", "-q", str(tmp_path / "w2"))
    assert state(repo, "r1") == "already_gone"


def test_install_from_a_linked_worktree_uses_the_shared_hooks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    assert harn(tmp_path / "linked", "hooks", "install").code == 0
    assert (repo / ".git" / "hooks" / "reference-transaction").is_file()


def test_manual_prints_the_scripts_and_changes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    before = snapshot(hooks_dir)
    result = harn(repo, "hooks", "install", "--manual")
    assert result.code == 0, result.err
    assert str(hooks_dir) in result.out
    assert "harn-chained/<name>" in result.out
    for name in HOOKS:
        assert (SHIPPED / name).read_text().rstrip("\n") in result.out
    assert snapshot(hooks_dir) == before


@pytest.mark.parametrize("chained_at", ["harn-chained/post-checkout", "post-checkout.harn-chained"])
def test_two_foreign_hooks_refuse_install_unless_forced_and_nothing_is_deleted(tmp_path: Path,
                                                                               chained_at: str) -> None:
    repo = make_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    assert harn(repo, "hooks", "install").code == 0
    (hooks_dir / "harn-chained").mkdir(exist_ok=True)
    old_chained = write_hook(hooks_dir / chained_at, "echo older")  # this layout, or the one before it
    newer = write_hook(hooks_dir / "post-checkout", "echo newer tool")  # replaced ours
    before = snapshot(hooks_dir)

    refused = harn(repo, "hooks", "install")
    assert refused.code == 3
    assert "nothing changed" in refused.err and "--force" in refused.err
    assert snapshot(hooks_dir) == before
    assert hooks_status(repo)["post-checkout"]["state"] == "foreign"

    forced = harn(repo, "hooks", "install", "--force")
    assert forced.code == 0, forced.err
    assert (hooks_dir / "harn-chained" / "post-checkout").read_bytes() == newer
    backup = hooks_dir / (chained_at + ".harn-backup")
    assert backup.read_bytes() == old_chained
    status = hooks_status(repo)["post-checkout"]
    assert status["state"] == "chained"
    assert status["backups"] == [str(backup)]


def test_an_install_of_the_old_layout_is_moved_to_the_subfolder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    foreign = write_hook(hooks_dir / "post-checkout", 'echo "foreign ran as $(basename "$0")" >&2')
    assert harn(repo, "hooks", "install").code == 0
    os.rename(hooks_dir / "harn-chained" / "post-checkout", hooks_dir / "post-checkout.harn-chained")
    assert hooks_status(repo)["post-checkout"]["current"] is False
    assert harn(repo, "hooks", "install").code == 0
    assert not (hooks_dir / "post-checkout.harn-chained").exists()
    assert (hooks_dir / "harn-chained" / "post-checkout").read_bytes() == foreign
    done = git_run(repo, "checkout", "-q", "-b", "other")
    assert "foreign ran as post-checkout" in done.stderr
    assert harn(repo, "hooks", "uninstall").code == 0
    assert (hooks_dir / "post-checkout").read_bytes() == foreign
    assert not (hooks_dir / "harn-chained").exists()


def test_a_folder_in_a_hooks_place_is_set_aside_only_with_force(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    (hooks_dir / "pre-auto-gc").mkdir()
    (hooks_dir / "pre-auto-gc" / "keep.txt").write_text("mine\n")
    before = snapshot(hooks_dir)
    refused = harn(repo, "hooks", "install")
    assert refused.code == 3 and "is a folder" in refused.err
    assert snapshot(hooks_dir) == before
    assert harn(repo, "hooks", "install", "--force").code == 0
    assert (hooks_dir / "pre-auto-gc.harn-backup" / "keep.txt").read_text() == "mine\n"
    assert hooks_status(repo)["pre-auto-gc"]["state"] == "ours"


def test_uninstall_leaves_a_foreign_hook_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    foreign = write_hook(hooks_dir / "pre-auto-gc", "exit 0")
    result = harn(repo, "hooks", "uninstall")
    assert result.code == 0
    assert (hooks_dir / "pre-auto-gc").read_bytes() == foreign
    assert any(line.split()[:3] == ["pre-auto-gc", "left", "alone"] for line in result.out.splitlines())


def test_an_outdated_script_of_ours_is_updated(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    assert harn(repo, "hooks", "install").code == 0
    old = (hooks_dir / "pre-auto-gc").read_bytes() + b"# an older version\n"
    (hooks_dir / "pre-auto-gc").write_bytes(old)
    assert hooks_status(repo)["pre-auto-gc"]["current"] is False
    result = harn(repo, "hooks", "install")
    assert "updated" in result.out
    assert (hooks_dir / "pre-auto-gc").read_bytes() == (SHIPPED / "pre-auto-gc").read_bytes()
    assert not (hooks_dir / "pre-auto-gc.harn-chained").exists()
