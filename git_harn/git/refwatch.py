"""The host's own ref writes, told to whoever watches them, and every ref read at once.

While agents run beside the host (a workflow run), the layer above keeps
the value each ref should have and compares it with what git holds [T2].
The host moves refs itself meanwhile (records, notes, task branches,
fetched tracking refs): each of those writes is told here, before it is
made (so a comparison meanwhile takes either value) and after it ended (so
the value it wrote becomes the one expected). The git layer only tells; it
never knows which refs are whose.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from git_harn.errors import GitFailure
from git_harn.git.run import error_line, run_git

UNCHECKED = "*"  # the old value of a write that takes the ref whatever it holds
SYMBOLIC = "ref: "  # how a symbolic ref's value is spelled: ``ref: refs/heads/main``


class RefEdit(tuple[str, "str | None", "str | None"]):
    """(name, new, old) of one ref write: None is absent; ``old`` UNCHECKED
    when the write did not compare it."""

    __slots__ = ()

    def __new__(cls, name: str, new: str | None, old: str | None) -> RefEdit:
        return super().__new__(cls, (name, new, old))


class RefWatcher(Protocol):
    def begin(self, edits: Sequence[RefEdit], prefixes: Sequence[str]) -> object:
        """A host write is about to be made: ``edits``, and refs under
        ``prefixes`` whose new values only git knows (a fetch)."""

    def end(self, token: object, ok: bool) -> None:
        """The write of ``begin``'s token ended (``ok``: it was made)."""


_WATCHERS: list[RefWatcher] = []


def install_watcher(watcher: RefWatcher | None) -> None:
    """Install ``watcher`` (None: remove it) for every ref write from now on, in every thread."""
    _WATCHERS[:] = [watcher] if watcher is not None else []


@contextmanager
def host_writes(edits: Iterable[RefEdit] = (), prefixes: Sequence[str] = ()) -> Iterator[None]:
    """Around a ref write of the host's own: the watcher, if any, is told."""
    if not _WATCHERS:
        yield
        return
    watcher = _WATCHERS[0]
    token = watcher.begin(list(edits), list(prefixes))
    ok = False
    try:
        yield
        ok = True
    finally:
        watcher.end(token, ok)


def every_ref(cwd: Path, prefixes: Sequence[str] = ()) -> dict[str, str]:
    """name -> value of every ref (or those under ``prefixes``) from one
    ``git for-each-ref``: the object id it names, or ``ref: <target>`` for a
    symbolic ref. Replace refs are listed like any other."""
    done = run_git(["for-each-ref", "--format=%(objectname) %(refname) %(symref)", *prefixes], cwd, check=False)
    if done.returncode != 0:
        raise GitFailure(f"git for-each-ref failed: {error_line(done.stderr)}")
    found: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, _, rest = line.partition(" ")
        name, _, target = rest.partition(" ")
        if name:
            found[name] = SYMBOLIC + target if target else oid
    return found


def set_symbolic(cwd: Path, name: str, target: str | None) -> None:
    """Point the symbolic ref ``name`` at ``target`` (None: delete it), as the host's own write."""
    args = ["symbolic-ref", name, target] if target is not None else ["update-ref", "--no-deref", "-d", name]
    with host_writes([RefEdit(name, SYMBOLIC + target if target else None, UNCHECKED)]):
        done = run_git(args, cwd, check=False)
        if done.returncode != 0:
            raise GitFailure(f"cannot {'point' if target else 'delete'} {name}: {error_line(done.stderr)}")
