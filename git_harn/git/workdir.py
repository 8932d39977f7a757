"""A worktree's files and index: what is uncommitted, captured or restored.

git itself decides what the work is (``git status``, ``git add -A`` into a
scratch index, ``write-tree``), so modes, symlinks, deletions, binary files
and odd names are taken exactly as git sees them and ignored files stay out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from git_harn.errors import GitFailure, Refused
from git_harn.files import atomic_write
from git_harn.git.objects import Oid, from_pygit2
from git_harn.git.run import run_git
from git_harn.git.worktrees import open_worktree

SCRATCH_INDEX = "harn-salvage-index"


class DirtyPath(NamedTuple):
    status: str  # git's two-letter porcelain code, e.g. " M", "??", "D "
    path: str


Fingerprint = frozenset[tuple[str, str, int, int]]


def dirty_paths(path: Path) -> list[DirtyPath]:
    """Uncommitted changes in the worktree at ``path``: modified, staged,
    deleted and untracked files (not ignored), one entry per path."""
    done = run_git(
        ["--no-optional-locks", "status", "--porcelain=v1", "-z",
         "--untracked-files=all", "--no-renames", "--ignore-submodules=none"],
        path, check=False,
    )
    if done.returncode != 0:
        raise GitFailure(f"git status failed in {path}: {done.stderr.decode(errors='replace').strip()}")
    return parse_porcelain(done.stdout)


def parse_porcelain(raw: bytes) -> list[DirtyPath]:
    """One entry per path: a path deleted from the index and still on disk is
    listed by git twice (``D `` and ``??``); it is one dirty path, as salvage
    counts it, shown with its index code."""
    entries: dict[str, DirtyPath] = {}
    for item in raw.split(b"\0"):
        if len(item) < 4:
            continue
        code = item[:2].decode("ascii", "replace")
        path = item[3:].decode("utf-8", "surrogateescape")
        entries.setdefault(path, DirtyPath(code, path))
    return list(entries.values())


def fingerprint(path: Path) -> Fingerprint:
    """What is uncommitted in the worktree, with each path's size and mtime:
    two equal fingerprints mean nothing was written in between."""
    entries = []
    for entry in dirty_paths(path):
        try:
            stat = os.lstat(path / entry.path)
            entries.append((entry.status, entry.path, stat.st_size, stat.st_mtime_ns))
        except OSError:
            entries.append((entry.status, entry.path, -1, -1))
    return frozenset(entries)


def hidden_changes(path: Path) -> list[DirtyPath]:
    """Files marked skip-worktree or assume-unchanged that exist and differ
    from the index: git status does not show them, but they are work."""
    done = run_git(["ls-files", "-v", "-s", "-z"], path, check=False)
    candidates: dict[str, str] = {}  # name -> object id in the index
    for entry in done.stdout.split(b"\0"):
        meta, _, raw_name = entry.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4 or not (fields[0] == b"S" or fields[0].islower()) or fields[1] == b"160000":
            continue
        name = raw_name.decode("utf-8", "surrogateescape")
        target = path / name
        if os.path.lexists(target) and not (target.is_dir() and not target.is_symlink()):
            candidates[name] = fields[2].decode()  # absent: a sparse checkout, on purpose
    return [DirtyPath("SM", name) for name in _differ_from_index(path, candidates)]


def _differ_from_index(path: Path, candidates: dict[str, str]) -> list[str]:
    """Names whose content, hashed as git would add it (filters applied),
    is not the object the index holds. One git call for all of them."""
    plain = [n for n in candidates if "\n" not in n and not n.startswith('"')]
    odd = [n for n in candidates if n not in plain]  # cannot pass --stdin-paths: count as changed
    if not plain:
        return sorted(odd)
    done = run_git(["hash-object", "--stdin-paths"], path, check=False,
                   input_bytes="\n".join(plain).encode("utf-8", "surrogateescape") + b"\n")
    hashes = done.stdout.decode().split()
    if done.returncode != 0 or len(hashes) != len(plain):
        return sorted(candidates)  # cannot tell: keep them all as work
    return sorted(odd + [n for n, h in zip(plain, hashes, strict=True) if h != candidates[n]])


def nested_git_paths(path: Path) -> list[str]:
    """Entries named ``.git`` below the top of the worktree, outside ignored
    folders: nested repositories, submodule checkouts, stray ``.git`` files.
    git status never shows them, no commit can hold them, and removing the
    worktree would delete them."""
    done = run_git(["ls-files", "-o", "-i", "--exclude-standard", "--directory", "-z"], path, check=False)
    ignored = {os.path.normpath(path / p.decode("utf-8", "surrogateescape"))
               for p in done.stdout.split(b"\0") if p}
    found: list[str] = []
    pending = [os.fsencode(path)]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            full = os.fsdecode(entry.path)
            if entry.name == b".git":
                if folder != os.fsencode(path):
                    found.append(os.path.relpath(full, path))
            elif entry.is_dir(follow_symlinks=False) and os.path.normpath(full) not in ignored:
                pending.append(entry.path)
    return sorted(found)


def dirty_paths_many(paths: list[Path]) -> dict[Path, list[DirtyPath] | str]:
    """Dirty paths of many worktrees at once (git status runs in parallel).
    A worktree whose status fails maps to the error text."""

    def one(path: Path) -> list[DirtyPath] | str:
        try:
            return dirty_paths(path)
        except GitFailure as exc:
            return exc.message

    if len(paths) <= 1:
        return {path: one(path) for path in paths}
    from concurrent.futures import ThreadPoolExecutor  # only for two worktrees or more

    # git status waits on stat() as much as on the CPU: more threads than cores pay off.
    workers = min(len(paths), 4 * (os.cpu_count() or 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(paths, pool.map(one, paths), strict=False))


class Capture(NamedTuple):
    """A worktree as found: its HEAD and, when asked, its trees."""

    head: Oid | None
    work_tree: Oid | None  # None: the tree was not captured
    index_tree: Oid | None  # only when it differs from HEAD and the work tree


def capture(path: Path, head_tree: Oid, with_tree: bool, head: Oid | None,
            keep_index: bool = False) -> Capture:
    """The worktree's index and working tree as trees, through a private copy
    of its index; nothing of the worktree itself changes. ``keep_index``: the
    copy, which then holds the working tree with fresh stat data, stays for
    ``adopt_scratch_index`` (or ``drop_scratch_index``)."""
    if not with_tree:
        return Capture(head, None, None)
    admin = Path(open_worktree(path).path)
    # The scratch index lives in the worktree's own admin folder, so a crash
    # that leaves it behind is swept away when cleanup removes the worktree.
    scratch = admin / SCRATCH_INDEX
    kept = False
    try:
        if (admin / "index").exists():
            _copy_index(admin / "index", scratch)
        else:
            scratch.unlink(missing_ok=True)  # never start from one a killed capture left
        env = {"GIT_INDEX_FILE": str(scratch)}
        index_tree = _write_tree(path, env)  # None when the index holds a conflict
        unhide(path, env)
        done = run_git(["add", "-A"], path, check=False, env=env)
        if done.returncode != 0:
            raise Refused(f"cannot salvage {path}: git add failed: "
                          f"{done.stderr.decode('utf-8', 'replace').strip()}")
        work_tree = _write_tree(path, env)
        kept = keep_index and work_tree is not None
    finally:
        if not kept:
            scratch.unlink(missing_ok=True)
    if work_tree is None:
        raise GitFailure(f"git write-tree failed in {path}")
    if index_tree in (head_tree, work_tree):
        index_tree = None
    return Capture(head, work_tree, index_tree)


def adopt_scratch_index(path: Path) -> bool:
    """Make the scratch index a kept capture left the worktree's index, the
    way git replaces one: ``index.lock`` made exclusively (a git at work in
    the worktree holds it), the scratch renamed onto it, then onto ``index``.
    False, with nothing changed, when a git holds the lock or no scratch index
    is there. The renames move whatever the admin folder holds, link or file:
    an agent can write its own index there at any time anyway, and what it
    writes after the capture is its own later work, which ``git status``
    against the result still shows."""
    admin = Path(open_worktree(path).path)
    scratch, lock = admin / SCRATCH_INDEX, admin / "index.lock"
    if not os.path.lexists(scratch):
        return False
    try:
        os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
    except FileExistsError:
        drop_scratch_index(path)
        return False
    try:
        os.replace(scratch, lock)
        os.replace(lock, admin / "index")
    except OSError:
        lock.unlink(missing_ok=True)
        raise
    return True


def drop_scratch_index(path: Path) -> None:
    """The scratch index a kept capture left, removed (not needed after all)."""
    (Path(open_worktree(path).path) / SCRATCH_INDEX).unlink(missing_ok=True)


def _copy_index(index: Path, scratch: Path) -> None:
    """The index copied to the scratch path in the worktree's admin folder,
    which the agent can write: a fresh file renamed over whatever is there,
    never written through a link. Its mtime is kept, which git's racy-clean
    check relies on."""
    seen = os.stat(index)
    atomic_write(scratch, index.read_bytes(), times_ns=(seen.st_atime_ns, seen.st_mtime_ns))


def unhide(path: Path, env: dict[str, str]) -> None:
    """Clear skip-worktree and assume-unchanged from files that exist on disk,
    in the index ``env`` names: for ``git add -A`` to see their changes (which
    are work), and for ``reset --hard`` to restore them."""
    done = run_git(["ls-files", "-v", "-z"], path, check=False, env=env)
    hidden = [entry[2:] for entry in done.stdout.split(b"\0")
              if len(entry) > 2 and (entry[:1] == b"S" or entry[:1].islower())
              and os.path.lexists(path / entry[2:].decode("utf-8", "surrogateescape"))]
    for flag in ("--no-skip-worktree", "--no-assume-unchanged"):  # one flag per call: the last wins
        if hidden:
            run_git(["update-index", flag, "-z", "--stdin"], path, env=env,
                    input_bytes=b"\0".join(hidden) + b"\0")


def _write_tree(path: Path, env: dict[str, str]) -> Oid | None:
    done = run_git(["write-tree"], path, check=False, env=env)
    if done.returncode != 0:
        return None
    return Oid(done.stdout.decode().strip())


def reset_hard_and_clean(path: Path) -> None:
    """``reset --hard`` first (it restores a staged deletion that clean alone
    would miss), then ``clean -fd``: ignored files stay."""
    unhide(path, {})
    run_git(["reset", "--hard", "-q"], path)
    run_git(["clean", "-f", "-d", "-q"], path)


def restore_deleted(path: Path, paths: list[str]) -> None:
    """Check the tracked ``paths`` out of the index again."""
    run_git(["checkout", "--pathspec-from-file=-", "--pathspec-file-nul"], path,
            input_bytes="\0".join(paths).encode("utf-8", "surrogateescape"),
            env={"GIT_LITERAL_PATHSPECS": "1"})


def index_ids(path: Path, paths: list[str]) -> dict[str, Oid | None]:
    """The blob each of ``paths`` has in the worktree's index (None: absent)."""
    index = open_worktree(path).index
    out: dict[str, Oid | None] = {}
    for name in paths:
        try:
            out[name] = from_pygit2(index[name].id)
        except KeyError:
            out[name] = None
    return out


def stage_blobs(path: Path, entries: list[tuple[str, Oid, int]]) -> None:
    """Put (path, blob, mode) entries into the worktree's index, no hook run."""
    if not entries:
        return
    lines = "".join(f"{mode:o} {blob}\t{name}\0" for name, blob, mode in entries)
    run_git(["update-index", "-z", "--index-info"], path, input_bytes=lines.encode("utf-8", "surrogateescape"))
    run_git(["update-index", "-q", "--refresh"], path, check=False)


def dirty_names(path: Path) -> list[str]:
    """The paths ``dirty_paths`` finds, as names only."""
    return [entry.path for entry in dirty_paths(path)]
