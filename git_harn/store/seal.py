"""The seal: what a later git would obey, kept as it stood, compared around
every stage, put back when a stage changed it [T2].

A linked worktree shares its repository's git dir: an agent (or a gate, or
anything they leave running) can write there what every later git obeys,
git-harn's own and the operator's. The seal is that control surface:

- every config file git reads for this repository: the common ``config``
  and ``config.worktree``, each worktree's ``config.worktree``, the
  operator's global file(s) and the system file, and every file an
  ``include.path`` or ``includeIf.<cond>.path`` in any of them names
  (whatever the condition: a condition that does not hold here may hold in
  another worktree), followed from file to file;
- the hooks folder git uses (``hooks/``, and ``core.hooksPath`` where it
  names a folder of its own), ``info/``, the common ``HEAD``;
- each ``worktrees/<name>/{commondir,gitdir,config.worktree}`` and the
  ``.git`` file of the worktree its ``gitdir`` names;
- every ref (``refs/replace/*`` always) but the branches a stage of this
  run writes and the refs of rule 10, read by one ``git for-each-ref``.

Files are compared by ``lstat`` first (inode, size, mode, mtime and ctime:
ctime cannot be set back by a process), and only a file whose stat changed,
or whose last change was too recent when it was looked at for its ctime to
tell a next one apart (git's racy-entry rule, ``RACY_NS``), is read again,
so a check costs a few dozen ``lstat`` calls and one ``for-each-ref``
(``bench/workflow.py`` gives the figure). The bytes of
every file are kept from the moment it was sealed, so a change is undone.

The rules (the invariants a reader can check the code against):

1. The seal holds the value each item should have now (``expected``): what
   it was when the seal was taken, moved on only by the host's own writes.
   A check compares what is there with it; any other difference is a
   change someone else made: a *tamper*.
2. The host's ref writes are told to the seal by the git layer
   (``git.refwatch``) before and after each one. One that was made moves
   the expected value on, but only when the old value it replaced was the
   expected one (or it took the ref whatever it held, as a fetch does): a
   host write on top of a value someone planted does not make that value
   the host's, and the next check still finds the ref changed.
3. A check of the refs never sees a host write half-made: host writes hold
   the seal's lock shared, from before to after; the refs part of a check
   holds it alone while it reads ``for-each-ref`` and compares. The same
   holds for the host's ``git worktree`` commands and ``git config``
   writes, which the guard (rule 7) brackets the same way.
4. The task branches of this run (``exclude``) are compared by no seal:
   their own stage writes them, the host's checks judge each one after its
   stage (clean, on its branch, grown from the base), and the verdict
   binding checks it before it lands [T4]. An integration agent's stage
   may also create branches and move its remote's tracking refs.
5. A worktree's admin folder that appears is the host's (``git worktree
   add``) or harmless (an agent's own worktree: nothing the host runs reads
   it) and is sealed as found; one that disappears together with its
   worktree was removed (``git worktree remove``, a prune) and is
   forgotten. An admin folder that vanished while its worktree's ``.git``
   file is still there is a change.
6. A change is undone at once, before any git the host runs next: files
   from the bytes kept (written with ``files.atomic_write``, which replaces
   a planted link and never follows it), refs by compare-and-swap back to
   the expected value; a ref value the host would lose that way (a ref the
   stage moved or made) is first kept under ``refs/harnery/tamper/<id>/<n>``,
   so no commit becomes unreachable [P1]. What was found is kept in the run
   folder (``tamper/<n>/``: 0600 files in a 0700 folder) as evidence.
7. The guard (``git.run.install_guard``) checks the files part before every
   git the host runs, so no host git obeys a file written a moment ago.
8. Who is blamed: every stage whose window (from its start check to its end
   check) overlaps the time since the last clean check of that part. When
   no window does (something an ended stage left changed it between
   stages), the stage(s) that ended last. A change found while two stages
   were in flight is blamed on both (see docs/workflow.md).
9. A start check lists the refs unless nothing but the host ran since a
   clean check after the end of this task's own last stage (no stage in
   flight, and the one that ended last was this task's): the host's writes
   are told to the seal (rule 2), and a ref moved meanwhile by a process
   the host could not end is found by this stage's end check, blamed on
   this task as the start check would have blamed it (rule 8).
10. Two folders of refs are compared by no seal (``UNWATCHED``): the
    tracking copies ``refs/harnery-remotes/*`` of what a remote holds, and a
    sync's staging refs ``refs/harnery-push/*``. A ``git harn sync`` the
    operator runs in this clone while a stage is in flight writes them from
    another process, which the seal cannot tell from a stage's write (rule
    2 knows only this process's writes, and a note from another process is
    one a stage could forge). They can stay unwatched because no reader
    obeys them: a tracking copy is foreign input by nature (any machine
    pushes to the remote), and the one reader, sync, takes from it only
    whether the remote's value is here already: a remote ref's value is
    what ``ls-remote`` advertised, and a copy that differs is fetched over
    (compare-and-swap); a copy of a ref the remote does not hold is not
    read at all. A record only ever enters this clone through sync's
    checks of the remote's value (``chain.check_new``); nothing is pushed
    from a copy; no walk for unmerged work counts them (``WORK_REFS``);
    doctor, status, claims (read from the remote itself) and the runner
    never read them. A stage that forges one gains at worst that a sync
    skips a fetch whose objects are then missing: that ref is quarantined
    for that sync. A staging ref is pushed only by the sync that made its
    folder, never forced, and a stage could push as the operator anyway.
    Every other ref a sync would move here (records, notes, the archive,
    the live index, salvage branches) waits for a sync once no seal is
    armed in this clone (``store/armed``; sync says ``waiting``). A sync
    reads the mark under its lock, and a seal is marked before it waits
    for that lock (``_after_syncs``), so a sync either reads the mark or
    ended before the seal was taken.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git_harn.errors import Busy, HarnError
from git_harn.files import PRIVATE_FILE, UnsafeFile, atomic_write, private_dir, unlink_entry
from git_harn.git import Repo, to_oid
from git_harn.git.pins import driver_sections, refuse_drivers
from git_harn.git.refwatch import SYMBOLIC, UNCHECKED, RefEdit, every_ref, install_watcher, set_symbolic
from git_harn.git.run import install_guard, subcommand
from git_harn.store.armed import marked
from git_harn.store.bookkeeping import STAGING_ROOT, TAMPER_ROOT, TRACKING_ROOT
from git_harn.store.locks import hold, sync_lock_path
from git_harn.text import one_line

RACY_NS = 2_000_000_000  # a change this recent may share its ctime with the next one (coarse clock ticks)
MAX_FILE = 1 << 20  # bytes of one file kept to put it back; a larger one is compared by its hash
MAX_ENTRIES = 2000  # entries of one sealed folder (hooks/, info/): past it, the rest are not sealed
MAX_DEPTH = 4
SYNC_WAIT_SECONDS = 60.0  # how long taking a seal waits for a sync that began before it
MAX_INCLUDES = 64
DETAIL_LIMIT = 600
ABSENT, FILE, DIR, LINK, OTHER = "absent", "file", "dir", "link", "other"
FILES, REFS = "files", "refs"
_ACTIVE: list[Seal] = []
# Refs no seal compares (rule 10): foreign data by nature, and a sync's transient staging.
UNWATCHED = (TRACKING_ROOT, STAGING_ROOT)


def watched(name: str) -> bool:
    """Whether a seal compares the ref ``name`` (rule 10)."""
    return not name.startswith(UNWATCHED)


def active() -> Seal | None:
    """The seal of the run this process is in, if any."""
    return _ACTIVE[0] if _ACTIVE else None


class TamperFound(HarnError):
    """A git the host was about to run would have obeyed something a stage changed [T2]:
    it was undone; the task in flight ends with the tamper fault."""

    def __init__(self, tamper: Tamper) -> None:
        super().__init__(tamper.detail)
        self.tamper = tamper


# --- one sealed item ---------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One path of the control surface as seen: its kind, its bytes (a file's,
    a link's target) and its stat, by which a later look is cheap."""

    kind: str
    data: bytes | None = None  # None for a folder, or a file past MAX_FILE
    digest: str = ""
    mode: int = 0
    key: tuple[int, ...] = ()
    # changed well before it was looked at: an equal stat later means equal bytes (git's racy-entry
    # rule: any write moves ctime, which no one can set back, past a ctime this much older than the look)
    settled: bool = False

    def same(self, other: Entry) -> bool:
        return self.kind == other.kind and self.digest == other.digest and (
            self.kind != FILE or stat.S_IMODE(self.mode) == stat.S_IMODE(other.mode))

    def shown(self) -> str:
        if self.kind == ABSENT:
            return "absent"
        if self.kind == LINK:
            return f"link to {(self.data or b'').decode('utf-8', 'replace')}"
        if self.kind == FILE:
            return f"{self.digest[:12]} ({len(self.data) if self.data is not None else 'over 1 MiB'} bytes)"
        return self.kind


