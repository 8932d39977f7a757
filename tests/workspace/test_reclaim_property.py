"""Property: whatever an agent leaves in a worktree, every version of every
file is recoverable from the salvage branch after reclaim [W5] [P1].

Random working trees: edits, deletions, renames, new files, mode changes,
symlinks, binary content, names with spaces, unicode and newlines, ignored
files, and versions staged then changed again.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from git_harn.git import open_repo
from git_harn.store.locks import hold_run
from git_harn.workspace.reclaim import SALVAGE, reclaim_locked
from git_harn.workspace.start import start_locked
from tests.kit.harn import git, make_repo, ref
from tests.kit.salvage_trees import tree_files, worktree_files

NAMES = ["a.txt", "with space.txt", "ünïcødé ✓.md", "new\nline", "bin.dat", "sub/x.py",
         "sub/deep/y.py", "run.sh", "z", "other/ü w.txt"]
TARGETS = ["a.txt", "../outside", "sub", "missing/ü", "sub/x.py"]
SALVAGE_REF = "refs/heads/harnery/salvage/p1"

content = st.binary(max_size=48)
name = st.sampled_from(NAMES)
operation = st.one_of(
    st.tuples(st.just("write"), name, content, st.booleans()),
    st.tuples(st.just("delete"), name),
    st.tuples(st.just("rename"), name, name),
    st.tuples(st.just("symlink"), name, st.sampled_from(TARGETS)),
    st.tuples(st.just("chmod"), name, st.booleans()),
    st.tuples(st.just("stage"), name),
    st.tuples(st.just("stage-then-edit"), name, content),
    st.tuples(st.just("ignored"), name, content),
)
base_files = st.dictionaries(name, content, min_size=1, max_size=6)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()


def apply(wt: Path, op: tuple) -> None:  # type: ignore[type-arg]
    kind, target = op[0], wt / op[1]
    exists = os.path.lexists(target)
    if kind == "write":
        _remove(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(op[2])
        target.chmod(0o755 if op[3] else 0o644)
    elif kind == "delete" and exists:
        _remove(target)
    elif kind == "rename" and exists and not os.path.lexists(wt / op[2]):
        (wt / op[2]).parent.mkdir(parents=True, exist_ok=True)
        os.rename(target, wt / op[2])
    elif kind == "symlink":
        _remove(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(op[2], target)
    elif kind == "chmod" and exists and not target.is_symlink():
        target.chmod(0o755 if op[2] else 0o644)
    elif kind == "stage":
        git(wt, "--literal-pathspecs", "add", "-A", "--", op[1], check=False)
    elif kind == "stage-then-edit":
        apply(wt, ("write", op[1], op[2] + b"staged", False))
        apply(wt, ("stage", op[1]))
        apply(wt, ("write", op[1], op[2], False))
    elif kind == "ignored":
        (wt / (op[1] + ".log")).parent.mkdir(parents=True, exist_ok=True)
        (wt / (op[1] + ".log")).write_bytes(op[2])


def index_entries(wt: Path) -> dict[bytes, tuple[str, str]]:
    """The worktree's index: path -> (mode, blob id)."""
    out = {}
    for item in git_raw(wt, "ls-files", "-s", "-z").split(b"\0"):
        if item:
            meta, path = item.split(b"\t", 1)
            mode, oid, _ = meta.split(b" ")
            out[path] = (mode.decode(), oid.decode())
    return out


def tree_entries(repo: Path, rev: str) -> dict[bytes, tuple[str, str]]:
    out = {}
    for item in git_raw(repo, "ls-tree", "-r", "-z", rev).split(b"\0"):
        if item:
            meta, path = item.split(b"\t", 1)
            mode, _, oid = meta.split(b" ")
            out[path] = (mode.decode(), oid.decode())
    return out


def git_raw(cwd: Path, *args: str) -> bytes:
    import subprocess

    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=base_files, ops=st.lists(operation, min_size=1, max_size=10))
def test_every_version_is_recoverable_from_the_salvage_branch(
    base: dict[str, bytes], ops: list[tuple],  # type: ignore[type-arg]
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        repo_path = make_repo(root / "repo", {".gitignore": "*.log\n"})
        for rel, data in base.items():
            (repo_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo_path / rel).write_bytes(data)
        git(repo_path, "add", "-A")
        git(repo_path, "commit", "-q", "--allow-empty", "-m", "base")
        git(repo_path, "config", "harn.worktreeRoot", str(root / "worktrees"))
        repo = open_repo(repo_path)
        with hold_run(repo, "p1", "test"):
            wt = Path(start_locked(repo, "p1").path)
        for op in ops:
            apply(wt, op)

        work = worktree_files(wt)
        index = index_entries(wt)
        head = tree_entries(repo_path, "HEAD")
        head_files = tree_files(repo_path, "HEAD")

        with hold_run(repo, "p1", "test"):
            result = reclaim_locked(open_repo(repo_path), "p1", SALVAGE)

        assert result.state == "released" and not wt.exists()
        if work == head_files and index == head:
            assert ref(repo_path, SALVAGE_REF) is None  # nothing to keep, no empty commit
            event("nothing to salvage")
            return
        assert tree_files(repo_path, SALVAGE_REF) == work
        salvaged = tree_entries(repo_path, SALVAGE_REF)
        under = tree_entries(repo_path, SALVAGE_REF + "^1")
        if index not in (head, salvaged):
            event("staged versions kept")
            assert under == index  # the staged versions, kept underneath
        else:
            assert under == head
        changed = {p for p in work.keys() | head_files.keys() if work.get(p) != head_files.get(p)}
        changed |= {p for p in index.keys() | head.keys() if index.get(p) != head.get(p)}
        assert result.salvage is not None
        assert set(result.salvage["paths"]) == {p.decode() for p in changed}
