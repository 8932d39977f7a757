"""The repository handle: discovery, config, objects and compare-and-swap refs."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from git_harn.errors import BadInput, GitFailure, RaceLost
from git_harn.git.config import (
    REPOSITORY_SCOPES,
    RUN_OPERATOR_KEYS,
    RUN_OPERATOR_SPELLING,
    GitConfig,
    as_bool,
    normal_key,
)
from git_harn.git.inflight import run_in_flight
from git_harn.git.objects import ObjectsMixin, Oid, from_pygit2, to_oid, to_pygit2
from git_harn.git.refwatch import UNCHECKED, RefEdit, host_writes
from git_harn.git.run import error_line, run_git

# packed-refs of more than this (about 3,000 refs) has git, not libgit2, write refs.
BIG_PACKED_REFS = 256 * 1024


class Unchecked:
    """The old value of a ref update that takes the ref whatever it holds."""

    def __repr__(self) -> str:
        return "ANY"


ANY = Unchecked()


@dataclass
class Repo(ObjectsMixin):
    _pg: pygit2.Repository
    git_dir: Path
    common_dir: Path
    workdir: Path | None
    invoked_from: Path
    # False when GIT_WORK_TREE names a folder from which git would not find this repository.
    own_workdir: bool = True
    _config_cache: GitConfig | None = field(default=None, repr=False, compare=False)

    def reopen(self) -> Repo:
        """A handle of its own on the same repository, for another thread
        (libgit2's are not to be shared between threads), that shares this
        one's config: git reads the same files for both, and a write through
        either makes both read them again."""
        return Repo(_pg=_open(str(self.git_dir)), git_dir=self.git_dir, common_dir=self.common_dir,
                    workdir=self.workdir, invoked_from=self.invoked_from, own_workdir=self.own_workdir,
                    _config_cache=self._config)

    # --- the git CLI -------------------------------------------------------

    @property
    def cli_cwd(self) -> Path:
        """Where to run git for repository-wide commands: the common git dir,
        which outlives every worktree (a command run from inside a workspace
        may remove the folder it was started in)."""
        return self.common_dir

    def _git(
        self,
        *args: str,
        cwd: Path | None = None,
        check: bool = True,
        input_bytes: bytes | None = None,
        env: dict[str, str] | None = None,
    ) -> str:
        done = run_git(args, cwd or self.cli_cwd, check=check, input_bytes=input_bytes, env=env)
        return done.stdout.decode("utf-8", "surrogateescape")

    def git_path(self, name: str) -> Path:
        """Where git keeps ``name`` (``git rev-parse --git-path``: honours
        core.hooksPath for hooks), asked where the command was started, as
        the operator's own git would be; a relative answer is taken from there."""
        where = self.workdir or self.git_dir
        out = self._git("rev-parse", "--git-path", name, cwd=where).strip()
        if not out:
            raise GitFailure(f"git rev-parse --git-path {name} printed nothing")
        path = Path(out)
        return Path(os.path.normpath(path if path.is_absolute() else where / path))

    @property
    def is_bare(self) -> bool:
        return bool(self._pg.is_bare)

    @property
    def is_shallow(self) -> bool:
        return bool(self._pg.is_shallow)

    def head_branch(self) -> str | None:
        """The ref HEAD names (None when detached); BadInput while unborn."""
        try:
            return None if self._pg.head_is_detached else str(self._pg.head.name)
        except pygit2.GitError:
            raise BadInput("HEAD has no commit yet; pass --base") from None

    def has_remote(self, name: str) -> bool:
        """Whether git knows remote ``name`` (its url may come from ``git -c``)."""
        return self.config(f"remote.{name}.url") is not None

    # --- config (as git reads it: git_harn.git.config) -----------------------

    @property
    def _config(self) -> GitConfig:
        if self._config_cache is None:
            self._config_cache = GitConfig(self.cli_cwd)
        return self._config_cache

    def _values(self, key: str) -> list[str | None]:
        """Every value of ``key``; during a run, of a key in RUN_OPERATOR_KEYS,
        those of the operator's scopes alone [T1]."""
        if run_in_flight() and normal_key(key) in RUN_OPERATOR_KEYS:
            return self._config.operator_values(key)
        return self._config.values(key)

    def config(self, key: str) -> str | None:
        """The value git uses for ``key`` (the last one set), or None."""
        values = self._values(key)
        if not values:
            return None
        last = values[-1]
        return "true" if last is None else last

    def config_path(self, key: str) -> str | None:
        """A path setting's value, or None: set with no value it is not a
        path (git refuses it as missing a value), so it counts as unset."""
        values = self._values(key)
        return values[-1] if values else None

    def config_all(self, key: str) -> list[str]:
        return ["true" if v is None else v for v in self._values(key)]

    def operator_config(self, key: str) -> str | None:
        """The value of ``key`` from the operator's own config only (system,
        global, ``git -c``), never the repository's ``config`` or
        ``config.worktree``, which an agent in a worktree can write [T1]."""
        values = self._config.operator_values(key)
        if not values:
            return None
        last = values[-1]
        return "true" if last is None else last

    def operator_config_all(self, key: str) -> list[str]:
        return ["true" if v is None else v for v in self._config.operator_values(key)]

    def operator_config_bool(self, key: str, default: bool) -> bool:
        value = self.operator_config(key)
        return default if value is None else as_bool(key, value)

    def repository_config_keys(self) -> list[str]:
        """The keys the repository's own config files set (``local`` and
        ``worktree`` scopes, includes followed): what an agent could have written."""
        return self._config.keys_in(REPOSITORY_SCOPES)

    def repository_config_entries(self) -> list[tuple[str, str, str | None]]:
        """(key, scope, value) of every entry of the repository's own config
        files (``local``, ``worktree``), in git's order."""
        return [(key, scope, value) for key in self._config.keys_in(REPOSITORY_SCOPES)
                for scope, value in self._config.scoped(key) if scope in REPOSITORY_SCOPES]

    def run_ignored_settings(self) -> list[dict[str, str]]:
        """{key, scope} of each RUN_OPERATOR_KEYS setting the repository's own
        config sets: a run ignores it, as an agent could have written it [T1]."""
        found = []
        for key in self._config.keys_in(REPOSITORY_SCOPES):
            if key in RUN_OPERATOR_KEYS:
                scopes = {scope for scope, _ in self._config.scoped(key) if scope in REPOSITORY_SCOPES}
                found += [{"key": RUN_OPERATOR_SPELLING[key], "scope": scope} for scope in sorted(scopes)]
        return found

    def config_bool(self, key: str, default: bool) -> bool:
        value = self.config(key)
        return default if value is None else as_bool(key, value)

    def config_int(self, key: str, default: int) -> int:
        value = self.config(key)
        try:
            return int(value) if value is not None else default
        except ValueError as exc:
            raise BadInput(f"git config {key} is not a number: {value!r}") from exc

    def ensure_config_value(self, key: str, value: str) -> None:
        """Add ``value`` to the multi-valued local ``key`` unless it is there."""
        if value not in self.config_all(key):
            self._git("config", "--add", key, value)
            self._config.forget()

    # --- objects -------------------------------------------------------------

    def resolve_commit(self, rev: str) -> Oid:
        """The commit ``rev`` names, or BadInput."""
        if not rev or rev.startswith("-"):
            raise BadInput(f"not a valid revision: {rev!r}")
        try:
            obj = self._pg.revparse_single(rev)
            return from_pygit2(obj.peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
            raise BadInput(f"unknown revision: {rev}") from exc

    def packed_ref(self, name: str) -> str | None:
        """The object id packed-refs holds for ``name``, if any."""
        try:
            text = (self.common_dir / "packed-refs").read_text("utf-8", "surrogateescape")
        except OSError:
            return None
        for line in text.splitlines():
            oid, _, ref_name = line.partition(" ")
            if ref_name == name and not oid.startswith(("#", "^")):
                return oid
        return None

    def packed_refs_locked(self) -> bool:
        """Whether a git holds ``packed-refs.lock`` now: git's own ref
        transaction around a hook, say. Any ref deletion needs that lock
        (git waits for it up to core.packedRefsTimeout, then fails)."""
        return (self.common_dir / "packed-refs.lock").exists()

    def grep_log(self, tip: Oid, pattern: str) -> list[tuple[str, str]]:
        """(commit, message) of the commits from ``tip`` whose message matches
        the extended regular expression ``pattern``, newest first."""
        out = self._git("log", "-z", "--format=%H%n%B", "-E", f"--grep={pattern}", str(tip))
        found = []
        for item in filter(None, out.split("\0")):
            commit, _, message = item.partition("\n")
            found.append((commit.strip(), message))
        return found

    # --- refs (every write is a compare-and-swap) [P3] ---------------------

    def ref_oid(self, name: str) -> Oid | None:
        try:
            ref = self._pg.references.get(name)
        except (pygit2.GitError, ValueError):
            return None
        if ref is None:
            return None
        target = ref.resolve().target
        return from_pygit2(target) if isinstance(target, pygit2.Oid) else None

    def create_ref(self, name: str, oid: Oid, message: str) -> None:
        """Create ``name`` at ``oid``; RaceLost if it already exists."""
        with host_writes([RefEdit(name, str(oid), None)]):
            self._create_ref(name, oid, message)

    def _create_ref(self, name: str, oid: Oid, message: str) -> None:
        if self._packed_refs_are_big():
            self._write_ref_with_git(name, oid, None, message)
            return
        try:
            self._pg.create_reference_direct(name, to_pygit2(oid), False, message=message)
        except pygit2.AlreadyExistsError as exc:
            raise RaceLost(f"{name} was created by someone else") from exc
        except (pygit2.GitError, ValueError, OSError) as exc:  # OSError: a folder of refs in the way
            raise GitFailure(f"cannot create {name}: {exc}") from exc

    def move_ref(
        self, name: str, new: Oid, old: Oid | None, message: str
    ) -> None:
        """Point ``name`` at ``new`` if it is still at ``old`` (None: absent)."""
        if old is None:
            self.create_ref(name, new, message)
            return
        with host_writes([RefEdit(name, str(new), str(old))]):
            self._move_ref(name, new, old, message)

    def _move_ref(self, name: str, new: Oid, old: Oid, message: str) -> None:
        if self._packed_refs_are_big():
            self._write_ref_with_git(name, new, old, message)
            return
        ref = self._pg.references.get(name)
        if ref is None or ref.target != to_pygit2(old):
            raise RaceLost(f"{name} moved since it was read")
        try:
            ref.set_target(to_pygit2(new), message)
        except pygit2.GitError as exc:
            if "does not match" in str(exc):
                raise RaceLost(f"{name} moved since it was read") from exc
            raise GitFailure(f"cannot update {name}: {exc}") from exc
        except OSError as exc:  # its lock file is held: another writer is at it, or was killed there
            raise GitFailure(f"cannot update {name}: {exc}") from exc

    def _packed_refs_are_big(self) -> bool:
        """libgit2 reads all of packed-refs, and checks each packed ref's
        name, for every ref it writes: with a year of run records that is
        hundreds of milliseconds a write. git finds its place in packed-refs
        by binary search; past BIG_PACKED_REFS its process is the cheaper writer."""
        try:
            return (self.common_dir / "packed-refs").stat().st_size > BIG_PACKED_REFS
        except OSError:
            return False

    def _write_ref_with_git(self, name: str, new: Oid, old: Oid | None, message: str) -> None:
        """``git update-ref`` with the same compare-and-swap (and, as every
        git git-harn runs, no hooks: like a libgit2 write)."""
        expected = str(old) if old is not None else "0" * len(str(new))
        done = run_git(["update-ref", "-m", message, name, str(new), expected], self.cli_cwd, check=False)
        if done.returncode == 0:
            return
        why = error_line(done.stderr)
        if old is None and "reference already exists" in why:
            raise RaceLost(f"{name} was created by someone else")
        if old is not None and ("but expected" in why or "unable to resolve reference" in why):
            raise RaceLost(f"{name} moved since it was read")
        raise GitFailure(f"cannot {'create' if old is None else 'update'} {name}: {why}")

    def delete_ref(self, name: str, old: Oid) -> None:
        """Delete ``name`` only if it still points at ``old``."""
        with host_writes([RefEdit(name, None, str(old))]):  # a write that failed raises inside: not the host's
            done = run_git(["update-ref", "-d", name, str(old)], self.cli_cwd, check=False)
            if done.returncode != 0:
                raise RaceLost(f"cannot delete {name}: {error_line(done.stderr)}")

    def update_refs(self, updates: Iterable[tuple[str, Oid | None, Oid | None | Unchecked]]) -> None:
        """Apply (name, new, old) updates in one ``git update-ref --stdin``
        transaction: all or none, so no reader or crash sees some without
        the others.

        ``new`` None deletes; ``old`` None requires the ref to be absent;
        ``old`` ANY takes the ref whatever it holds (absent too: deleting an
        absent ref does nothing); ``new`` equal to ``old`` only checks that
        the ref is still there (or, both None, still absent).
        """
        zero = "0" * 40
        lines = ["start"]
        updates = list(updates)
        for name, new, old in updates:
            old_hex = "" if isinstance(old, Unchecked) else f" {old}" if old is not None else f" {zero}"
            if not isinstance(old, Unchecked) and new == old:
                lines.append(f"verify {name}{old_hex}")
            elif new is None:
                lines.append(f"delete {name}{old_hex}")
            else:
                lines.append(f"update {name} {new}{old_hex}")
        lines += ["prepare", "commit", ""]
        with host_writes(RefEdit(name, None if new is None else str(new),
                                 UNCHECKED if isinstance(old, Unchecked) else None if old is None else str(old))
                         for name, new, old in updates):
            done = run_git(
                ["update-ref", "--stdin"], self.cli_cwd, check=False,
                input_bytes="\n".join(lines).encode(),
            )
            if done.returncode != 0:
                raise RaceLost(f"ref transaction failed: {error_line(done.stderr)}")

    def refs_under(self, prefix: str) -> Iterator[tuple[str, Oid]]:
        """(name, target) of every direct ref whose name starts with ``prefix``."""
        for ref in self._pg.listall_reference_objects():
            name = ref.name
            if name.startswith(prefix) and isinstance(ref.target, pygit2.Oid):
                yield name, from_pygit2(ref.target)

    def ref_ids(self, prefixes: Iterable[str], count: int | None = None) -> dict[str, str]:
        """name -> hex object id of the refs under any of ``prefixes``
        (folders end in ``/``), as ``ls-remote`` gives them, so they compare.
        ``git for-each-ref`` reads only those folders, which matters with
        thousands of loose refs. ``count``: only the first that many, in
        name order (git prints no more: 100,000 lines cost more than the
        listing itself)."""
        wanted = list(prefixes)
        if not wanted:
            return {}
        limit = [] if count is None else [f"--count={count}"]
        done = run_git(["for-each-ref", "--format=%(objectname) %(refname)", *limit, *wanted], self.cli_cwd,
                       check=False)
        if done.returncode != 0:
            raise GitFailure(f"git for-each-ref failed: {error_line(done.stderr)}")
        found: dict[str, str] = {}
        exact = tuple(wanted)
        for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
            oid, _, name = line.partition(" ")
            if len(oid) == 40 and name.startswith(exact):
                found[name] = oid
        return found

    def refs_by_time(self, namespace: str, count: int | None, oldest_first: bool = False) -> list[tuple[str, Oid, int]]:
        """(name, object, committer time) of the ``count`` refs under
        ``namespace`` whose commits were made last (None: all of them),
        newest first (``oldest_first``: the first made, oldest first), from
        one ``git for-each-ref --sort=[-]committerdate``: git reads only the
        commit headers, and no ref's object is read here. A ref to no
        commit has no date, and is left out."""
        order = "--sort=committerdate" if oldest_first else "--sort=-committerdate"
        args = ["for-each-ref", order, "--format=%(objectname) %(committerdate:unix) %(refname)"]
        if count is not None:
            args.append(f"--count={count}")
        done = run_git([*args, namespace], self.cli_cwd, check=False)
        if done.returncode != 0:
            raise GitFailure(f"git for-each-ref failed: {error_line(done.stderr)}")
        found = []
        for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
            oid, _, rest = line.partition(" ")
            when, _, name = rest.partition(" ")
            if len(oid) == 40 and when.isdigit() and name.startswith(namespace):
                found.append((name, to_oid(oid), int(when)))
        return found

    def ref_tips(self, namespaces: Sequence[str]) -> dict[str, Oid]:
        """The commit each ref under ``namespaces`` points at, from one ``git
        for-each-ref`` that reads only those (packed refs are found by binary
        search, loose ones by their folders); a ref to a tree, a blob or a
        missing object is left out. A command reads this once and passes it on."""
        tips: dict[str, Oid] = {}
        for name, oid in self.ref_ids(namespaces).items():
            commit = self._commit_of(oid)
            if commit is not None:
                tips[name] = commit
        return tips

    def _commit_of(self, oid: str) -> Oid | None:
        try:
            found = from_pygit2(self._pg[oid].peel(pygit2.Commit).id)
        except (KeyError, pygit2.GitError, ValueError, pygit2.InvalidSpecError):
            return None
        return found

    def unique_commits(
        self, tip: Oid, exclude: set[str], *, tips: dict[str, Oid], limit: int = 1000
    ) -> list[Oid]:
        """Commits reachable from ``tip`` and from none of ``tips`` (the refs
        that can hold work, read once by the caller) outside ``exclude`` [P1]."""
        walker = self._pg.walk(to_pygit2(tip), pygit2.enums.SortMode.NONE)
        for name, hidden in tips.items():
            if name not in exclude:
                walker.hide(to_pygit2(hidden))
        out = []
        for commit in walker:
            out.append(from_pygit2(commit.id))
            if len(out) >= limit:
                break
        return out


def _common_dir(git_dir: Path) -> Path:
    marker = git_dir / "commondir"
    if marker.is_file():
        target = Path(marker.read_text().strip())
        return (git_dir / target).resolve() if not target.is_absolute() else target.resolve()
    return git_dir.resolve()


def open_repo(start: Path | None = None) -> Repo:
    """Open the repository git would use from ``start`` (default: the current
    folder): ``GIT_DIR`` when set (git exports it for ``git --git-dir=… harn``),
    else discovery upwards, stopping at ``GIT_CEILING_DIRECTORIES``.
    ``GIT_WORK_TREE`` names the work tree, as for git."""
    here = (start or Path.cwd()).resolve()
    given = os.environ.get("GIT_DIR")
    found = str(here / given) if given else _discover(here)
    pg = _open(found)
    git_dir = Path(pg.path).resolve()
    own = Path(pg.workdir).resolve() if pg.workdir else None
    tree = os.environ.get("GIT_WORK_TREE")
    workdir = (here / os.path.expanduser(tree)).resolve() if tree else own
    return Repo(_pg=pg, git_dir=git_dir, common_dir=_common_dir(git_dir), workdir=workdir,
                invoked_from=here, own_workdir=workdir == own)


def _discover(here: Path) -> str:
    ceilings = os.environ.get("GIT_CEILING_DIRECTORIES", "")
    try:
        found = pygit2.discover_repository(str(here), False, ceilings)
    except pygit2.GitError as exc:
        raise BadInput(f"cannot open a repository at {here}: {exc}") from exc
    if found is None:
        raise BadInput(f"not a git repository: {here}")
    return str(found)


def _open(found: str) -> pygit2.Repository:
    try:
        return pygit2.Repository(found)
    except pygit2.GitError as exc:
        text = str(exc)
        if "extension" in text or "refstorage" in text.lower():
            raise BadInput(
                f"repository format not supported (libgit2 cannot open it: {text}); "
                "reftable repositories are not supported"
            ) from exc
        raise BadInput(f"cannot open repository {found}: {text}") from exc


def open_git_dir(git_dir: Path) -> Repo:
    """The repository whose git dir is ``git_dir``, exactly: no ``GIT_DIR``,
    no discovery (another clone on this host, named by a record)."""
    pg = _open(str(git_dir))
    found = Path(pg.path).resolve()
    workdir = Path(pg.workdir).resolve() if pg.workdir else None
    return Repo(_pg=pg, git_dir=found, common_dir=_common_dir(found), workdir=workdir,
                invoked_from=workdir or found)
