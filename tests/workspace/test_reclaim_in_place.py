"""A salvaged workspace is made clean where it stands: its HEAD detached at
the salvage commit, whose tree is the work, with the index the salvage
wrote. No file is rewritten only for the removal to delete it (issue 45:
the reset of 1,000 files was most of a reclaim), and a write made after the
salvage read the tree still stops the removal [P1] [W5] [W8]."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from pathlib import Path

from tests.kit.harn import git, harn, record, ref
from tests.kit.runners import at_failpoint
from tests.kit.salvage_trees import PLAIN, make_dirty, started, tree_files, worktree_files

SALVAGE = "refs/heads/harnery/salvage/r1"
WS = "refs/heads/harnery/ws/r1"


def test_a_salvaged_workspace_is_made_clean_without_rewriting_a_file(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    frozen = ref(repo, WS)
    make_dirty(wt)
    expected = worktree_files(wt)
    before = os.lstat(wt / "src/app.py")

    killed = harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-clean"})
    assert killed.code == 137, killed.err

    # The index is dated a second before git read the tree (HEAD is written
    # after it): git compares by content every file written since, where it
    # would trust a size and a time that it reads to the second [P1]. (Read
    # before any git below runs: a status that refreshes rewrites the index.)
    admin = next((repo / ".git" / "worktrees").iterdir())
    assert os.stat(admin / "HEAD").st_mtime - os.stat(admin / "index").st_mtime >= 0.9
    assert tree_files(repo, SALVAGE) == expected
    assert git(wt, "rev-parse", "HEAD") == ref(repo, SALVAGE)  # detached at the work
    assert git(wt, "symbolic-ref", "-q", "HEAD", check=False) == ""
    assert ref(repo, WS) == frozen  # the branch is back at the frozen intent [W8]
    assert git(wt, "status", "--porcelain", "--untracked-files=all") == ""  # clean: cleanup accepts it
    after = os.lstat(wt / "src/app.py")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # never rewritten
    assert (wt / "build.log").exists()  # ignored files are left to the removal, as before

    rerun = harn(repo, "reclaim", "r1", "--json")
    assert rerun.code == 0, rerun.err
    assert rerun.json()["state"] == "released" and not wt.exists() and ref(repo, WS) is None
    assert tree_files(repo, SALVAGE) == expected


def test_a_write_after_the_salvage_read_the_tree_is_kept(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    make_dirty(wt)
    expected = worktree_files(wt)
    runner = at_failpoint(repo, "reclaim-after-ref-restored", "reclaim", "r1")
    with runner:
        (wt / "late.txt").write_text("written while reclaim ran\n")
        (wt / "src/app.py").write_text("x = 3\n")
        os.killpg(runner.pgid, signal.SIGCONT)
        _, err = runner.proc.communicate(timeout=60)
    assert runner.proc.returncode == 3, err
    first = ref(repo, SALVAGE)
    assert tree_files(repo, SALVAGE) == expected  # what the salvage read
    assert (wt / "late.txt").read_text() == "written while reclaim ran\n"  # not removed
    assert (wt / "src/app.py").read_text() == "x = 3\n"
    assert record(repo, "r1")["state"] == "preserved_dirty"

    assert harn(repo, "reclaim", "r1").code == 0
    files = tree_files(repo, SALVAGE)
    assert files[b"late.txt"] == (PLAIN, b"written while reclaim ran\n")
    assert files[b"src/app.py"] == (PLAIN, b"x = 3\n")
    git(repo, "merge-base", "--is-ancestor", first, SALVAGE)
    assert record(repo, "r1")["state"] == "released" and not wt.exists()


def _filter(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_same_second_rewrite_while_git_add_runs_is_kept(tmp_path: Path) -> None:
    """Racy git. The agent is still running and rewrites ``a.txt`` (same
    size) just after ``git add -A`` hashed it, in the same second as its
    previous write, and ``git add`` writes its index in the next second (a
    big tree takes that long). git compares file times to the second, so an
    index kept from that capture would call the file clean and the removal
    would delete the rewrite. The tree is compared with what it was before
    the salvage read it (size and time to the nanosecond), and the kept
    index is dated before the capture began, so git compares by content.

    The clean filters only schedule the agent's writes (``0.first`` writes
    A' right after a second boundary, ``z.slow`` writes B right after git
    hashed a.txt, then takes 1.2 s)."""
    repo, wt = started(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    first = _filter(tmp_path / "first.sh", f"""
if [ ! -e {marks}/first ]; then
  touch {marks}/first
  python3 -c 'import time
