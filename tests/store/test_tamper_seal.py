"""The seal itself [T2]: each kind of change to what a later git obeys is
found, put back byte for byte and kept as evidence; the host's own writes
(through the git layer) are not changes; a moved ref goes back by
compare-and-swap with what it held kept [P1]."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from git_harn.git import open_repo, to_oid
from git_harn.git.run import run_git
from git_harn.store.armed import armed
from git_harn.store.locks import hold, sync_lock_path
from git_harn.store.seal import RACY_NS, Seal, TamperFound, include_paths
from tests.kit.harn import git, make_repo


def sealed(repo_path: Path, tmp: Path) -> Seal:
    return Seal(open_repo(repo_path), "wf-test", tmp / "evidence")


def linked(repo: Path, tmp: Path, name: str = "wt") -> Path:
    path = tmp / name
    git(repo, "worktree", "add", "-q", "-b", name, str(path))
    return path


def test_config_hooks_info_head_changes_are_found_put_back_and_kept(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    seal = sealed(repo, tmp_path)
    dot = repo / ".git"
    config_before = (dot / "config").read_bytes()
    sample = next((dot / "hooks").iterdir())
    with seal.installed():
        git(repo, "config", "core.fsmonitor", "/tmp/evil")  # an agent
        (dot / "hooks" / "post-checkout").write_text("#!/bin/sh\necho evil\n")
        (dot / "info" / "attributes").write_text("* filter=evil\n")
        sample.write_text("changed\n")
        (dot / "HEAD").write_text("ref: refs/heads/other\n")
        found = seal.check()
    assert found is not None
    whats = {c.what for c in found.changes}
    assert whats == {str(dot / "config"), str(dot / "hooks" / "post-checkout"), str(dot / "info" / "attributes"),
                     str(sample), str(dot / "HEAD")}
    assert all(c.restored for c in found.changes)
    assert (dot / "config").read_bytes() == config_before
    assert not (dot / "hooks" / "post-checkout").exists() and not (dot / "info" / "attributes").exists()
    assert (dot / "HEAD").read_text() == "ref: refs/heads/main\n"
    evidence = Path(found.evidence)
    assert stat.S_IMODE(os.stat(evidence).st_mode) == 0o700
    kept = json.loads((evidence / "changes.json").read_text())
    assert {c["what"] for c in kept["changes"]} == whats
    planted = [p for p in evidence.iterdir() if p.name.endswith("post-checkout.found")]
    assert planted and planted[0].read_text() == "#!/bin/sh\necho evil\n"
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in evidence.iterdir())


def test_includes_are_followed_whatever_their_condition(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    extra = tmp_path / "extra.inc"
    extra.write_text("[user]\n\tname = x\n")
    other = tmp_path / "other.inc"
    git(repo, "config", "include.path", str(extra))
    git(repo, "config", f"includeIf.gitdir:{tmp_path}/nowhere/.path", str(other))
    raw = (repo / ".git" / "config").read_bytes()
    assert include_paths(raw, repo / ".git" / "config") == [extra, other]
    seal = sealed(repo, tmp_path)
    with seal.installed():
        extra.write_text("[core]\n\tfsmonitor = /tmp/evil\n")
        other.write_text("[core]\n\tsshCommand = evil\n")  # absent until now: created
        found = seal.check()
    assert found is not None and {c.what for c in found.changes} == {str(extra), str(other)}
    assert extra.read_text() == "[user]\n\tname = x\n" and not other.exists()


def test_the_worktree_pointers_are_put_back(tmp_path: Path) -> None:
    """Finding 2: the .git file, commondir and config.worktree."""
    repo = make_repo(tmp_path / "repo")
    wt = linked(repo, tmp_path)
    admin = repo / ".git" / "worktrees" / "wt"
    before = {p: p.read_bytes() for p in (wt / ".git", admin / "commondir", admin / "gitdir")}
    seal = sealed(repo, tmp_path)
    with seal.installed():
        fake = tmp_path / "fake.git"
        git(tmp_path, "init", "-q", "--bare", str(fake))
        (wt / ".git").write_text(f"gitdir: {fake}\n")
        (admin / "commondir").write_text(str(fake) + "\n")
        (admin / "config.worktree").write_text("[core]\n\tfsmonitor = /tmp/evil\n")
        found = seal.check()
    assert found is not None
    assert {p: p.read_bytes() for p in before} == before
    assert not (admin / "config.worktree").exists()
    git(wt, "status")  # git works there again


def test_refs_moved_made_and_deleted_go_back_with_nothing_lost(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "branch", "other")
    git(repo, "notes", "add", "-m", "operator's note")
    seal = sealed(repo, tmp_path)
    main = git(repo, "rev-parse", "main").strip()
    note = git(repo, "rev-parse", "refs/notes/commits").strip()
    with seal.installed():
        wt = linked(repo, tmp_path)  # the host's own worktree add: not a change
        (wt / "b.txt").write_text("b\n")
        git(wt, "add", "b.txt")
        git(wt, "commit", "-qm", "agent's commit")
        agent = git(wt, "rev-parse", "HEAD").strip()
        seal.exclude.add("refs/heads/wt")  # the stage's own branch
        git(repo, "update-ref", "refs/heads/other", agent)
        git(repo, "update-ref", "refs/replace/" + main, agent)
        git(repo, "update-ref", "-d", "refs/notes/commits")
        git(repo, "update-ref", "refs/harnery/notes", agent)
        found = seal.check()
    assert found is not None
    assert {c.what for c in found.changes} == {"refs/heads/other", f"refs/replace/{main}", "refs/notes/commits",
                                               "refs/harnery/notes"}
    assert git(repo, "rev-parse", "other").strip() == main
    assert git(repo, "for-each-ref", "refs/replace", "refs/harnery/notes").strip() == ""
    assert git(repo, "rev-parse", "refs/notes/commits").strip() == note
    kept = git(repo, "for-each-ref", "--format=%(objectname)", "refs/harnery/tamper/wf-test").split()
    assert agent in kept  # the agent's commit stays reachable
    assert git(repo, "rev-parse", "wt").strip() == agent  # its own branch keeps its commits


def test_the_hosts_own_ref_writes_and_config_writes_are_no_change(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    handle = open_repo(repo)
    seal = Seal(handle, "wf-test", tmp_path / "evidence")
    main = handle.ref_oid("refs/heads/main")
    assert main is not None
    with seal.installed():
        handle.create_ref("refs/harnery/runs/x", main, "host")
        handle.update_refs([("refs/harnery/live/x", main, None)])
        handle.ensure_config_value("notes.displayRef", "refs/harnery/notes")
        handle.delete_ref("refs/harnery/runs/x", main)
        assert seal.check() is None


def test_a_host_write_on_a_planted_value_does_not_make_it_the_hosts(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    handle = open_repo(repo)
    main = handle.ref_oid("refs/heads/main")
    assert main is not None
    handle.create_ref("refs/harnery/runs/x", main, "host")
    seal = Seal(handle, "wf-test", tmp_path / "evidence")
    tree = git(repo, "rev-parse", "main^{tree}").strip()
    planted = git(repo, "commit-tree", "-p", str(main), "-m", "planted", tree).strip()
    hosts = git(repo, "commit-tree", "-p", planted, "-m", "the host's next event", tree).strip()
    with seal.installed():
        git(repo, "update-ref", "refs/harnery/runs/x", planted)  # an agent
        handle.move_ref("refs/harnery/runs/x", to_oid(hosts), to_oid(planted), "host builds on what it read")
        found = seal.check()
    assert found is not None and [(c.what, c.old, c.new) for c in found.changes] == [
        ("refs/harnery/runs/x", str(main)[:12], hosts[:12])]
    assert handle.ref_oid("refs/harnery/runs/x") == main


def test_the_guard_puts_files_back_before_the_hosts_git_and_stops_the_blamed_task(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    seal = sealed(repo, tmp_path)
    canary = tmp_path / "ran"
    with seal.installed():
        window = seal.open_stage("1.1", "implement")
        (repo / ".git" / "config").write_text((repo / ".git" / "config").read_text()
                                              + f"[core]\n\tfsmonitor = touch {canary}\n")
        with seal.working_for("1.1"), pytest.raises(TamperFound) as raised:
            run_git(["status"], repo)
        assert "fsmonitor" not in (repo / ".git" / "config").read_text()
        assert str(repo / ".git" / "config") in raised.value.tamper.detail
        run_git(["status"], repo)  # another thread's git: put back, runs
        assert seal.close_stage(window) is None  # told once, already
    assert not canary.exists()


def test_a_settled_file_rewritten_with_its_size_and_mtime_kept_is_still_found(tmp_path: Path) -> None:
    """A file last changed long before the seal looked is not read again while its stat holds
    (the guard runs before every host git); a rewrite that keeps its size and sets its mtime back
    still moves its ctime, which no process can set back, so it is found and put back."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    info = repo / ".git" / "info" / "exclude"
    info.write_text("# keep out\n")
    settled = time.time() + RACY_NS / 1e9 + 0.2
    while time.time() < settled:  # its last change must be older than a coarse clock tick could blur
        time.sleep(0.1)
    seal = sealed(repo, tmp_path)
    with seal.installed():
        assert seal.check_files() is None  # unchanged: found so by its stat alone
        before = os.stat(info)
        info.write_text("*.pyc text\n")  # the same size
        os.utime(info, ns=(before.st_atime_ns, before.st_mtime_ns))
        found = seal.check_files()
    assert found is not None and [c.what for c in found.changes] == [str(info)]
    assert info.read_text() == "# keep out\n"


def test_a_seal_is_marked_then_waits_for_a_sync_that_began_before_it(tmp_path: Path) -> None:
    """A sync that read no mark (it holds the sync lock) ends before the
    seal is taken: its writes are no tamper; a sync after reads the mark."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    seal = sealed(repo, tmp_path)
    common = repo / ".git"
    taken, release = threading.Event(), threading.Event()
    found: list[object] = []

    def arm() -> None:
        with seal.installed():
            taken.set()
            release.wait(30)
            found.append(seal.check())

    thread = threading.Thread(target=arm)
    with hold(sync_lock_path(open_repo(repo)), "sync", "a sync", 0):
        thread.start()
        deadline = time.monotonic() + 10
        while armed(common) != ["wf-test"]:
            assert time.monotonic() < deadline, "never marked"
            time.sleep(0.02)
        time.sleep(0.3)
        assert not taken.is_set()  # not taken while the sync runs
        git(repo, "update-ref", "refs/harnery/runs/from-the-sync", "HEAD")  # what that sync merges
    assert taken.wait(10)
    release.set()
    thread.join(30)
    assert found == [None]
    assert armed(common) == []  # the mark goes with the seal
