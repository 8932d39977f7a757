"""Linked worktrees: their registrations, admin folders and HEAD files.

git keeps a linked worktree's admin folder in ``<common dir>/worktrees/<name>``
(``gitdir`` points back at the worktree's ``.git`` file, ``HEAD`` names what it
has checked out, ``locked`` marks it as not to be pruned). git-harn reads those
files here and nowhere else.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

import pygit2

from git_harn.errors import GitFailure
from git_harn.git.objects import Oid, from_pygit2, to_pygit2
from git_harn.git.repo import Repo
from git_harn.git.run import run_git


class Listed(NamedTuple):
    """One entry of ``git worktree list``: its path, the branch ref it has
    checked out (None: detached, bare, or HEAD unreadable), and whether it is
    the bare main entry of a bare repository."""

    path: Path
    branch: str | None
    bare: bool = False


def listed_worktrees(repo: Repo) -> list[Listed]:
    """What ``git worktree list`` lists, main entry first, read from the admin
    files as git reads them: workflows ask several times per task, and a
    ``git`` process each time cost more than everything else in the listing.

    The main entry is the common git dir (real path) without a trailing
    ``/.git`` (git's ``get_main_worktree``). A linked one is the ``gitdir``
    file of ``worktrees/<id>``, without its trailing ``/.git``; a relative
    one is relative to that admin folder; an entry whose ``gitdir`` is
    missing or empty is left out, as git leaves it out. Its folder need not
    exist (git lists it as prunable). Linked ones are sorted by path as git
    sorts them. With the reftable ref backend the HEAD
    files name no branch, so git itself is asked there."""
    common = repo.common_dir
    if _reftable(repo):
        return _listed_by_git(repo)
    main = os.path.realpath(common)
    bare = _main_is_bare(repo)
    out = [Listed(Path(main.removesuffix("/.git")), None if bare else _head_branch(common), bare)]
    try:
        entries = list(os.scandir(common / "worktrees"))
    except OSError:
        entries = []
    linked = []
    for entry in entries:
        admin = Path(entry.path)
        try:
            text = (admin / "gitdir").read_text("utf-8", "surrogateescape")
        except (OSError, ValueError):
            continue
        if not text:
            continue
        path = text.rstrip().removesuffix("/.git")
        if not os.path.isabs(path):
            path = os.path.realpath(os.path.join(admin, path))
        linked.append(Listed(Path(path), _head_branch(admin)))
    # git sorts the linked ones by path (fspathcmp: without case on a
    # case-insensitive file system) and keeps the main one first.
    fold = repo.config_bool("core.ignorecase", False)
    linked.sort(key=lambda e: os.fsencode(e.path).lower() if fold else os.fsencode(e.path))
    return out + linked


def _head_branch(git_dir: Path) -> str | None:
    """The ref a HEAD file names (None: detached or unreadable)."""
    with suppress(OSError):  # core.preferSymlinkRefs: HEAD is a symlink to the ref, as git reads it
        linked = os.readlink(git_dir / "HEAD")
        if linked.startswith("refs/"):
            return linked
    try:
        head = (git_dir / "HEAD").read_text("utf-8", "surrogateescape")
    except (OSError, ValueError):
        return None
    if not head.startswith("ref:"):
        return None
    return head[len("ref:"):].strip() or None


def _main_is_bare(repo: Repo) -> bool:
    """git lists the main entry as bare when core.bare is true where git runs
    (the common git dir); unset, when no core.worktree gives it a work tree.
    A handle opened in the common dir read core.bare there already; one opened
    in a linked worktree is never bare itself, so the config says."""
    if repo.git_dir == repo.common_dir and repo.is_bare:
        return True
    if repo.config("core.bare") is None:
        return repo.config("core.worktree") is None
    return repo.config_bool("core.bare", False)


def _reftable(repo: Repo) -> bool:
    return (repo.common_dir / "reftable").is_dir() or (
        (repo.config("extensions.refStorage") or "").lower() == "reftable")


def _listed_by_git(repo: Repo) -> list[Listed]:
    """``git worktree list --porcelain -z``, parsed."""
    out: list[Listed] = []
    for record in repo._git("worktree", "list", "--porcelain", "-z").split("\0\0"):
        fields = [field for field in record.split("\0") if field]
        if not fields or not fields[0].startswith("worktree "):
            continue
        branch = next((f[len("branch "):] for f in fields if f.startswith("branch ")), None)
        out.append(Listed(Path(fields[0][len("worktree "):]), branch, not out and "bare" in fields))
    return out


def registered_worktrees(repo: Repo) -> dict[Path, str | None]:
    """Registered worktree paths and the branch ref each has checked out."""
    return {entry.path: entry.branch for entry in listed_worktrees(repo)}


def main_worktree(repo: Repo) -> tuple[Path | None, list[Path]]:
    """The main worktree (None for a bare repository) and the linked ones:
    git lists the main one first."""
    listed = listed_worktrees(repo)
    if not listed:
        return None, []
    return (None if listed[0].bare else listed[0].path), [entry.path for entry in listed[1:]]


def worktree_with_branch(repo: Repo, ref: str) -> Path | None:
    """The registered worktree that has ``ref`` checked out, if any."""
    return next((path for path, branch in registered_worktrees(repo).items() if branch == ref), None)


def admin_dir(repo: Repo, path: Path) -> Path | None:
    """The worktree's folder in the common git dir (``worktrees/<name>``)."""
    admin_root = repo.common_dir / "worktrees"
    if not admin_root.is_dir():
        return None
    wanted = os.path.normpath(os.path.realpath(os.path.join(path, ".git")))
    for admin in admin_root.iterdir():
        try:
            gitdir = (admin / "gitdir").read_text().strip()
        except OSError:
            continue
        if os.path.normpath(os.path.realpath(gitdir)) == wanted:
            return admin
    return None


def is_locked(admin: Path | None) -> bool:
    """``git worktree lock`` was used on it: git will not prune it."""
    return admin is not None and (admin / "locked").exists()


def lock_reason(admin: Path | None) -> str | None:
    """The reason ``git worktree lock --reason`` gave (empty when none; None: not locked)."""
    if not is_locked(admin):
        return None
    assert admin is not None
    try:
        return (admin / "locked").read_text("utf-8", "replace").strip()
    except OSError:
        return ""


def detached_head(admin: Path | None) -> Oid | None:
    """The commit a worktree's HEAD holds when it is detached (None otherwise).
    A detached HEAD is not a ref: commits only it reaches die with the worktree."""
    if admin is None:
        return None
    try:
        head = (admin / "HEAD").read_text().strip()
    except OSError:
        return None
    if head.startswith("ref:") or len(head) not in (40, 64):
        return None
    try:
        return Oid(head)
    except ValueError:
        return None


def checked_out_branches(repo: Repo) -> Iterator[tuple[Path, str]]:
    """(worktree, branch ref) for every worktree that has a branch checked out,
    read from the HEAD files (as ``git worktree list`` does, without a process)."""
    heads = [] if repo.is_bare else [(repo.common_dir, repo.common_dir.parent)]
    admin_root = repo.common_dir / "worktrees"
    if admin_root.is_dir():
        for admin in admin_root.iterdir():
            with suppress(OSError):
                heads.append((admin, Path((admin / "gitdir").read_text().strip()).parent))
    for admin, path in heads:
        with suppress(OSError):
            head = (admin / "HEAD").read_text().strip()
            if head.startswith("ref: "):
                yield path, head[len("ref: "):]


def linked_admin(worktree: Path) -> Path:
    """The admin folder a worktree's ``.git`` file points at (OSError if none)."""
    text = (worktree / ".git").read_text().strip()
    return worktree / text.removeprefix("gitdir:").strip()  # a relative one is relative to the worktree


def registered_here(repo: Repo, path: Path) -> bool:
    """``path/.git`` names a git dir that exists, is this repository's, and
    whose ``gitdir`` file points back at ``path``."""
    if not (path / ".git").is_file():
        return False
    try:
        linked = linked_admin(path)
    except OSError:
        return False
    admin = admin_dir(repo, path)
    return admin is not None and linked.is_dir() and os.path.samefile(admin, linked)


def registered_elsewhere(repo: Repo, path: Path) -> Path | None:
    """The common git dir of another repository whose linked worktree ``path``
    is (its ``.git`` file names that repository's admin folder, whose ``gitdir``
    points back at ``path``); None when it is not another repository's."""
    try:
        admin = linked_admin(path)
        common = Path(os.path.normpath(admin / (admin / "commondir").read_text().strip()))
        gitdir = admin / (admin / "gitdir").read_text().strip()  # an absolute one stays as it is
        if os.path.samefile(common, repo.common_dir):
            return None
        # An admin folder copied along with its repository points at the
        # original worktree too; only the one the folder itself names counts.
        if not os.path.samefile(gitdir, path / ".git"):
            return None
    except (OSError, ValueError):
        return None
    return common


def linked_problem(repo: Repo, path: Path, ask_git: bool = True) -> str | None:
    """Why ``path`` is no longer the linked worktree of this repository that
    was made there (None: it still is). Its ``.git`` must be a file naming an
    admin folder of this repository whose ``gitdir`` names ``path/.git``, and
    (``ask_git``) ``git rev-parse --git-common-dir`` run there must answer
    this repository: else git run in it would act on another repository, or
    on the one that encloses the folder."""
    dot_git = path / ".git"
    if not os.path.lexists(dot_git):
        return "its .git file is missing"
    if dot_git.is_dir() and not dot_git.is_symlink():
        return "its .git is a folder: a repository of its own replaced the link to this one"
    try:
        linked = linked_admin(path)
    except (OSError, UnicodeDecodeError):
        return "its .git is not a readable 'gitdir:' file"
    admins = repo.common_dir / "worktrees"
    try:
        back = (linked / "gitdir").read_text().strip()
        ours = linked.parent.is_dir() and os.path.samefile(linked.parent, admins)
    except OSError:
        return f"its .git names {linked}, which is not an admin folder of this repository"
    if not ours:
        return f"its .git names {linked}, which is not an admin folder of this repository"
    if os.path.normpath(os.path.realpath(back)) != os.path.normpath(os.path.realpath(dot_git)):
        return f"its admin folder {linked} is registered for {back}, not for this folder"
    if not ask_git:
        return None
    done = run_git(["rev-parse", "--path-format=absolute", "--git-common-dir"], path, check=False)
    seen = done.stdout.decode("utf-8", "surrogateescape").strip()
    try:
        same = done.returncode == 0 and bool(seen) and os.path.samefile(seen, repo.common_dir)
    except OSError:
        same = False
    return None if same else f"git run there sees {seen or 'no repository'}, not this repository"


# Lock files git (and git-harn's scratch index) make in a worktree's admin folder.
ADMIN_LOCKS = ("index.lock", "harn-salvage-index.lock", "HEAD.lock")


def admin_locks(admin: Path) -> list[Path]:
    """The lock files present in a worktree's admin folder."""
    return [admin / name for name in ADMIN_LOCKS if os.path.lexists(admin / name)]


def prune_registration(repo: Repo, path: Path) -> bool:
    """Forget the worktree registered at ``path`` if its folder is missing,
    as ``git worktree prune`` would for that one entry. A locked entry stays.
    The caller holds the worktrees lock."""
    admin = admin_dir(repo, path)
    if os.path.lexists(path) or admin is None or is_locked(admin):
        return False
    shutil.rmtree(admin, ignore_errors=True)
    return True


def add_worktree(repo: Repo, path: Path, branch: str) -> None:
    """``git worktree add <path> <branch>`` (the caller holds the worktrees lock)."""
    repo._git("worktree", "add", str(path), branch)


def add_detached(repo: Repo, path: Path, commit: Oid) -> None:
    repo._git("worktree", "add", "--detach", "--quiet", str(path), str(commit))


def remove_worktree(repo: Repo, path: Path) -> None:
    """``git worktree remove`` without force: git refuses a dirty worktree [W3]."""
    repo._git("worktree", "remove", str(path))


def remove_scratch(repo: Repo, path: Path) -> None:
    """Remove one of git-harn's own scratch checkouts of a committed tip,
    forced: nothing in one is anyone's only copy of anything."""
    run_git(["worktree", "remove", "--force", str(path)], repo.cli_cwd, check=False)


def discard_scratch(repo: Repo, path: Path) -> None:
    """Remove one of git-harn's own scratch checkouts and its registration
    without running git in it (git may refuse to, with its locks left by a
    killed process). Only for checkouts of committed content, which are
    nobody's work. The caller holds the worktrees lock."""
    admin = admin_dir(repo, path)
    if os.path.lexists(path) and not path.is_symlink():
        shutil.rmtree(path)
    if admin is not None:
        shutil.rmtree(admin, ignore_errors=True)


def open_worktree(path: Path) -> pygit2.Repository:
    try:
        return pygit2.Repository(str(path))
    except pygit2.GitError as exc:
        raise GitFailure(f"cannot open the worktree at {path}: {exc}") from exc


def head_of(path: Path) -> Oid | None:
    """The commit the worktree at ``path`` has checked out (None: unborn or missing)."""
    try:
        target = open_worktree(path).head.target
    except (pygit2.GitError, KeyError, ValueError, GitFailure):
        return None
    return from_pygit2(target) if isinstance(target, pygit2.Oid) else None


def head_ref_of(path: Path) -> str | None:
    """The branch ref the worktree's HEAD names (None: detached or unreadable)."""
    try:
        head = open_worktree(path).lookup_reference("HEAD")
    except (KeyError, pygit2.GitError, GitFailure):
        return None
    if head.type == pygit2.enums.ReferenceType.SYMBOLIC:
        return str(head.target)
    return None




def point_head(path: Path, ref: str) -> None:
    """Make the worktree's HEAD name ``ref`` (no files change), in-process
    as ``git symbolic-ref HEAD <ref>`` would."""
    try:
        open_worktree(path).set_head(ref)
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise GitFailure(f"cannot point HEAD of {path} at {ref}: {exc}") from exc


def branch_tip(path: Path, ref: str) -> Oid | None:
    """Where ``ref`` points, read through the worktree at ``path``."""
    try:
        found = open_worktree(path).references.get(ref)
    except (pygit2.GitError, ValueError, GitFailure):
        return None
    target = found.target if found is not None else None
    return from_pygit2(target) if isinstance(target, pygit2.Oid) else None


def detach_head(path: Path, commit: Oid) -> None:
    """Detach the worktree's HEAD at ``commit`` (no files change)."""
    open_worktree(path).set_head(to_pygit2(commit))
