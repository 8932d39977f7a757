"""Reclaim and cleanup where work hides: edits after a crash, commits landing
mid-reclaim, names git cannot store, flagged files, submodules, and a
branch deleted by hand [P1] [P3] [P6]."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from git_harn.errors import Refused
from git_harn.git import open_repo
from git_harn.store import runs as store
from git_harn.workspace import reclaim
from git_harn.workspace.snapshot import take
from tests.kit.harn import descendants, git, harn, is_python_of_git_harn, make_repo, record, ref, wait_for, wait_gone
from tests.kit.salvage_trees import started, tree_files

SALVAGE = "refs/heads/harnery/salvage/r1"
WS = "refs/heads/harnery/ws/r1"


def test_edits_made_after_a_crash_are_salvaged_not_wiped(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "README.md").write_text("one\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3
    killed = harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-salvage-record"})
    assert killed.code == 137
    (wt / "new.txt").write_text("IMPORTANT\n")
    (wt / "README.md").write_text("one\ntwo\n")
    assert harn(repo, "reclaim", "r1").code == 0
    files = tree_files(repo, SALVAGE)
    assert files[b"new.txt"][1] == b"IMPORTANT\n" and files[b"README.md"][1] == b"one\ntwo\n"
    assert record(repo, "r1")["state"] == "released"


def test_restore_refuses_to_move_the_branch_over_a_commit_the_salvage_lacks(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "README.md").write_text("work\n")
    killed = harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-salvage-record"})
    assert killed.code == 137
    git(wt, "commit", "-q", "--allow-empty", "-m", "late")  # lands after the salvage was taken
    late = git(wt, "rev-parse", "HEAD")
    handle = open_repo(repo)
    stored = store.read(handle, "r1")
    assert stored is not None
    with pytest.raises(Refused, match="landed in the workspace"):
        reclaim._restore(handle, take(handle, stored))
    assert ref(repo, WS) == late
    # The ordinary rerun sees the new commit and salvages it too.
    assert harn(repo, "reclaim", "r1").code == 0
    git(repo, "merge-base", "--is-ancestor", late, SALVAGE)


def test_a_name_git_cannot_store_is_refused_before_anything_changes(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "d").mkdir()
    (wt / "d" / ".git").write_text("not a repository\n")
    (wt / "d" / "w.txt").write_text("w\n")
    result = harn(repo, "reclaim", "r1")
    assert result.code == 3 and "d/.git" in result.err
    assert (wt / "d" / ".git").read_text() == "not a repository\n"
    assert ref(repo, SALVAGE) is None
    (wt / "d" / ".git").rename(tmp_path / "moved-aside")
    assert harn(repo, "reclaim", "r1").code == 0
    assert tree_files(repo, SALVAGE)[b"d/w.txt"][1] == b"w\n"


def test_changes_to_skip_worktree_files_are_work(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    git(wt, "update-index", "--skip-worktree", "README.md")
    (wt / "README.md").write_text("PRECIOUS\n")
    cleaned = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert cleaned.code == 3 and cleaned.json()["outcome"] == "preserved_dirty"
    assert harn(repo, "reclaim", "r1").code == 0
    assert tree_files(repo, SALVAGE)[b"README.md"][1] == b"PRECIOUS\n"


def test_a_workspace_with_submodules_is_preserved_not_an_error(tmp_path: Path) -> None:
    sub = make_repo(tmp_path / "sub", {"s.txt": "s\n"})
    repo = make_repo(tmp_path / "repo")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    git(repo, "commit", "-q", "-m", "add submodule")
    assert harn(repo, "start", "r1").code == 0
    wt = Path(record(repo, "r1")["path"])
    git(wt, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
    result = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert result.code == 3 and "sub/.git" in result.json()["reason"]
    assert (wt / "sub" / "s.txt").exists()


def test_reclaim_recreates_a_workspace_branch_deleted_by_hand(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    base = ref(repo, WS)
    (wt / "new.txt").write_text("w\n")
    git(repo, "update-ref", "-d", WS)
    result = harn(repo, "reclaim", "r1")
    assert result.code == 0, result.err
    assert tree_files(repo, SALVAGE)[b"new.txt"][1] == b"w\n"
    git(repo, "merge-base", "--is-ancestor", str(base), SALVAGE)
    assert record(repo, "r1")["state"] == "released"


def test_hook_refuses_to_delete_the_branch_of_a_dirty_live_workspace(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    assert harn(repo, "hooks", "install").code == 0
    (wt / "new.txt").write_text("w\n")
    done = git(repo, "update-ref", "-d", WS, check=False)
    assert ref(repo, WS) is not None, done
    assert (wt / "new.txt").exists()


def test_a_stray_git_file_in_a_tracked_folder_is_never_deleted(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "src" / ".git").write_text("important\n")
    cleaned = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert cleaned.code == 3 and "src/.git" in cleaned.json()["reason"]
    (wt / "README.md").write_text("m\n")
    assert harn(repo, "reclaim", "r1").code == 3
    assert (wt / "src" / ".git").read_text() == "important\n"


def test_a_folder_name_with_a_unicode_line_separator_hides_nothing(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    deep = wt / "x\u2028y" / "deep"
    deep.mkdir(parents=True)
    (deep / ".git").write_text("important\n")
    assert harn(repo, "reclaim", "r1").code == 3
    assert (deep / ".git").read_text() == "important\n"


def test_a_file_name_that_is_not_utf8_is_reported_not_a_crash(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    name = os.fsencode(wt) + b"/bad\xffname"
    with open(name, "wb") as handle:
        handle.write(b"y")
    cleaned = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert cleaned.code == 3, cleaned.err
    assert cleaned.json()["outcome"] == "preserved_dirty"
    assert record(repo, "r1")["state"] == "preserved_dirty"
    status = harn(repo, "status", "--json")
    assert status.code == 0 and status.json()["workspaces"][0]["dirtyCount"] == 1
    assert harn(repo, "status").code == 0
    assert harn(repo, "reclaim", "r1").code == 0
    assert os.path.exists(name) is False and ref(repo, SALVAGE) is not None


def test_unchanged_assume_unchanged_file_under_an_eol_filter_is_clean(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitattributes": "*.txt eol=crlf\n", "f.txt": "a\nb\n"})
    assert harn(repo, "start", "r1").code == 0
    wt = Path(record(repo, "r1")["path"])
    git(wt, "update-index", "--assume-unchanged", "f.txt")
    cleaned = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert cleaned.code == 0, cleaned.json()
    assert cleaned.json()["outcome"] == "released"


def test_a_deletion_made_after_a_crash_before_removal_is_kept(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    killed = harn(repo, "cleanup", "r1", "--yes", env={"HARN_FAILPOINT": "cleanup-before-remove"})
    assert killed.code == 137
    (wt / "README.md").unlink()  # the operator's change, not git's removal
    result = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert result.code == 3 and result.json()["outcome"] == "preserved_dirty"
    assert not (wt / "README.md").exists()


def test_writes_during_a_reclaim_are_salvaged_or_stop_it(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "README.md").write_text("before\n")
    # A clean filter that writes a file whenever git reads README.md, while
    # reclaim reads the tree: something still at work in the workspace.
    git(repo, "config", "filter.touch.clean", f"touch {wt}/late.txt; cat")
    (wt / ".gitattributes").write_text("*.md filter=touch\n")
    result = harn(repo, "reclaim", "r1")
    if result.code == 0:  # written before the salvage read the tree: salvaged, then removed
        assert tree_files(repo, SALVAGE)[b"late.txt"][1] == b""
        assert tree_files(repo, SALVAGE)[b"README.md"][1] == b"before\n"
        assert not wt.exists()
        return
    assert result.code == 3, result.err  # written after: kept where it is, nothing reset
    assert (wt / "late.txt").exists() and (wt / "README.md").read_text() == "before\n"
    git(repo, "config", "--unset", "filter.touch.clean")
    assert harn(repo, "reclaim", "r1").code == 0
    assert b"late.txt" in tree_files(repo, SALVAGE)


def test_a_write_to_a_file_after_the_salvage_read_it_stops_the_reset(tmp_path: Path) -> None:
    """The reset path (a discard) still compares the tree with what it was
    before the salvage read it, and refuses on any change [P1]."""
    repo, wt = started(tmp_path)
    (wt / "README.md").write_text("before\n")
    git(repo, "config", "filter.touch.clean", f"touch {wt}/late.txt; cat")
    (wt / ".gitattributes").write_text("*.md filter=touch\n")
    result = harn(repo, "reclaim", "r1", "--discard", "--yes")
    assert result.code == 3 and "changed while it was being reclaimed" in result.err
    assert (wt / "late.txt").exists() and (wt / "README.md").read_text() == "before\n"


def test_a_killed_run_stays_busy_while_its_command_runs(tmp_path: Path) -> None:
    import signal
    import subprocess

    repo, wt = started(tmp_path)
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    flag = tmp_path / "agent-started"
    proc = subprocess.Popen(
        ["git", "harn", "run", "r2", "--", sys.executable, "-c",
         f"import pathlib, time; pathlib.Path({str(flag)!r}).touch(); time.sleep(30)"],
        cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(flag)
    tree = descendants(proc.pid)
    harn_pids = [proc.pid, *(pid for pid in tree if is_python_of_git_harn(pid))]
    agents = [pid for pid in tree if pid not in harn_pids]
    for pid in harn_pids:  # git-harn and the git that started it; the agent lives on
        os.kill(pid, signal.SIGKILL)
    busy = harn(repo, "reclaim", "r2")
    assert busy.code == 1 and "busy" in busy.err and "still runs" in busy.err
    # the refusal names the command that stops what the dead run left [L3]
    assert any(f"stop it with 'kill -TERM {pid}'" in busy.err for pid in agents), busy.err
    for pid in agents:
        os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for pid in agents:
        wait_gone(pid)  # the lock names it: busy until it has really ended
    result = harn(repo, "reclaim", "r2")
    assert result.code == 0, result.err