def stat_key(seen: os.stat_result) -> tuple[int, ...]:
    return (seen.st_mode, seen.st_ino, seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns)


def _settled(seen: os.stat_result) -> bool:
    """Whether its last change is older than file time stamps' coarse ticks could blur."""
    return time.time_ns() - seen.st_ctime_ns > RACY_NS


def unchanged_since(path: Path, want: Entry) -> bool:
    """A settled file or link that still has the stat it was looked at with: its bytes are
    the same, and need not be read again (the guard runs before every git the host runs)."""
    if not want.settled:
        return False
    try:
        return stat_key(os.lstat(path)) == want.key
    except OSError:
        return False


def look(path: Path) -> Entry:
    """``path`` as it is now, never followed if it is a link."""
    try:
        seen = os.lstat(path)
    except OSError:
        return Entry(ABSENT)
    key = stat_key(seen)
    if stat.S_ISLNK(seen.st_mode):
        with suppress(OSError):
            target = os.fsencode(os.readlink(path))
            return Entry(LINK, target, hashlib.sha256(target).hexdigest(), seen.st_mode, key, _settled(seen))
        return Entry(OTHER, key=key)
    if stat.S_ISDIR(seen.st_mode):
        return Entry(DIR, None, "dir", seen.st_mode, key)
    if not stat.S_ISREG(seen.st_mode):
        return Entry(OTHER, None, f"other {stat.S_IFMT(seen.st_mode):o}", seen.st_mode, key)
    return _read_file(path, seen)


