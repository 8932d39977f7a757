"""Hooks fired by real git commands: the H1 guard, reconciliation, and cost [H1] [H2] [H3]."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from git_harn import notices
from git_harn.git import open_repo
from git_harn.hooks.actions import run_hook
from git_harn.store import live as live_module
from git_harn.store import runs as runs_module
from git_harn.store.locks import hold_run
from tests.kit.harn import git, harn, make_repo, record, ref
from tests.kit.hook_repo import commit_in, git_run, install_hooks, leave_a_vanished_worktree, remove_folder, state


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo")
    install_hooks(path)
    return path


def ws_path(repo: Path, run_id: str) -> Path:
    return Path(record(repo, run_id)["path"])


def path_without_git_harn() -> str:
    keep = [d for d in os.environ["PATH"].split(os.pathsep)
            if d and not os.access(os.path.join(d, "git-harn"), os.X_OK)]
    return os.pathsep.join(keep)


def fake_git_harn(folder: Path, body: str) -> dict[str, str]:
    """An environment whose `git-harn` is a script of ours, shadowing the real one."""
    folder.mkdir()
    script = folder / "git-harn"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def preserved_unmerged_by_hand(repo: Path, run_id: str) -> str:
    """A workspace with one commit nowhere else, preserved by cleanup, whose
    worktree the operator then removed by hand. Returns the unique tip."""
    assert harn(repo, "start", run_id).code == 0
    tip = commit_in(ws_path(repo, run_id), "work.txt", "only copy\n")
    assert harn(repo, "cleanup", run_id, "--yes").code == 3
    assert state(repo, run_id) == "preserved_unmerged"
    git(repo, "worktree", "remove", str(ws_path(repo, run_id)))
    return tip


# --- H1: reference-transaction ----------------------------------------------------


def test_hand_removal_of_a_clean_merged_workspace_settles_its_record(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    git(repo, "worktree", "remove", str(ws_path(repo, "r1")))
    assert state(repo, "r1") == "active"  # no hook fires on worktree removal
    done = git_run(repo, "branch", "-D", "harnery/ws/r1")
    assert done.returncode == 0, done.stderr
    assert ref(repo, "refs/heads/harnery/ws/r1") is None
    rec = record(repo, "r1")
    assert rec["state"] == "already_gone"
    assert rec["lastOutcome"] == "already_gone"
    assert "run r1: workspace is now already_gone" in done.stderr
    log = harn(repo, "log", "r1", "--json").json()
    assert log["events"][0]["state"] == "already_gone"


def test_hand_deletion_after_an_interrupted_release_finishes_it_as_released(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    killed = harn(repo, "cleanup", "r1", "--yes", env={"HARN_FAILPOINT": "cleanup-after-remove"})
    assert killed.code != 0
    assert not ws_path(repo, "r1").exists()
    assert record(repo, "r1")["releasing"] is not None
    done = git_run(repo, "branch", "-D", "harnery/ws/r1")
    assert done.returncode == 0, done.stderr
    rec = record(repo, "r1")
    assert rec["state"] == "released"
    assert rec["releasing"] is None


def test_a_busy_run_is_left_to_the_process_holding_it(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    git(repo, "worktree", "remove", str(ws_path(repo, "r1")))
    with hold_run(open_repo(repo), "r1", "a test holds it"):
        done = git_run(repo, "branch", "-D", "harnery/ws/r1")
        assert done.returncode == 0, done.stderr
        assert "warning" not in done.stderr
        assert state(repo, "r1") == "active"
    assert harn(repo, "status").code == 0  # any command reconciles on its own
    assert state(repo, "r1") == "already_gone"


def test_deleting_the_only_copy_of_work_is_refused_then_allowed_on_request(repo: Path) -> None:
    tip = preserved_unmerged_by_hand(repo, "r1")
    refused = git_run(repo, "branch", "-D", "harnery/ws/r1")
    assert refused.returncode != 0
    assert "git harn reclaim r1" in refused.stderr
    assert "HARN_ALLOW_DELETE=1" in refused.stderr
    assert ref(repo, "refs/heads/harnery/ws/r1") == tip
    assert git(repo, "show", f"{tip}:work.txt") == "only copy"
    assert state(repo, "r1") == "preserved_unmerged"

    allowed = git_run(repo, "branch", "-D", "harnery/ws/r1", env={"HARN_ALLOW_DELETE": "1"})
    assert allowed.returncode == 0, allowed.stderr
    assert tip in allowed.stderr  # the operator is told where the work was
    assert ref(repo, "refs/heads/harnery/ws/r1") is None
    assert state(repo, "r1") == "already_gone"


def test_a_preserved_workspace_branch_is_guarded_even_when_merged(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    path = ws_path(repo, "r1")
    (path / "scratch.txt").write_text("dirty\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3
    assert state(repo, "r1") == "preserved_dirty"
    git(repo, "worktree", "remove", "--force", str(path))
    tip = ref(repo, "refs/heads/harnery/ws/r1")
    assert tip is not None
    # With the old value given, as a careful script would (not pack-refs pruning).
    refused = git_run(repo, "update-ref", "-d", "refs/heads/harnery/ws/r1", tip)
    assert refused.returncode != 0
    assert "its workspace is preserved_dirty" in refused.stderr
    assert "git harn reclaim r1" in refused.stderr
    assert ref(repo, "refs/heads/harnery/ws/r1") == tip


def test_packing_refs_is_no_deletion_and_a_packed_branch_stays_guarded(repo: Path, tmp_path: Path) -> None:
    tip = preserved_unmerged_by_hand(repo, "r1")
    called = tmp_path / "called"
    spy = fake_git_harn(tmp_path / "bin", f'echo "$@" >> "{called}"')
    packed = git_run(repo, "pack-refs", "--all", env=spy)  # prunes loose refs: looks like a delete
    assert packed.returncode == 0, packed.stderr
    assert not called.exists()  # the shell filter saw the ref lives on in packed-refs
    assert f"{tip} refs/heads/harnery/ws/r1" in (repo / ".git" / "packed-refs").read_text()
    assert git_run(repo, "gc", "-q").returncode == 0
    refused = git_run(repo, "branch", "-D", "harnery/ws/r1")
    assert refused.returncode != 0
    assert "git harn reclaim r1" in refused.stderr
    assert ref(repo, "refs/heads/harnery/ws/r1") == tip
    assert state(repo, "r1") == "preserved_unmerged"
    # Records are packed too now; settling one while git holds packed-refs.lock still works.
    assert "refs/harnery/runs/r1" in (repo / ".git" / "packed-refs").read_text()
    allowed = git_run(repo, "branch", "-D", "harnery/ws/r1", env={"HARN_ALLOW_DELETE": "1"})
    assert allowed.returncode == 0, allowed.stderr
    assert "warning:" in allowed.stderr and "ignored" not in allowed.stderr
    assert state(repo, "r1") == "already_gone"
    # Its live index entry could not go while git held packed-refs.lock: left
    # stale (the record says the run ended), never listed, dropped once read.
    assert ref(repo, "refs/harnery/live/r1") is not None
    listed = harn(repo, "status", "--json")
    assert listed.code == 0 and listed.json()["workspaces"] == [], listed.out
    assert ref(repo, "refs/harnery/live/r1") is None


def test_renaming_a_workspace_branch_is_guarded_like_a_deletion(repo: Path) -> None:
    tip = preserved_unmerged_by_hand(repo, "r1")
    refused = git_run(repo, "branch", "-m", "harnery/ws/r1", "elsewhere")
    assert refused.returncode != 0 and "git harn reclaim r1" in refused.stderr
    assert ref(repo, "refs/heads/harnery/ws/r1") == tip
    assert ref(repo, "refs/heads/elsewhere") is None


def test_git_harn_own_deletes_stand_aside(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    result = harn(repo, "cleanup", "r1", "--yes")
    assert result.code == 0, result.err
    assert state(repo, "r1") == "released"
    assert ref(repo, "refs/heads/harnery/ws/r1") is None


def test_other_branches_are_not_guarded(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    commit_in(repo, "f.txt", "feature work\n")
    git(repo, "checkout", "-q", "main")
    done = git_run(repo, "branch", "-D", "feature")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


# --- H2: post-checkout and pre-auto-gc -------------------------------------------------


def test_worktree_add_reconciles_vanished_workspaces(repo: Path, tmp_path: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    remove_folder(repo, "r1")
    git(repo, "checkout", "-q", "-b", "elsewhere")  # an ordinary checkout does nothing
    assert state(repo, "r1") == "active"
    done = git_run(repo, "worktree", "add", "-q", str(tmp_path / "extra"), "main")
    assert done.returncode == 0, done.stderr
    assert state(repo, "r1") == "already_gone"


def test_worktree_add_with_no_folder_gone_starts_no_git_harn(repo: Path, tmp_path: Path) -> None:
    """[H3]: the shell filter reads the worktree registrations itself; only a
    registered folder that is gone (and not locked: away) starts git-harn."""
    called = tmp_path / "called"
    env = fake_git_harn(tmp_path / "bin", f'echo "$@" >> "{called}"')
    assert harn(repo, "start", "r1").code == 0  # a live workspace, on disk
    assert git_run(repo, "worktree", "add", "-q", str(tmp_path / "w1"), env=env).returncode == 0
    away = tmp_path / "away"
    git(repo, "worktree", "add", "-q", "--detach", str(away))
    git(repo, "worktree", "lock", "--reason", "on a disk unplugged", str(away))
    away.rename(tmp_path / "unplugged")
    assert git_run(repo, "worktree", "add", "-q", str(tmp_path / "w2"), env=env).returncode == 0
    assert not called.exists()

    remove_folder(repo, "r1")
    assert git_run(repo, "worktree", "add", "-q", str(tmp_path / "w3"), env=env).returncode == 0
    assert called.read_text().splitlines() == [f"hooks run post-checkout {'0' * 40} "
                                               f"{git(repo, 'rev-parse', 'HEAD')} 1"]
    # Told the repository by --git-dir, the filter asks git where it is.
    done = git_run(repo, f"--git-dir={repo / '.git'}", "worktree", "add", "-q", str(tmp_path / "w4"), env=env)
    assert done.returncode == 0, done.stderr
    assert len(called.read_text().splitlines()) == 2


def test_auto_gc_reconciles_vanished_workspaces_first(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    remove_folder(repo, "r1")
    make_two_packs(repo)
    done = git_run(repo, "-c", "gc.autoPackLimit=1", "-c", "gc.autoDetach=false", "gc", "--auto")
    assert done.returncode == 0, done.stderr
    assert state(repo, "r1") == "already_gone"


def make_two_packs(repo: Path) -> None:
    """Enough packs that gc.autoPackLimit=1 makes `gc --auto` run (and fire pre-auto-gc)."""
    git(repo, "repack", "-q")
    commit_in(repo, "more.txt", "more\n")
    git(repo, "repack", "-q")


# --- H3: cost and failure ----------------------------------------------------------


def corrupt_record(repo: Path, run_id: str) -> None:
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input="not json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=repo, input=f"100644 blob {blob}\trun.json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    commit = git(repo, "commit-tree", tree, "-m", "broken")
    git(repo, "update-ref", f"refs/harnery/runs/{run_id}", commit)


def test_corrupt_record_never_breaks_an_unrelated_commit(repo: Path, tmp_path: Path) -> None:
    corrupt_record(repo, "bad")
    plain = git_run(repo, "commit", "--allow-empty", "-m", "plain")
    assert plain.returncode == 0 and plain.stderr == ""  # no Python started at all

    make_two_packs(repo)
    head = git(repo, "rev-parse", "HEAD")
    with_gc = git_run(repo, "-c", "gc.autoPackLimit=1", "-c", "gc.autoDetach=false",
                      "commit", "--allow-empty", "-m", "gc runs")
    assert with_gc.returncode == 0, with_gc.stderr
    assert "git harn: warning: corrupt run record refs/harnery/runs/bad" in with_gc.stderr
    assert git(repo, "rev-parse", "HEAD~1") == head

    leave_a_vanished_worktree(repo, tmp_path / "vanished")  # something to settle: git-harn starts
    added = git_run(repo, "worktree", "add", "-q", str(tmp_path / "extra"))
    assert added.returncode == 0
    assert "corrupt run record refs/harnery/runs/bad" in added.stderr


def test_a_corrupt_record_does_not_block_deleting_a_merged_branch(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    git(repo, "worktree", "remove", str(ws_path(repo, "r1")))
    corrupt_record(repo, "r1")
    done = git_run(repo, "branch", "-D", "harnery/ws/r1")
    assert done.returncode == 0, done.stderr
    assert "warning: corrupt run record refs/harnery/runs/r1" in done.stderr
    assert ref(repo, "refs/heads/harnery/ws/r1") is None


def test_git_harn_missing_from_path_warns_and_lets_git_finish(repo: Path, tmp_path: Path) -> None:
    preserved_unmerged_by_hand(repo, "r1")
    env = {"PATH": path_without_git_harn()}
    done = git_run(repo, "branch", "-D", "harnery/ws/r1", env=env)
    assert done.returncode == 0
    assert "git harn: warning: git-harn is not on PATH" in done.stderr
    leave_a_vanished_worktree(repo, tmp_path / "vanished")
    added = git_run(repo, "worktree", "add", "-q", str(tmp_path / "extra"), env=env)
    assert added.returncode == 0
    assert "git-harn is not on PATH; its post-checkout hook did nothing" in added.stderr


def test_a_crashing_python_part_warns_and_exits_zero(repo: Path, tmp_path: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    git(repo, "worktree", "remove", str(ws_path(repo, "r1")))
    env = fake_git_harn(tmp_path / "bin", 'echo "Traceback (most recent call last):" >&2\nexit 1')
    done = git_run(repo, "branch", "-D", "harnery/ws/r1", env=env)
    assert done.returncode == 0
    assert "reference-transaction hook failed (exit 1); ignored" in done.stderr
    assert ref(repo, "refs/heads/harnery/ws/r1") is None


def test_a_plain_commit_never_starts_git_harn(repo: Path, tmp_path: Path) -> None:
    called = tmp_path / "called"
    env = fake_git_harn(tmp_path / "bin", f'echo "$@" >> "{called}"')
    git_run(repo, "branch", "side", env=env)
    for n in range(3):
        assert git_run(repo, "commit", "--allow-empty", "-m", f"c{n}", env=env).returncode == 0
    assert git_run(repo, "branch", "-D", "side", env=env).returncode == 0
    git_run(repo, "checkout", "-q", "-b", "other", env=env)
    assert not called.exists()
    git_run(repo, "update-ref", "refs/heads/harnery/ws/x", "HEAD", env=env)
    assert not called.exists()  # creating a workspace branch is nothing to guard
    git_run(repo, "update-ref", "-d", "refs/heads/harnery/ws/x", env=env)
    assert called.read_text().splitlines()[0] == "hooks run reference-transaction prepared"


def test_hooks_run_is_quiet_for_git_harn_internal_changes(repo: Path, tmp_path: Path) -> None:
    called = tmp_path / "called"
    env = fake_git_harn(tmp_path / "bin", f'echo "$@" >> "{called}"')
    git_run(repo, "update-ref", "refs/heads/harnery/ws/x", "HEAD", env=env)
    internal = dict(env, HARN_INTERNAL="1")
    assert git_run(repo, "update-ref", "-d", "refs/heads/harnery/ws/x", env=internal).returncode == 0
    assert git_run(repo, "worktree", "add", "-q", str(tmp_path / "w"), env=internal).returncode == 0
    assert not called.exists()


# --- the one record a branch names ------------------------------------------------------


def test_deleting_a_kept_branch_reads_only_its_runs_record(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The guard and the reconcile of a `harnery/ws/<id>` deletion read run
    <id>'s record and no other: with a year of ended runs, listing them all
    cost seconds per `git branch -D`."""
    for run_id in ("r1", "r2"):
        assert harn(repo, "start", run_id).code == 0
        assert harn(repo, "cleanup", run_id, "--yes").code == 0
    git(repo, "branch", "harnery/ws/r1", "main")  # kept by hand, its tip on main
    listed: list[str] = []

    def no_listing(_repo: object) -> list[object]:
        listed.append("list_records")
        return []

    monkeypatch.setattr(runs_module, "list_records", no_listing)
    monkeypatch.setattr(live_module, "list_records", no_listing)
    monkeypatch.chdir(repo)
    tip = git(repo, "rev-parse", "harnery/ws/r1")
    line = f"{tip} {'0' * 40} refs/heads/harnery/ws/r1\n"
    assert run_hook("reference-transaction", ["prepared"], line) == 0
    git(repo, "update-ref", "-d", "refs/heads/harnery/ws/r1", env={"HARN_INTERNAL": "1"})
    assert run_hook("reference-transaction", ["committed"], line) == 0
    # A kept branch with a commit of its own is refused, naming its run: its record was read.
    unique = git(repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "only here")
    git(repo, "branch", "harnery/ws/r2", unique)
    monkeypatch.setattr(notices, "_shown", notices.NOTICE)  # as the entry point configures it
    capsys.readouterr()
    assert run_hook("reference-transaction", ["prepared"],
                    f"{unique} {'0' * 40} refs/heads/harnery/ws/r2\n") == 3
    assert "git harn reclaim r2" in capsys.readouterr().err
    assert listed == []


