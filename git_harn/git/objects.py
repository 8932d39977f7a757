"""Objects: blobs, trees and commits read and written through pygit2.

Every "read the file at a path of a commit" and every "blob, tree, commit"
sequence of git-harn is one of these methods, mixed into ``Repo``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

import pygit2

from git_harn.errors import GitFailure, TooLarge
from git_harn.files import size_words

_HEX_DIGITS = frozenset("0123456789abcdef")


class Oid(str):
    """A git object id as its lowercase hex (40 digits; 64 in a SHA-256
    repository): git-harn's own type, so nothing above git/ holds a pygit2
    object. Being a ``str`` it compares, hashes, sorts and serialises to JSON
    as its hex; a bad id fails here, once, with ValueError."""

    __slots__ = ()

    def __new__(cls, text: str) -> Oid:
        if type(text) is cls:
            return text
        hex_id = str(text).lower()
        if len(hex_id) not in (40, 64) or not _HEX_DIGITS.issuperset(hex_id):
            raise ValueError(f"not an object id: {str(text)[:80]!r}")
        return super().__new__(cls, hex_id)


def from_pygit2(oid: pygit2.Oid) -> Oid:
    """pygit2's id as git-harn's: every id git/ hands up passes here. Its
    hex is lowercase and whole already, so it is not checked again (history
    walks make millions of these)."""
    return str.__new__(Oid, str(oid))


def to_pygit2(oid: Oid | pygit2.Oid) -> pygit2.Oid:
    """git-harn's id as pygit2's, for a call into pygit2 (a plain str there
    could be taken for a ref name or a prefix)."""
    return oid if isinstance(oid, pygit2.Oid) else pygit2.Oid(hex=Oid(oid))


REGULAR_MODES = (0o100644, 0o100755)
BLOB_MODE = 0o100644
EXECUTABLE_MODE = 0o100755
TREE_MODE = 0o040000


class Signature(NamedTuple):
    name: str
    email: str
    time: int
    offset: int  # minutes east of UTC


class CommitInfo(NamedTuple):
    oid: Oid
    tree: Oid
    parents: tuple[Oid, ...]
    message: str
    time: int  # committer time, seconds since the epoch
    offset: int = 0  # the committer's minutes east of UTC


class Change(NamedTuple):
    """One path that differs between two trees."""

    path: str  # the new side's path (the old one for a deletion)
    status: str  # "A", "D", "M", "T" …
    new_id: Oid | None  # None for a deletion
    old_path: str = ""


def to_oid(text: str) -> Oid:
    """An object id from its full hex form; ValueError if it is not one."""
    return Oid(text)


def _info(commit: pygit2.Commit) -> CommitInfo:
    return CommitInfo(from_pygit2(commit.id), from_pygit2(commit.tree_id),
                      tuple(from_pygit2(parent) for parent in commit.parent_ids), commit.message,
                      commit.commit_time, commit.commit_time_offset)


def _pg_signature(sig: Signature) -> pygit2.Signature:
    return pygit2.Signature(sig.name, sig.email, sig.time, sig.offset)


class ObjectsMixin:
    _pg: pygit2.Repository

    # --- reading ------------------------------------------------------------

    def has(self, oid: Oid) -> bool:
        return to_pygit2(oid) in self._pg

    def missing_objects(self, hex_ids: Iterable[str]) -> list[str]:
        """Those of ``hex_ids`` the object database lacks (one lookup each, no
        object read); a name that is no full object id is left out."""
        odb = self._pg.odb
        missing = []
        for hex_id in hex_ids:
            try:
                if len(hex_id) in (40, 64) and not odb.exists(hex_id):
                    missing.append(hex_id)
            except ValueError:
                continue  # not hexadecimal
        return missing

    def commit_info(self, oid: Oid) -> CommitInfo:
        obj = self._pg.get(to_pygit2(oid))
        if not isinstance(obj, pygit2.Commit):
            raise GitFailure(f"{oid} is not a commit")
        return _info(obj)

    def tree_id(self, commit: Oid | None) -> Oid:
        """The tree of ``commit`` (the empty tree for None)."""
        return self.empty_tree() if commit is None else self.commit_info(commit).tree

    def empty_tree(self) -> Oid:
        return from_pygit2(self._pg.TreeBuilder().write())

    def _tree(self, oid: Oid | pygit2.Oid) -> pygit2.Tree | None:
        obj = self._pg.get(to_pygit2(oid))
        if isinstance(obj, pygit2.Commit):
            return obj.tree
        return obj if isinstance(obj, pygit2.Tree) else None

    def entry(self, tree_or_commit: Oid, path: str) -> tuple[Oid, int] | None:
        """(object id, mode) at ``path`` of a tree or a commit's tree, or None."""
        tree = self._tree(tree_or_commit)
        if tree is None:
            return None
        try:
            found = tree[path]
        except (KeyError, ValueError):
            return None
        return from_pygit2(found.id), int(found.filemode)

    def read_file(self, tree_or_commit: Oid, path: str, limit: int | None = None,
                  regular_only: bool = False, whole: bool = True) -> bytes | None:
        """The bytes of the blob at ``path``, or None when there is none (or,
        ``regular_only``, when it is a symlink or a gitlink). A blob larger
        than ``limit`` is TooLarge, never cut: a prefix written back would
        lose the rest [P5]. ``whole=False`` is a peek at its first ``limit``
        bytes, for readers that never write back."""
        found = self.entry(tree_or_commit, path)
        if found is None or (regular_only and found[1] not in REGULAR_MODES):
            return None
        blob = self._pg.get(to_pygit2(found[0]))
        if not isinstance(blob, pygit2.Blob):
            return None
        if limit is not None and blob.size > limit:
            if whole:
                raise TooLarge(f"{path} at {str(tree_or_commit)[:12]} is larger than {size_words(limit)}")
            return blob.data[:limit]
        return blob.data

    def blob_size(self, oid: Oid) -> int:
        """The size of blob ``oid``, read from its object's header alone: a
        reader that bounds what it reads asks this first, since reading a
        blob inflates it whole (zeros compress a thousandfold)."""
        try:
            kind, size = self._pg.odb.read_header(to_pygit2(oid))
        except (KeyError, ValueError):
            raise GitFailure(f"{oid} is not a blob") from None
        if kind != pygit2.enums.ObjectType.BLOB:
            raise GitFailure(f"{oid} is not a blob")
        return int(size)

    def read_blob(self, oid: Oid) -> bytes:
        blob = self._pg.get(to_pygit2(oid))
        if not isinstance(blob, pygit2.Blob):
            raise GitFailure(f"{oid} is not a blob")
        return blob.data

    def list_folder(self, tree_or_commit: Oid, folder: str) -> list[tuple[str, int]]:
        """(name, mode) of the entries directly inside ``folder`` ([] if absent)."""
        found = self.entry(tree_or_commit, folder) if folder else None
        sub = self._tree(found[0]) if found is not None else self._tree(tree_or_commit) if not folder else None
        if sub is None:
            return []
        return sorted((e.name or "", int(e.filemode)) for e in sub)

    def names_in(self, tree_or_commit: Oid, folder: str = "") -> tuple[list[str], list[str]]:
        """The names of the files and of the folders directly inside
        ``folder``, unsorted: the cheap listing of a tree of 100,000 entries."""
        found = self.entry(tree_or_commit, folder) if folder else None
        tree = self._tree(found[0]) if found is not None else self._tree(tree_or_commit) if not folder else None
        files: list[str] = []
        folders: list[str] = []
        for item in tree if tree is not None else ():
            (folders if isinstance(item, pygit2.Tree) else files).append(item.name or "")
        return files, folders

    def flatten(self, tree: Oid) -> dict[str, tuple[str, int]]:
        """path -> (object id, mode) for every blob and gitlink in ``tree``."""
        out: dict[str, tuple[str, int]] = {}
        root = self._tree(tree)
        pending: list[tuple[str, pygit2.Tree]] = [("", root)] if root is not None else []
        while pending:
            prefix, current = pending.pop()
            for item in current:
                name = prefix + (item.raw_name or b"").decode("utf-8", "surrogateescape")
                if item.filemode == pygit2.enums.FileMode.TREE:
                    sub = self._tree(item.id)
                    if sub is not None:
                        pending.append((name + "/", sub))
                else:
                    out[name] = (str(item.id), int(item.filemode))
        return out

    def diff_trees(self, old: Oid, new: Oid) -> list[Change]:
        """The paths that differ from tree (or commit) ``old`` to ``new``."""
        old_tree, new_tree = self._tree(old), self._tree(new)
        if old_tree is None or new_tree is None:
            raise GitFailure(f"cannot compare {old} with {new}: not trees")
        changes = []
        for delta in old_tree.diff_to_tree(new_tree).deltas:
            deleted = delta.status == pygit2.enums.DeltaStatus.DELETED
            path = (delta.old_file if deleted else delta.new_file).raw_path.decode("utf-8", "surrogateescape")
            old_path = delta.old_file.raw_path.decode("utf-8", "surrogateescape")
            changes.append(Change(path, delta.status_char(), None if deleted else from_pygit2(delta.new_file.id),
                                  old_path))
        return changes

    def changed_paths(self, old: Oid, news: list[Oid | None]) -> list[str]:
        """Every path (either side of a change) that differs between ``old``
        and any of ``news``, sorted; undecodable bytes shown escaped."""
        found: set[str] = set()
        for new in news:
            if new is None:
                continue
            for change in self.diff_trees(old, new):
                for side in (change.old_path, change.path):
                    found.add(side.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))
        return sorted(found)

    # --- history --------------------------------------------------------------

    def contains(self, tip: Oid, other: Oid) -> bool:
        """Whether ``other`` is ``tip`` or one of its ancestors."""
        if tip == other:
            return True
        try:
            return bool(self._pg.descendant_of(to_pygit2(tip), to_pygit2(other)))
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise GitFailure(f"cannot compare {str(tip)[:12]} with {str(other)[:12]}: {exc}") from exc

    def merge_base(self, one: Oid, two: Oid) -> Oid | None:
        try:
            found = self._pg.merge_base(to_pygit2(one), to_pygit2(two))
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise GitFailure(f"cannot find a merge base of {str(one)[:12]} and {str(two)[:12]}: {exc}") from exc
        return None if found is None else from_pygit2(found)

    def merge_trees(self, ancestor: Oid, ours: Oid, theirs: Oid) -> Oid | list[str]:
        """The three-way merge of two trees (or commits' trees) from
        ``ancestor``, in memory: the merged tree, or the conflicting paths
        (sorted), as ``git merge-tree`` would find them; nothing is written
        but the tree."""
        base, mine, other = (self._tree(oid) for oid in (ancestor, ours, theirs))
        if base is None or mine is None or other is None:
            raise GitFailure("a three-way merge needs three trees")
        try:
            index = self._pg.merge_trees(base, mine, other)
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise GitFailure(f"cannot merge {str(theirs)[:12]} onto {str(ours)[:12]}: {exc}") from exc
        if index.conflicts is not None:
            paths = {entry.path for sides in index.conflicts for entry in sides if entry is not None}
            return sorted(paths)
        return from_pygit2(index.write_tree(self._pg))

    def ahead_behind(self, tip: Oid, base: Oid) -> tuple[int, int]:
        ahead, behind = self._pg.ahead_behind(to_pygit2(tip), to_pygit2(base))
        return int(ahead), int(behind)

    def walk(self, tip: Oid, hide: Oid | Iterable[Oid] | None = None, limit: int | None = None,
             by_time: bool = False) -> Iterator[CommitInfo]:
        """Commits reachable from ``tip`` and from none of ``hide``, newest
        first (``by_time``: ties between branches ordered by commit time).
        GitFailure when one of them is missing or is not a commit."""
        order = pygit2.enums.SortMode.TOPOLOGICAL | (pygit2.enums.SortMode.TIME if by_time else 0)
        hidden = [] if hide is None else [hide] if isinstance(hide, str) else list(hide)
        try:
            walker = self._pg.walk(to_pygit2(tip), order)
            for other in hidden:
                walker.hide(to_pygit2(other))
            for count, commit in enumerate(walker):
                if limit is not None and count >= limit:
                    return
                yield _info(commit)
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise GitFailure(f"the history of {str(tip)[:12]} cannot be read: {exc}") from exc

    # --- writing --------------------------------------------------------------

    def write_blob(self, data: bytes) -> Oid:
        return from_pygit2(self._pg.create_blob(data))

    def tree_with(self, base: Oid | None, files: Mapping[str, tuple[bytes | Oid, int]]) -> Oid:
        """Tree ``base`` (a tree or commit; None: empty) with ``files``
        (path -> (content or blob id, mode)) put in, at any depth."""
        blobs = {path: (data if isinstance(data, Oid) else self.write_blob(data), mode)
                 for path, (data, mode) in files.items()}
        base_tree = self._tree(base) if base is not None else None
        if all("/" not in path for path in blobs):
            builder = self._pg.TreeBuilder(base_tree) if base_tree is not None else self._pg.TreeBuilder()
            for path, (blob, mode) in blobs.items():
                builder.insert(path, to_pygit2(blob), mode)
            return from_pygit2(builder.write())
        index = pygit2.Index()
        if base_tree is not None:
            index.read_tree(base_tree)
        for path, (blob, mode) in blobs.items():
            index.add(pygit2.IndexEntry(path, to_pygit2(blob), pygit2.enums.FileMode(mode)))
        return from_pygit2(index.write_tree(self._pg))

    def tree_without(self, base: Oid, paths: Iterable[str]) -> Oid:
        """Tree ``base`` (a tree or commit) with ``paths`` (at any depth) taken out."""
        index = pygit2.Index()
        base_tree = self._tree(base)
        if base_tree is not None:
            index.read_tree(base_tree)
        for path in paths:
            if path in index:
                index.remove(path)
        return from_pygit2(index.write_tree(self._pg))

    def make_commit(self, tree: Oid, parents: list[Oid], message: str, author: Signature,
                    committer: Signature | None = None) -> Oid:
        """A commit object (no ref moves, no hook runs)."""
        made = self._pg.create_commit(None, _pg_signature(author), _pg_signature(committer or author),
                                      message, to_pygit2(tree), [to_pygit2(parent) for parent in parents])
        return from_pygit2(made)

    def commit_files(self, files: Mapping[str, tuple[bytes | Oid, int]], message: str,
                     parents: list[Oid], author: Signature, base: Oid | None = None) -> Oid:
        """Blob, tree, commit in one step: ``base``'s tree with ``files`` put in."""
        return self.make_commit(self.tree_with(base, files), parents, message, author)
