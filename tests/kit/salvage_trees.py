"""Reading trees back, byte for byte, to check that salvaged work is whole."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pygit2

from tests.kit.harn import git, harn, make_repo, record

# path (bytes) -> (git file mode, content bytes; a symlink's content is its target)
Files = dict[bytes, tuple[int, bytes]]

LINK = 0o120000
EXEC = 0o100755
PLAIN = 0o100644


def tree_files(repo: Path, rev: str) -> Files:
    """Every file in ``rev``'s tree, as git stores it."""
    pg = pygit2.Repository(str(repo))
    tree = pg.revparse_single(rev).peel(pygit2.Tree)
    out: Files = {}

    def walk(node: pygit2.Tree, prefix: bytes) -> None:
        for entry in node:
            name = prefix + entry.raw_name
            if entry.filemode == pygit2.enums.FileMode.TREE:
                walk(pg[entry.id].peel(pygit2.Tree), name + b"/")
            else:
                out[name] = (int(entry.filemode), pg[entry.id].peel(pygit2.Blob).data)

    walk(tree, b"")
    return out


def worktree_files(root: Path, ignored: tuple[bytes, ...] = (b".log",)) -> Files:
    """Every file on disk under ``root`` (not .git, not names ending in ``ignored``)."""
    out: Files = {}
    base = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d != b".git" and not os.path.islink(os.path.join(dirpath, d))]
        linked_dirs = [d for d in os.listdir(dirpath) if os.path.islink(os.path.join(dirpath, d))
                       and os.path.isdir(os.path.join(dirpath, d))]
        for name in [*filenames, *linked_dirs]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, base)
            if rel.endswith(ignored) or rel == b".git":
                continue
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                out[rel] = (LINK, os.readlink(full))
            else:
                mode = EXEC if info.st_mode & 0o100 else PLAIN
                out[rel] = (mode, Path(os.fsdecode(full)).read_bytes())
    return out


def started(tmp_path: Path, run_id: str = "r1", files: dict[str, str] | None = None) -> tuple[Path, Path]:
    """A repository with a started workspace: (repository, worktree)."""
    repo = make_repo(tmp_path / "repo", files or {
        "README.md": "hello\n", "src/app.py": "x = 1\n", "src/old.py": "old\n",
        "docs/guide.md": "guide\n", ".gitignore": "*.log\n",
    })
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    result = harn(repo, "start", run_id)
    assert result.code == 0, result.err
    return repo, Path(record(repo, run_id)["path"])


def make_dirty(worktree: Path) -> None:
    """Modified, deleted, untracked, staged-then-changed and ignored files."""
    (worktree / "src/app.py").write_text("x = 2\n")
    (worktree / "src/old.py").unlink()
    (worktree / "notes").mkdir()
    (worktree / "notes/plan.md").write_text("# plan\n")
    (worktree / "README.md").write_text("staged version\n")
    git(worktree, "add", "README.md")
    (worktree / "README.md").write_text("working version\n")
    (worktree / "build.log").write_text("ignored\n")


def lock_files(repo: Path) -> list[str]:
    locks = repo / ".git" / "harnery" / "locks"
    return sorted(p.name for p in locks.iterdir()) if locks.is_dir() else []