def test_a_workspace_branch_belongs_to_the_run_it_is_named_after(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    git(repo, "branch", "harnery/ws/r1", "main")
    before = git(repo, "for-each-ref")
    refused = harn(repo, "start", "r2", "--branch", "harnery/ws/r1")
    assert refused.code == 2, refused.err
    assert refused.err == ("git harn: error: branch harnery/ws/r1 is the workspace branch of run r1, "
                           "no other; name another branch\n")
    assert git(repo, "for-each-ref") == before
    assert harn(repo, "start", "r1", "--branch", "harnery/ws/r1").code == 0  # its own run may


@pytest.mark.parametrize("others", [3, 200])
def test_a_big_transaction_reaches_the_chained_hook_and_the_guard_whole(repo: Path, tmp_path: Path,
                                                                       others: int) -> None:
    """The lines the script keeps (a few in a variable, many in a file) reach
    a chained hook exactly as git gave them, and git-harn's guard."""
    log = tmp_path / "chained.log"
    chained = repo / ".git" / "hooks" / "harn-chained" / "reference-transaction"
    chained.parent.mkdir(exist_ok=True)
    chained.write_text(f'#!/bin/sh\n[ "$1" = prepared ] && cat >> "{log}"\nexit 0\n')
    chained.chmod(0o755)
    tip = preserved_unmerged_by_hand(repo, "r1")
    head = git(repo, "rev-parse", "main")
    made = "".join(f"create refs/heads/side/b{i:03d} {head}\n" for i in range(others))
    git_run(repo, "update-ref", "--stdin", env={"HARN_INTERNAL": "1"}, stdin=made)
    log.unlink(missing_ok=True)
    deletes = "".join(f"delete refs/heads/side/b{i:03d}\n" for i in range(others))
    done = git_run(repo, "update-ref", "--stdin", stdin=deletes + "delete refs/heads/harnery/ws/r1\n")
    assert done.returncode != 0 and "git harn reclaim r1" in done.stderr  # refused: nothing deleted
    assert ref(repo, "refs/heads/harnery/ws/r1") == tip and ref(repo, "refs/heads/side/b000") == head
    seen = log.read_text().splitlines()
    assert len(seen) == others + 1
    assert [line.split()[2] for line in seen] == [f"refs/heads/side/b{i:03d}" for i in range(others)] + [
        "refs/heads/harnery/ws/r1"]
    assert all(len(line.split()) == 3 for line in seen)


def test_deleting_a_kept_branch_of_an_ended_run_starts_no_git_harn(repo: Path, tmp_path: Path) -> None:
    """A `harnery/ws/<id>` branch whose run ended (no live index entry) and
    whose commits another work ref reaches goes with no Python started in
    any of the hook's four calls (issue 45 item 15: 190 ms each), and walks
    its history once; one with a commit of its own still reaches the guard,
    which refuses it [H1] [P1]."""
    for run_id in ("r1", "r2", "r3"):
        assert harn(repo, "start", run_id).code == 0
        assert harn(repo, "cleanup", run_id, "--yes").code == 0
    called = tmp_path / "called"
    spy = fake_git_harn(tmp_path / "bin", f'echo "$@" >> "{called}"; exec "{shutil.which("git-harn")}" "$@"')
    git(repo, "branch", "harnery/ws/r1", "main")
    git(repo, "branch", "harnery/ws/r2", "main")
    git(repo, "pack-refs", "--all")  # a packed branch is deleted in two transactions
    trace = tmp_path / "trace"
    done = git_run(repo, "branch", "-D", "harnery/ws/r1", env=dict(spy, GIT_TRACE=str(trace)))
    assert done.returncode == 0, done.stderr
    assert ref(repo, "refs/heads/harnery/ws/r1") is None
    assert not called.exists()
    assert trace.read_text().count("run_command: ") >= 4  # the hook ran, in both transactions, both phases
    # the reachability walk once: the second transaction finds the branch gone already
    assert trace.read_text().count("built-in: git rev-list") == 1
    assert git_run(repo, "update-ref", "-d", "refs/heads/harnery/ws/r2", env=spy).returncode == 0
    assert not called.exists()

    unique = git(repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "only here")
    git(repo, "branch", "harnery/ws/r3", unique)
    refused = git_run(repo, "branch", "-D", "harnery/ws/r3", env=spy)
    assert refused.returncode != 0 and "git harn reclaim r3" in refused.stderr
    assert ref(repo, "refs/heads/harnery/ws/r3") == unique
    assert called.read_text().splitlines() == ["hooks run reference-transaction prepared"]
    git(repo, "tag", "keep", unique)  # now a tag holds the commit: the branch may go, still without Python
    called.unlink()
    assert git_run(repo, "branch", "-D", "harnery/ws/r3", env=spy).returncode == 0
    assert not called.exists()
    # git-harn's own refs that hold work count; its bookkeeping refs do not [P1]
    for holder, kept in (("refs/harnery/integrated/task-1", False), ("refs/harnery/workflows/w1", True)):
        other = git(repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", holder)
        git(repo, "update-ref", holder, other)
        git(repo, "branch", "harnery/ws/r3", other)
        done = git_run(repo, "branch", "-D", "harnery/ws/r3", env=spy)
        assert (done.returncode != 0) == kept, done.stderr
        assert called.exists() == kept
        git(repo, "update-ref", "-d", "refs/heads/harnery/ws/r3", env={"HARN_INTERNAL": "1"})


def test_a_live_runs_branch_still_reaches_git_harn(repo: Path, tmp_path: Path) -> None:
    """A live run's branch (its live index entry) goes to Python in both
    phases: the guard and the reconcile need its record."""
    assert harn(repo, "start", "r1").code == 0
    git(repo, "worktree", "remove", str(ws_path(repo, "r1")))
    called = tmp_path / "called"
    spy = fake_git_harn(tmp_path / "bin", f'echo "$@" >> "{called}"; exec "{shutil.which("git-harn")}" "$@"')
    done = git_run(repo, "branch", "-D", "harnery/ws/r1", env=spy)
    assert done.returncode == 0, done.stderr
    assert state(repo, "r1") == "already_gone"
    assert "hooks run reference-transaction committed" in called.read_text()