def _read_file(path: Path, seen: os.stat_result) -> Entry:
    key = stat_key(seen)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return Entry(OTHER, None, "unreadable", seen.st_mode, key)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_FILE + 1)
        digest = hashlib.sha256(data)
        if len(data) > MAX_FILE:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
            return Entry(FILE, None, digest.hexdigest(), seen.st_mode, key, _settled(seen))
    return Entry(FILE, data, digest.hexdigest(), seen.st_mode, key, _settled(seen))


# --- where git looks ---------------------------------------------------------------------


def config_files(common: Path) -> list[Path]:
    """The config files git reads for every worktree of ``common`` (each
    linked worktree's ``config.worktree`` is sealed with its admin folder)."""
    env = os.environ
    found = [common / "config", common / "config.worktree"]
    if env.get("GIT_CONFIG_GLOBAL"):
        found.append(Path(env["GIT_CONFIG_GLOBAL"]))
    else:
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", ""), ".config")
        found.append(Path(xdg) / "git" / "config")
        if env.get("HOME"):
            found.append(Path(env["HOME"]) / ".gitconfig")
    if not env.get("GIT_CONFIG_NOSYSTEM"):
        found.append(Path(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    return found


def include_paths(raw: bytes, where: Path) -> list[Path]:
    """The files ``include.path`` and ``includeIf.<cond>.path`` in config text
    ``raw`` name, whatever the condition, resolved as git resolves them:
    ``~/`` from HOME, a relative one from the including file's folder."""
    section, out = "", []
    for line in _logical_lines(raw.decode("utf-8", "surrogateescape")):
        rest = line.strip()
        while rest.startswith("["):
            end = rest.find("]")
            if end < 0:
                break
            header = rest[1:end].strip()
            section = header.replace('"', " ").replace(".", " ").split(" ", 1)[0].lower()
            rest = rest[end + 1:].strip()
        if not rest or rest[0] in "#;" or section not in ("include", "includeif"):
            continue
        key, eq, value = rest.partition("=")
        if eq and key.strip().lower() == "path":
            text = _unquote(value)
            if text:
                out.append(_resolved(text, where))
    return out


def _logical_lines(text: str) -> Iterator[str]:
    pending = ""
    for line in text.splitlines():
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _unquote(value: str) -> str:
    out, quoted, at = [], False, 0
    text = value.strip()
    while at < len(text):
        ch = text[at]
        if ch == "\\" and at + 1 < len(text):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(text[at + 1], text[at + 1]))
            at += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        at += 1
    return "".join(out).strip()


def _resolved(text: str, where: Path) -> Path:
    if text.startswith("~/"):
        return Path(os.path.expanduser(text))
    path = Path(text)
    return path if path.is_absolute() else where.parent / path


def hooks_folders(common: Path, main: Path | None, entries: dict[Path, Entry]) -> list[Path]:
    """``hooks/``, and the folder ``core.hooksPath`` names in the sealed config, if any."""
    found = [common / "hooks"]
    value = None
    for path in config_files(common):
        data = entries.get(path, Entry(ABSENT)).data
        if data:
            value = _last_value(data, "core", "hookspath") or value
    if value:
        named = Path(os.path.expanduser(value))
        if not named.is_absolute() and main is not None:
            named = main / named
        if named.is_absolute():
            found.append(named)
    return found


def _last_value(raw: bytes, wanted_section: str, wanted_key: str) -> str | None:
    section, value = "", None
    for line in _logical_lines(raw.decode("utf-8", "surrogateescape")):
        rest = line.strip()
        while rest.startswith("["):
            end = rest.find("]")
            if end < 0:
                break
            section = rest[1:end].strip().split(" ", 1)[0].lower()
            rest = rest[end + 1:].strip()
        key, eq, text = rest.partition("=")
        if eq and section == wanted_section and key.strip().lower() == wanted_key:
            value = _unquote(text)
    return value


# --- the files part ----------------------------------------------------------------------


@dataclass
class Admin:
    """One worktree's admin folder and the ``.git`` file its ``gitdir`` named when sealed."""

    folder: Path
    dot_git: Path | None


def admin_files(folder: Path) -> list[Path]:
    return [folder / "commondir", folder / "gitdir", folder / "config.worktree"]


class Surface:
    """The files part: what each path should hold, and the folders whose new
    entries count as changes."""

    def __init__(self, common: Path, main: Path | None) -> None:
        self.common, self.main = common, main
        self.entries: dict[Path, Entry] = {}
        self.folders: set[Path] = set()  # sealed folders: a new entry in one is a change
        self.admins: dict[str, Admin] = {}
        self.configs: list[Path] = []  # every config file sealed, includes too
        self.worktrees_key: tuple[int, ...] = ()
        self.paused: dict[str, int] = {"admins": 0, "configs": 0}  # host writes in flight (rule 3)

    def seal(self) -> None:
        self.entries, self.folders, self.admins, self.configs = {}, set(), {}, []
        self._seal_configs()
        for folder in (*hooks_folders(self.common, self.main, self.entries), self.common / "info"):
            self._seal_tree(folder, 0)
        self.entries[self.common / "HEAD"] = look(self.common / "HEAD")
        self._seal_admins()

    def _seal_configs(self) -> None:
        """Every config file, and every file an include in one names, followed (rule: sealed as found)."""
        queue = [*config_files(self.common), *self.configs]
        seen: set[Path] = set()
        while queue and len(seen) < MAX_INCLUDES:
            path = queue.pop(0)
            if path in seen:
                continue
            seen.add(path)
            entry = look(path)
            self.entries[path] = entry
            if entry.kind == LINK:  # git follows it: the file it names is what git reads
                queue.append(Path(os.path.realpath(path)))
            if entry.kind == FILE and entry.data:
                queue += include_paths(entry.data, path)
        self.configs = sorted(seen)

    def _seal_tree(self, folder: Path, depth: int) -> None:
        entry = look(folder)
        self.entries[folder] = entry
        if entry.kind != DIR or depth > MAX_DEPTH:
            return
        self.folders.add(folder)
        try:
            names = sorted(os.listdir(folder))[:MAX_ENTRIES]
        except OSError:
            return
        for name in names:
            path = folder / name
            child = look(path)
            if child.kind == DIR:
                self._seal_tree(path, depth + 1)
            else:
                self.entries[path] = child

    def _seal_admins(self) -> None:
        root = self.common / "worktrees"
        self.worktrees_key = look(root).key
        with suppress(OSError):
            for name in sorted(os.listdir(root)):
                self.seal_admin(name)

    def seal_admin(self, name: str) -> None:
        folder = self.common / "worktrees" / name
        if not folder.is_dir() or folder.is_symlink():
            return
        for path in admin_files(folder):
            self.entries[path] = look(path)
        gitdir = self.entries[folder / "gitdir"].data
        dot_git = None
        if gitdir:
            text = gitdir.decode("utf-8", "surrogateescape").strip()
            dot_git = Path(text) if os.path.isabs(text) else Path(os.path.normpath(folder / text))
            self.entries[dot_git] = look(dot_git)
        self.admins[name] = Admin(folder, dot_git)

    def forget_admin(self, name: str) -> None:
        admin = self.admins.pop(name)
        for path in admin_files(admin.folder):
            self.entries.pop(path, None)
        if admin.dot_git is not None:
            self.entries.pop(admin.dot_git, None)

    def differences(self) -> list[tuple[Path, Entry, Entry]]:
        """(path, expected, found) of every path that no longer holds what it
        should; the admin folders and config files a host write is changing
        now are left for the next check (rule 3)."""
        skipped: set[Path] = set()
        if self.paused["admins"]:
            skipped |= {p for a in self.admins.values() for p in (*admin_files(a.folder), a.dot_git) if p}
        else:
            self._follow_worktrees()
        if self.paused["configs"]:
            skipped |= set(self.configs)
        out = []
        for path, want in list(self.entries.items()):
            if path in skipped or unchanged_since(path, want):
                continue
            found = look(path)
            if found.key == want.key and found.kind == want.kind and found.settled == want.settled:
                continue
            if not found.same(want):
                out.append((path, want, found))
            elif found.kind != DIR:
                self.entries[path] = found  # touched, or settled since: its new stat is the one to compare
        for folder in sorted(self.folders):
            if self.entries.get(folder, Entry(ABSENT)).kind != DIR or look(folder).kind != DIR:
                continue
            with suppress(OSError):
                for name in sorted(os.listdir(folder))[:MAX_ENTRIES]:
                    path = folder / name
                    if path not in self.entries and path not in self.folders:
                        out.append((path, Entry(ABSENT), look(path)))
        return out

    def _follow_worktrees(self) -> None:
        """Rule 5: admin folders that appeared are sealed as found; those gone
        with their worktree are forgotten."""
        root = self.common / "worktrees"
        now = look(root)
        if now.key == self.worktrees_key and now.kind != ABSENT:
            names = set(self.admins)
        else:
            try:
                names = set(os.listdir(root))
            except OSError:
                names = set()
        for name in sorted(set(self.admins) - names):
            admin = self.admins[name]
            if admin.dot_git is None or not os.path.lexists(admin.dot_git):
                self.forget_admin(name)
        for name in sorted(names - set(self.admins)):
            self.seal_admin(name)
        self.worktrees_key = now.key

    def reseal(self, path: Path, want: Entry) -> None:
        """``path`` was put back to ``want``: its new stat is the one to compare,
        unless something wrote it again since, which the next check finds."""
        now = look(path)
        self.entries[path] = now if now.same(want) else want


# --- what a check found ------------------------------------------------------------------


@dataclass
class Change:
    """One path or ref that no longer held what it should."""

    what: str  # the path, or the ref name
    kind: str  # "file" or "ref"
    old: str
    new: str
    restored: bool = True
    kept: str | None = None  # where the value found was kept: an evidence file, a ref
    why: str = ""  # why it could not be put back

    def shown(self) -> str:
        undone = "" if self.restored else f" (not undone: {self.why})"
        return f"{self.what} ({self.old} → {self.new}){undone}"


@dataclass
class Tamper:
    """One check's finding: the changes, undone, where their evidence is, who is blamed."""

    number: int
    changes: list[Change]
    evidence: str
    blamed: list[str]  # "<task key> <stage>" of each stage blamed
    ambiguous: bool = False

    @property
    def kind(self) -> str:
        return "tamper-ambiguous" if self.ambiguous else "tamper"

    @property
    def detail(self) -> str:
        shown = [c.shown() for c in self.changes]
        words: list[str] = []
        used = 0
        for n, text in enumerate(shown):
            if used + len(text) > DETAIL_LIMIT and words:
                words.append(f"… and {len(shown) - n} more")
                break
            words.append(text)
            used += len(text) + 2
        also = "; blamed on every stage in flight: " + ", ".join(self.blamed) if self.ambiguous else ""
        return one_line(f"changed {', '.join(words)}{also}; evidence in {self.evidence}", 1500)

    def document(self) -> dict[str, Any]:
        return {"number": self.number, "evidence": self.evidence, "blamed": list(self.blamed),
                "changes": [{"what": c.what, "kind": c.kind, "old": c.old, "new": c.new, "restored": c.restored,
                             "kept": c.kept} for c in self.changes]}


# --- the lock between host writes and checks (rule 3) -------------------------------------


class SharedLock:
    """Many holders at once (host writes), or one alone (a check's read of
    the refs). Shared holders may nest in a thread: no writer preference."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._alone = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._alone:
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        with self._cond:
            while self._alone or self._shared:
                self._cond.wait()
            self._alone = True
        try:
            yield
        finally:
            with self._cond:
                self._alone = False
                self._cond.notify_all()


# --- the seal of one run -----------------------------------------------------------------


@dataclass
class Window:
    """A stage's span, from its start check to its end check (rule 8)."""

    key: str  # the task's key
    stage: str
    opened: int
    closed: int | None = None
    lands: bool = False  # an integration agent's stage: it may write remote-tracking refs and new branches

    @property
    def name(self) -> str:
        return f"{self.key} {self.stage}"


_WORKTREE_WRITES = frozenset({"add", "remove", "prune", "move", "repair", "lock", "unlock"})
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch",
                           "--get-color", "--get-colorbool"})


