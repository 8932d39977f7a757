"""A worktree's files and index: what is uncommitted, captured or restored.

git itself decides what the work is (``git status``, ``git add -A`` into a
scratch index, ``write-tree``), so modes, symlinks, deletions, binary files
and odd names are taken exactly as git sees them and ignored files stay out.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import NamedTuple

from git_harn.errors import GitFailure, Refused
from git_harn.failpoints import failpoint
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


class KeptIndex(NamedTuple):
    """What ``stand_on`` checks before a kept capture's index becomes the worktree's."""

    index_seen: tuple[int, int, int] | None  # the worktree's index (inode, size, mtime_ns) before it was copied
    since: float  # a time before git read any file of the tree


class Capture(NamedTuple):
    """A worktree as found: its HEAD and, when asked, its trees."""

    head: Oid | None
    work_tree: Oid | None  # None: the tree was not captured
    index_tree: Oid | None  # only when it differs from HEAD and the work tree
    kept: KeptIndex | None = None  # the scratch index was kept (``keep_index``)


# Kernel file times come from a coarse clock that can lag the one Python
# reads by a tick; a second's margin makes every file written after the
# capture began count as written after its index.
_CLOCK_MARGIN = 1.0


def capture(path: Path, head_tree: Oid, with_tree: bool, head: Oid | None,
            keep_index: bool = False) -> Capture:
    """The worktree's index and working tree as trees, through a private copy
    of its index; nothing of the worktree itself changes. ``keep_index``: the
    copy, which then holds the working tree with fresh stat data, stays for
    ``stand_on`` (or ``drop_scratch_index``)."""
    if not with_tree:
        return Capture(head, None, None)
    admin = Path(open_worktree(path).path)
    # The scratch index lives in the worktree's own admin folder, so a crash
    # that leaves it behind is swept away when cleanup removes the worktree.
    scratch = admin / SCRATCH_INDEX
    kept = False
    since, seen = time.time() - _CLOCK_MARGIN, _identity(admin / "index")
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
    return Capture(head, work_tree, index_tree, KeptIndex(seen, since) if kept else None)


def _identity(path: Path) -> tuple[int, int, int] | None:
    """A file as git's writers leave it: each write is a new file renamed into place."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


def stand_on(admin: Path, commit: Oid, kept: KeptIndex) -> bool:
    """Make the worktree clean where it stands, without touching a file of
    it: the scratch index a kept capture left (the tree of ``commit``, with
    fresh stat data) becomes its index, and its HEAD holds ``commit``
    detached. Both are replaced the way git replaces them, under git's own
    ``index.lock`` and ``HEAD.lock`` (made exclusively: a git at work there
    holds one), by renames that move whatever the admin folder holds and
    never write through a link an agent planted there.

    False when a git holds either lock, when the worktree's index changed
    after the capture copied it (something staged since: adopting would
    drop that version), or when the scratch index is not a file of its own;
    nothing changed then, or (HEAD's lock held) only the index, which then
    holds what the salvage holds.

    The index's time is set to before git read the tree, so git compares
    every file written since by content, not by size and time (which it
    reads to the second): a rewrite while the capture ran still shows in
    ``git status`` [P1].

    ``admin`` is the worktree's folder as this repository registers it, not
    where the worktree's ``.git`` file (which the agent can rewrite) points:
    nothing of another repository is replaced. A scratch index that is not
    there (the capture was sent elsewhere) means False."""
    if not _adopt(admin, kept):
        return False
    failpoint("reclaim-after-index-adopted")
    # Each lock is held for the instant of its rename only: a git-harn killed
    # alone leaves a lock that its rerun, in the same process group, could
    # not prove dead.
    head_lock = admin / "HEAD.lock"
    if not _take_lock(head_lock, f"{commit}\n".encode()):
        return False
    try:
        os.replace(head_lock, admin / "HEAD")
    except OSError:
        head_lock.unlink(missing_ok=True)
        raise
    return True


def _adopt(admin: Path, kept: KeptIndex) -> bool:
    """The scratch index made the worktree's index, under ``index.lock``."""
    scratch, index, lock = admin / SCRATCH_INDEX, admin / "index", admin / "index.lock"
    if not _take_lock(lock, b""):
        scratch.unlink(missing_ok=True)
        return False
    adopted = False
    try:
        if _identity(index) != kept.index_seen:
            return False
        os.replace(scratch, lock)
        if not _stamp(lock, kept.since):
            return False
        os.replace(lock, index)
        adopted = True
        return True
    except FileNotFoundError:
        return False  # no scratch index
    finally:
        if not adopted:
            lock.unlink(missing_ok=True)
            scratch.unlink(missing_ok=True)


def _take_lock(lock: Path, content: bytes) -> bool:
    """git's lock file, made exclusively (never through a link) and written
    through the descriptor that made it."""
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, content)
    finally:
        os.close(fd)
    return True


def _stamp(index: Path, since: float) -> bool:
    """Give ``index`` the time ``since``, through a descriptor of a plain
    file with one link (never a link's target, never a file shared with
    another path)."""
    try:
        fd = os.open(index, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
            return False
        os.utime(fd, (since, since))
    finally:
        os.close(fd)
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