while time.time() % 1 > 0.2 or time.time() % 1 < 0.02: time.sleep(0.005)'
  printf "version-A2\\n" > {wt}/a.txt
fi
exec cat
""")
    slow = _filter(tmp_path / "slow.sh", f"""
cat
if [ ! -e {marks}/slow ]; then
  touch {marks}/slow
  printf "version-BB\\n" > {wt}/a.txt
  sleep 1.2
fi
""")
    git(repo, "config", "filter.first.clean", str(first))
    git(repo, "config", "filter.slow.clean", str(slow))
    info = Path(git(repo, "rev-parse", "--git-common-dir"))
    info = (info if info.is_absolute() else repo / info) / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("0.first filter=first\nz.slow filter=slow\n")

    (wt / "0.first").write_text("first\n")
    (wt / "a.txt").write_text("version-A1\n")
    (wt / "z.slow").write_text("slow\n")

    done = harn(repo, "reclaim", "r1", "--json")
    salvaged = tree_files(repo, SALVAGE)
    assert salvaged[b"a.txt"][1] == b"version-A2\n"  # what git add hashed
    # The agent's last write is B: it must be in the salvage or still on disk.
    kept_on_disk = (wt / "a.txt").exists() and (wt / "a.txt").read_bytes() == b"version-BB\n"
    assert kept_on_disk, (f"a.txt's last content (version-BB) was deleted: exit {done.code}, "
                          f"state {record(repo, 'r1')['state']}, salvage holds {salvaged[b'a.txt']!r}")


def test_a_head_link_planted_in_the_admin_folder_is_replaced_never_written_through(tmp_path: Path) -> None:
    """The agent, still running, replaces its worktree's ``HEAD`` (in the
    admin folder it can write) with a symlink to another repository's
    ``refs/heads/main``. HEAD is replaced as git replaces it (``HEAD.lock``
    renamed onto it), so the other repository's branch is never written [T1]."""
    repo, wt = started(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    (other / "f").write_text("other repo\n")
    git(other, "add", "f")
    git(other, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-q", "-m", "other")
    other_main = git(other, "rev-parse", "refs/heads/main")
    target = other / ".git/refs/heads/main"
    assert target.is_file()

    (wt / "work.txt").write_text("uncommitted work\n")
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    runner = at_failpoint(repo, "reclaim-after-ref-restored", "reclaim", "r1")
    with runner:
        (admin / "HEAD").unlink()
        (admin / "HEAD").symlink_to(target)
        os.killpg(runner.pgid, signal.SIGCONT)
        out, err = runner.proc.communicate(timeout=60)
    assert tree_files(repo, SALVAGE)[b"work.txt"][1] == b"uncommitted work\n"
    assert git(other, "rev-parse", "refs/heads/main") == other_main, (
        f"reclaim (exit {runner.proc.returncode}) wrote {target.read_text().strip()} into another "
        f"repository's branch through the planted HEAD symlink; salvage {ref(repo, SALVAGE)}; {err}")


def test_a_version_staged_after_the_salvage_read_the_index_is_kept(tmp_path: Path) -> None:
    """The agent, still running, stages a new version of ``src/app.py`` and
    edits the file again after the salvage read the index. Replacing the
    index with the capture's would drop that staged version; reclaim
    refuses instead, and the rerun salvages it as the staged versions."""
    repo, wt = started(tmp_path)
    (wt / "src/app.py").write_text("x = 2\n")
    runner = at_failpoint(repo, "reclaim-after-salvage-record", "reclaim", "r1")
    with runner:
        (wt / "src/app.py").write_text("x = 'staged later'\n")
        git(wt, "add", "src/app.py")
        (wt / "src/app.py").write_text("x = 'edited again after staging'\n")
        os.killpg(runner.pgid, signal.SIGCONT)
        runner.proc.communicate(timeout=60)
    assert runner.proc.returncode == 3
    rerun = harn(repo, "reclaim", "r1", "--json")
    assert rerun.code == 0, rerun.err
    wanted = _blob_id(repo, b"x = 'staged later'\n")
    reachable = git(repo, "rev-list", "--objects", "--all").split()
    in_index = wt.exists() and wanted in git(wt, "ls-files", "-s")
    assert wanted in reachable or in_index, (
        "the staged version of src/app.py is held by no ref and no index: "
        f"state {record(repo, 'r1')['state']}")


def _blob_id(repo: Path, data: bytes) -> str:
    return subprocess.run(["git", "hash-object", "--stdin"], cwd=repo, input=data,
                          capture_output=True, check=True).stdout.decode().strip()