@dataclass
class Seal:
    """The seal of one run (``owner``: a workflow id, or a ``git harn run`` id)."""

    repo: Repo
    owner: str
    evidence_root: Path
    exclude: set[str] = field(default_factory=set)
    surface: Surface = field(init=False)
    refs: dict[str, str] = field(default_factory=dict)
    found: list[Tamper] = field(default_factory=list)
    pending: dict[str, list[Tamper]] = field(default_factory=dict)
    windows: list[Window] = field(default_factory=list)
    kept_refs: int = 0
    _seq: int = 0
    _clean: dict[str, int] = field(default_factory=dict)
    _mutex: threading.RLock = field(default_factory=threading.RLock)
    _lock: SharedLock = field(default_factory=SharedLock)
    _local: threading.local = field(default_factory=threading.local)
    _writes: dict[int, tuple[list[RefEdit], list[str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        main = None if self.repo.is_bare else self.repo.common_dir.parent
        self.surface = Surface(self.repo.common_dir, main)

    # --- taking it, and the hooks of the git layer ---

    def take(self) -> None:
        with self._busy(), self._lock.alone(), self._mutex:
            self.surface.seal()
            self.refs = {name: value for name, value in every_ref(self.repo.cli_cwd).items() if watched(name)}
            self._clean = {FILES: self._tick(), REFS: self._tick()}

    @contextmanager
    def installed(self) -> Iterator[Seal]:
        """The seal taken, its guard and ref watcher in the git layer, for the block's duration."""
        with marked(self.repo.common_dir, self.owner):  # another git-harn here leaves the watched refs alone
            _after_syncs(self.repo)
            self.take()
            install_guard(self.guard)
            install_watcher(self)
            _ACTIVE[:] = [self]
            try:
                yield self
            finally:
                _ACTIVE[:] = []
                install_guard(None)
                install_watcher(None)

    def _tick(self) -> int:
        with self._mutex:
            self._seq += 1
            return self._seq

    @contextmanager
    def _busy(self) -> Iterator[None]:
        """The seal's own gits: the guard stands aside for them."""
        before = getattr(self._local, "busy", False)
        self._local.busy = True
        try:
            yield
        finally:
            self._local.busy = before

    # rule 2: the ref watcher
    def begin(self, edits: Sequence[RefEdit], prefixes: Sequence[str]) -> object:
        holder = self._lock.shared()
        holder.__enter__()
        token = self._tick()
        with self._mutex:
            self._writes[token] = (list(edits), list(prefixes))
        return (token, holder)

    def end(self, token: object, ok: bool) -> None:
        assert isinstance(token, tuple)
        number, holder = token
        try:
            with self._mutex:
                edits, prefixes = self._writes.pop(number)
                if ok:
                    self._apply(edits)
            if ok and prefixes:
                with self._busy():
                    self._reread(prefixes)
        finally:
            holder.__exit__(None, None, None)

    def _apply(self, edits: list[RefEdit]) -> None:
        for name, new, old in edits:
            if name in self.exclude or not watched(name):  # rules 4 and 10
                continue
            if old == UNCHECKED or old == self.refs.get(name):
                if new is None:
                    self.refs.pop(name, None)
                else:
                    self.refs[name] = new

    def _reread(self, prefixes: list[str]) -> None:
        """A fetch or a push wrote what git chose under ``prefixes``: the values now are the host's."""
        now = every_ref(self.repo.cli_cwd, [p.rstrip("/") for p in prefixes])
        with self._mutex:
            for name in [n for n in self.refs if _under(n, prefixes)]:
                if name not in now:
                    self.refs.pop(name)
            for name, value in now.items():
                if _under(name, prefixes) and name not in self.exclude and watched(name):
                    self.refs[name] = value

    # rule 7: the guard before every git the host runs
    def guard(self, args: Any, cwd: Path) -> Any:
        if getattr(self._local, "busy", False):
            return None
        self.check_files()
        if getattr(self._local, "raising", False):
            self.raise_for(getattr(self._local, "key", None))
        command = subcommand(args)
        words = [str(w) for w in args]
        if command == "worktree" and any(w in _WORKTREE_WRITES for w in words):
            return self._paused("admins")
        if command == "config" and not any(w in _CONFIG_READS for w in words):
            return self._paused("configs")
        return None

    def _paused(self, part: str) -> Any:
        """A host write of admin folders or config files is in flight: that
        part is left out of checks until it ended, then sealed as it left it."""
        with self._mutex:
            self.surface.paused[part] += 1

        def after(code: int) -> None:
            with self._mutex:
                self.surface.paused[part] -= 1
                if part == "configs":
                    self.surface._seal_configs()
                else:
                    self.surface._follow_worktrees()
        return after

    # --- checks ---

    def check_files(self) -> Tamper | None:
        """The files part alone (the guard's): cheap, no git."""
        with self._mutex:
            found = self.surface.differences()
            if not found:
                self._clean[FILES] = self._tick()
                return None
            number = self._reserve()
            return self._tampered(number, [FILES], self._undo_files(found, number))

    def check(self) -> Tamper | None:
        """Both parts: the files, then the refs (read holding the lock alone, rule 3)."""
        with self._busy():
            with self._mutex:
                files = self.surface.differences()
                number = self._reserve() if files else 0
                changes = self._undo_files(files, number) if files else []
                if not files:
                    self._clean[FILES] = self._tick()
            with self._lock.alone():
                now = every_ref(self.repo.cli_cwd)
                with self._mutex:
                    moved = self._moved(now)
                    if not moved:
                        self._clean[REFS] = self._tick()
            if not files and not moved:
                return None
            number = number or self._reserve()
            changes += self._undo_refs(moved, number)
            with self._mutex:
                return self._tampered(number, ([FILES] if files else []) + ([REFS] if moved else []), changes)

    def _moved(self, now: dict[str, str]) -> list[tuple[str, str | None, str | None]]:
        out = []
        for name in sorted(set(now) | set(self.refs)):
            if name in self.exclude or self._own(name) or not watched(name):
                continue
            want, found = self.refs.get(name), now.get(name)
            if want != found:
                out.append((name, want, found))
        return out

    def _own(self, name: str) -> bool:
        """Refs a stage in flight may write besides its task branch (rule 4)."""
        return any(w.closed is None and w.lands and (
            name.startswith("refs/remotes/") or (name.startswith("refs/heads/") and name not in self.refs))
            for w in self.windows)

    def _reserve(self) -> int:
        with self._mutex:
            self.found.append(Tamper(len(self.found) + 1, [], "", []))
            return len(self.found)

    def _tampered(self, number: int, parts: list[str], changes: list[Change]) -> Tamper:
        """Who is blamed (rule 8), told to each; the list of changes kept with the evidence."""
        now = self._tick()
        since = min(self._clean.get(part, 0) for part in parts)
        blamed = [w for w in self.windows if w.opened <= now and (w.closed is None or w.closed >= since)]
        if not blamed:
            last = max((w.closed for w in self.windows if w.closed is not None), default=None)
            blamed = [w for w in self.windows if w.closed is not None and w.closed == last]
        tamper = Tamper(number, changes, str(self._evidence(number)), sorted({w.name for w in blamed}),
                        len({w.key for w in blamed}) > 1)
        self.found[number - 1] = tamper
        for owner in sorted({w.key for w in blamed}):
            self.pending.setdefault(owner, []).append(tamper)
        if not blamed:
            self.pending.setdefault("", []).append(tamper)  # no stage ran yet: the run's own
        self._write_evidence_list(tamper)
        for part in parts:
            self._clean[part] = self._tick()
        return tamper

    # --- windows and who is told ---

    def open_stage(self, key: str, stage: str, lands: bool = False) -> Window:
        """Before an agent or gate starts: a check, then its window. TamperFound
        when this task is blamed for a change (it must not start). ``lands``:
        the stage integrates, so the refs of rule 4 are its own to write."""
        if self._refs_unchanged_since_its_last_stage(key):
            self.check_files()
        else:
            self.check()
        self.raise_for(key)
        window = Window(key, stage, self._tick(), lands=lands)
        with self._mutex:
            self.windows.append(window)
        return window

    def _refs_unchanged_since_its_last_stage(self, key: str) -> bool:
        """Rule 9: the refs part of this start check would list what the last check listed."""
        with self._mutex:
            if not self.windows or any(w.closed is None for w in self.windows):
                return False
            last = self.windows[-1] if self.windows[-1].closed is not None else None
            latest = max(self.windows, key=lambda w: w.closed or 0)
            return last is latest and latest.key == key and self._clean.get(REFS, 0) > (latest.closed or 0)

    def close_stage(self, window: Window) -> Tamper | None:
        """After it ended: a check with its window still open, then closed;
        the tamper this task is blamed for, if any (consumed)."""
        window.closed = self._tick()  # before the check: once it is clean, nothing after is this stage's
        self.check()
        return self.claim(window.key)

    def claim(self, key: str) -> Tamper | None:
        """The tampers ``key`` is blamed for and was not told of yet, as one (consumed)."""
        with self._mutex:
            told = self.pending.pop(key, [])
        if not told:
            return None
        if len(told) == 1:
            return told[0]
        return Tamper(told[0].number, [c for t in told for c in t.changes], told[0].evidence,
                      sorted({b for t in told for b in t.blamed}), any(t.ambiguous for t in told))

    def raise_for(self, key: str | None) -> None:
        """TamperFound when ``key`` is blamed for a change it was not told of yet."""
        if key is None:
            return
        tamper = self.claim(key)
        if tamper is not None:
            raise TamperFound(tamper)

    def unclaimed(self, running: set[str]) -> list[tuple[str, Tamper]]:
        """Tampers blamed on tasks no longer running (or on no stage): they halt the run all the same."""
        with self._mutex:
            gone = [key for key in self.pending if key not in running]
            return [(key, tamper) for key in gone for tamper in self.pending.pop(key)]

    def unclaim(self, key: str, tamper: Tamper) -> None:
        """Told to a task that had already landed: the run's to halt on (``unclaimed``)."""
        with self._mutex:
            self.pending.setdefault(f"{key} (landed)", []).append(tamper)

    @contextmanager
    def working_for(self, key: str | None, raising: bool = True) -> Iterator[None]:
        """The task this thread works for. ``raising``: a guard that finds it
        blamed stops the git it was to run (TamperFound); else what it is
        blamed for waits for ``claim``, so its clean-up runs as usual."""
        before = getattr(self._local, "key", None), getattr(self._local, "raising", False)
        self._local.key, self._local.raising = key, raising
        try:
            yield
        finally:
            self._local.key, self._local.raising = before

    @contextmanager
    def around(self, stage: str) -> Iterator[None]:
        """A command the host runs in the repository for the task this thread
        works for (an external assessor): checked before and after like a
        stage; what it is blamed for waits for the task's ``claim``."""
        key = getattr(self._local, "key", None) or ""
        with self._busy():
            self.check()
        window = Window(key, stage, self._tick())
        with self._mutex:
            self.windows.append(window)
        try:
            yield
        finally:
            window.closed = self._tick()
            with self._busy():
                self.check()

    # --- undoing (rule 6) ---

    def _evidence(self, number: int) -> Path:
        return self.evidence_root / str(number)

    def _evidence_dir(self, number: int) -> Path:
        private_dir(self.evidence_root)
        return private_dir(self._evidence(number))

    def _undo_files(self, found: list[tuple[Path, Entry, Entry]], number: int) -> list[Change]:
        folder = self._evidence_dir(number)
        changes = []
        for n, (path, want, now) in enumerate(found, 1):
            change = Change(str(path), "file", want.shown(), now.shown())
            if path in self.surface.configs and now.data:  # a driver it names never runs in this run [T1]
                refuse_drivers(driver_sections(now.data))
            try:
                change.kept = self._keep_file(folder, n, path, want, now)
                _put_back(path, want)
                self.surface.reseal(path, want)
                if want.kind == DIR:
                    self.surface.folders.add(path)
            except (OSError, UnsafeFile) as exc:
                change.restored, change.why = False, one_line(str(exc), 200)
            changes.append(change)
        return changes

    def _keep_file(self, folder: Path, n: int, path: Path, want: Entry, now: Entry) -> str:
        stem = f"{n}-" + str(path).strip("/").replace("/", "%")[-150:]
        if now.kind == FILE:
            data = now.data if now.data is not None else b"(larger than 1 MiB: not kept)\n"
        elif now.kind == DIR:
            data = ("\n".join(_listing(path)) + "\n").encode("utf-8", "surrogateescape")
        else:
            data = (now.shown() + "\n").encode("utf-8", "replace")
        atomic_write(folder / f"{stem}.found", data, PRIVATE_FILE)
        if want.kind == FILE and want.data is not None:
            atomic_write(folder / f"{stem}.sealed", want.data, PRIVATE_FILE)
        return str(folder / f"{stem}.found")

    def _undo_refs(self, moved: list[tuple[str, str | None, str | None]], number: int) -> list[Change]:
        changes = []
        for name, want, found in moved:
            change = Change(name, "ref", _short(want), _short(found))
            try:
                if found is not None and not found.startswith(SYMBOLIC):
                    change.kept = self._keep_ref(number, found)
                self._put_ref_back(name, want, found)
            except HarnError as exc:
                change.restored, change.why = False, one_line(exc.message, 200)
            changes.append(change)
        return changes

    def _keep_ref(self, number: int, value: str) -> str:
        with self._mutex:
            self.kept_refs += 1
            name = f"{TAMPER_ROOT}{self.owner}/{number}-{self.kept_refs}"
        self.repo.create_ref(name, to_oid(value), f"git-harn: keep what tamper {number} left [P1]")
        return name

    def _put_ref_back(self, name: str, want: str | None, found: str | None) -> None:
        if (want or "").startswith(SYMBOLIC) or (found or "").startswith(SYMBOLIC):
            set_symbolic(self.repo.cli_cwd, name, want[len(SYMBOLIC):] if want else None)
        elif want is None:
            assert found is not None
            self.repo.delete_ref(name, to_oid(found))
        else:
            self.repo.move_ref(name, to_oid(want), to_oid(found) if found is not None else None,
                               f"git-harn: undo tamper of {name} [T2]")
        with self._mutex:
            if want is None:
                self.refs.pop(name, None)
            else:
                self.refs[name] = want

    def _write_evidence_list(self, tamper: Tamper) -> None:
        folder = self._evidence_dir(tamper.number)
        atomic_write(folder / "changes.json", (json.dumps(tamper.document(), indent=2) + "\n").encode(),
                     PRIVATE_FILE)


def _after_syncs(repo: Repo) -> None:
    """A sync that read no mark (it began before this seal's) ends before
    the seal is taken, so none of its writes is found by a check; one that
    begins later reads the mark. Bounded: past the wait the seal is taken
    all the same, and that sync's writes are what a check finds."""
    with suppress(Busy), hold(sync_lock_path(repo), "sync", "arm a run's seal", SYNC_WAIT_SECONDS, announce=False):
        pass


def _under(name: str, prefixes: list[str]) -> bool:
    return any(name == p or name.startswith(p if p.endswith("/") else p + "/") for p in prefixes)


def _short(value: str | None) -> str:
    if value is None:
        return "absent"
    return value if value.startswith(SYMBOLIC) else value[:12]


def _listing(folder: Path) -> list[str]:
    out = []
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            out.append(os.path.relpath(os.path.join(root, name), folder))
            if len(out) >= MAX_ENTRIES:
                return out
    return out


def _put_back(path: Path, want: Entry) -> None:
    """``path`` made to hold ``want`` again; whatever is there now goes (a
    folder, a link, a file), never followed."""
    now = look(path)
    if now.kind == DIR and want.kind != DIR:
        shutil.rmtree(path)
    elif now.kind not in (ABSENT, DIR) and want.kind != FILE:
        unlink_entry(path)
    if want.kind == ABSENT:
        return
    if want.kind == DIR:
        if look(path).kind != DIR:
            unlink_entry(path)
            os.mkdir(path, stat.S_IMODE(want.mode) or 0o755)
        return
    if want.kind == LINK:
        unlink_entry(path)
        os.symlink(os.fsdecode(want.data or b""), path)
        return
    if want.kind != FILE or want.data is None:
        raise UnsafeFile(f"{path} cannot be put back (its sealed copy was not kept)")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, want.data, stat.S_IMODE(want.mode) or PRIVATE_FILE)
