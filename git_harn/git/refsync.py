"""The git plumbing of ``sync``: what a remote holds, fetching into a tracking
namespace, pushing without force, and the objects a merge reads and writes.

Object ids cross this module's boundary as hex strings, so the layers above
never handle pygit2 objects. Nothing here pushes with ``+``, ``--force``,
``--force-with-lease``, ``--mirror`` or ``--prune``, and nothing deletes a
remote ref: every push is a plain update that git itself refuses unless it
fast-forwards, and the server applies it against the old value it advertised.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import pygit2

from git_harn.errors import GitFailure
from git_harn.failpoints import failpoint
from git_harn.git.identity import DEFAULT_MACHINE_EMAIL, DEFAULT_MACHINE_NAME
from git_harn.git.repo import Repo
from git_harn.git.run import error_line, run_git

# Rejections that mean "the remote moved since we read it": fetch, merge, retry.
MOVED_SIGNS = ("non-fast-forward", "fetch first", "stale info", "failed to update ref",
               "cannot lock ref", "incorrect old value", "but expected", "atomic transaction failed",
               "failed to lock", "reference already exists", "already exists")
# Collateral of another ref's failure in an atomic push: neither moved nor refused.
COLLATERAL_SIGNS = ("atomic push failed",)
NO_ATOMIC_SIGN = "does not support --atomic"
_HEX40 = re.compile(r"[0-9a-f]{40}")
_REMOTE_LINES = 10
_LINE_LIMIT = 200
# A record or a note larger than this is not one git-harn wrote [P5].
MAX_FILE_BYTES = 4 * 1024 * 1024


class ObjectProblem(Exception):
    """An object is missing or of the wrong kind (remote data that is not a chain)."""


# --- the remote ----------------------------------------------------------------


def is_shallow(repo: Repo) -> bool:
    return bool(repo._pg.is_shallow)


def remote_exists(repo: Repo, remote: str) -> bool:
    return repo.config(f"remote.{remote}.url") is not None


def ls_remote(repo: Repo, remote: str, patterns: Sequence[str]) -> dict[str, str]:
    """The refs ``remote`` holds under ``patterns``: name -> object id."""
    done = run_git(["ls-remote", "--refs", remote, *patterns], repo.cli_cwd, check=False)
    if done.returncode != 0:
        raise GitFailure(f"git ls-remote {remote} failed: {error_line(done.stderr or done.stdout)}")
    found: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, _, name = line.partition("\t")
        if _HEX40.fullmatch(oid) and name:
            found[name] = oid
    return found


def fetch(repo: Repo, remote: str, refs: Sequence[str]) -> str | None:
    """Fetch the objects of ``refs`` (given on stdin, so any number) and write
    no ref: no tags, no FETCH_HEAD, no configured refmap, no prune. None when
    done, else git's error line."""
    refspecs = [ref for ref in refs if not ref.startswith(("+", "-", ":"))]
    if not refspecs:
        return None
    done = run_git(
        ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--refmap=",
         "--stdin", remote],
        repo.cli_cwd, check=False, input_bytes=("\n".join(refspecs) + "\n").encode(),
    )
    if done.returncode == 0:
        return None
    return error_line(done.stderr or done.stdout)


@dataclass
class PushOutcome:
    """What a push did, per destination ref."""

    pushed: set[str] = field(default_factory=set)
    moved: dict[str, str] = field(default_factory=dict)  # ref -> why (retry)
    refused: dict[str, str] = field(default_factory=dict)  # ref -> why (report)
    failure: str | None = None  # the push failed as a whole (transport, permission)
    no_atomic: bool = False  # the server does not take --atomic
    said: list[str] = field(default_factory=list)  # the remote's own lines


def push(repo: Repo, remote: str, updates: Sequence[tuple[str, str]], atomic: bool) -> PushOutcome:
    """Push ``(oid, ref)`` pairs as plain, never forced, updates."""
    outcome = PushOutcome()
    if not updates:
        return outcome
    args = ["push", "--porcelain", "--no-follow-tags"]
    if atomic:
        args.append("--atomic")
    staging = _stage(repo, updates)
    try:
        failpoint("sync-push-staged")
        done = run_git([*args, remote, f"{staging}*:refs/*"], repo.cli_cwd, check=False)
    finally:
        _unstage(repo, staging, [ref for _, ref in updates])
    stderr = done.stderr.decode("utf-8", "replace")
    outcome.said = _remote_lines(stderr)
    wanted = {ref for _, ref in updates}
    collateral: set[str] = set()
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or len(parts[0]) != 1:
            continue
        flag, spec, summary = parts[0], parts[1], parts[2]
        ref = spec.rpartition(":")[2]
        if ref not in wanted:
            continue
        if flag in (" ", "*", "="):
            outcome.pushed.add(ref)
            continue
        lowered = summary.lower()
        if any(sign in lowered for sign in COLLATERAL_SIGNS):
            collateral.add(ref)
        elif any(sign in lowered for sign in MOVED_SIGNS):
            outcome.moved[ref] = _clean(summary)
        else:
            outcome.refused[ref] = _clean(summary)
    for ref in collateral:
        # An atomic push that failed for another ref's sake: it goes again.
        outcome.moved.setdefault(ref, "atomic push failed")
    if done.returncode != 0 and not (outcome.pushed or outcome.moved or outcome.refused):
        if NO_ATOMIC_SIGN in stderr:
            outcome.no_atomic = True
        else:
            outcome.failure = error_line(done.stderr or done.stdout)
    return outcome


# git matches each explicit refspec against every remote ref (and every local
# one): with thousands of records, 25 ``<oid>:<ref>`` specs cost more than the
# transfer. One glob over a namespace that holds exactly the refs to push is
# matched in one pass. The namespace is local only, never pushed as itself,
# and swept when a killed sync left one behind.
STAGING_ROOT = "refs/harnery-push/"


def _stage(repo: Repo, updates: Sequence[tuple[str, str]]) -> str:
    """A fresh namespace holding ``<staging><ref minus refs/>`` at each oid."""
    staging = f"{STAGING_ROOT}{secrets.token_hex(6)}/"
    left = refs_under(repo, [STAGING_ROOT])
    lines = [f"delete {name} {oid}" for name, oid in left.items()]
    lines += [f"create {staging}{ref.removeprefix('refs/')} {oid}" for oid, ref in updates]
    run_git(["update-ref", "--stdin"], repo.cli_cwd, input_bytes=("\n".join(lines) + "\n").encode())
    return staging


def sweep_staging(repo: Repo) -> int:
    """Delete every staging namespace (the caller holds the sync lock, so no
    live sync holds one: what is there a killed sync left). How many refs went."""
    left = refs_under(repo, [STAGING_ROOT])
    if left:
        lines = "".join(f"delete {name} {oid}\n" for name, oid in left.items())
        run_git(["update-ref", "--stdin"], repo.cli_cwd, check=False, input_bytes=lines.encode())
    return len(left)


def _unstage(repo: Repo, staging: str, refs: Sequence[str]) -> None:
    lines = "".join(f"delete {staging}{ref.removeprefix('refs/')}\n" for ref in refs)
    run_git(["update-ref", "--stdin"], repo.cli_cwd, check=False, input_bytes=lines.encode())


def _clean(text: str) -> str:
    return "".join(ch for ch in text if ch.isprintable()).strip()[:_LINE_LIMIT]


def _remote_lines(stderr: str) -> list[str]:
    """What the remote said (its hooks' lines): untrusted, kept printable and bounded."""
    said = [_clean(line.removeprefix("remote:")) for line in stderr.splitlines()
            if line.startswith("remote:")]
    return [line for line in said if line][:_REMOTE_LINES]


# --- refs ------------------------------------------------------------------------


def refs_under(repo: Repo, prefixes: Iterable[str]) -> dict[str, str]:
    """name -> object id of the refs under any of ``prefixes`` (folders end
    in ``/``). ``git for-each-ref`` reads only those folders, which matters
    with thousands of loose refs."""
    wanted = list(prefixes)
    if not wanted:
        return {}
    done = run_git(["for-each-ref", "--format=%(objectname) %(refname)", *wanted],
                   repo.cli_cwd, check=False)
    if done.returncode != 0:
        raise GitFailure(f"git for-each-ref failed: {error_line(done.stderr)}")
    found: dict[str, str] = {}
    exact = tuple(wanted)
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, _, name = line.partition(" ")
        if _HEX40.fullmatch(oid) and name.startswith(exact):
            found[name] = oid
    return found


def ref_value(repo: Repo, name: str) -> str | None:
    oid = repo.ref_oid(name)
    return str(oid) if oid is not None else None


def update_refs(repo: Repo, updates: Sequence[tuple[str, str, str | None]]) -> None:
    """(name, new, old) in one compare-and-swap transaction [P3]; RaceLost on a
    lost race. ``old`` None: the ref must not exist yet. Never deletes."""
    if updates:
        repo.update_refs((name, pygit2.Oid(hex=new), pygit2.Oid(hex=old) if old else None)
                         for name, new, old in updates)


def checked_out_branches(repo: Repo) -> set[str]:
    """Branches that some worktree has checked out (never moved under it)."""
    out = repo._git("worktree", "list", "--porcelain")
    return {line.removeprefix("branch ").strip() for line in out.splitlines()
            if line.startswith("branch ")}


# --- objects ---------------------------------------------------------------------


def has_object(repo: Repo, oid: str) -> bool:
    try:
        return pygit2.Oid(hex=oid) in repo._pg
    except ValueError:
        return False


def _commit(repo: Repo, oid: str) -> pygit2.Commit:
    try:
        obj = repo._pg.get(oid)
    except (ValueError, pygit2.GitError) as exc:
        raise ObjectProblem(f"cannot read {oid}: {exc}") from exc
    if obj is None:
        raise ObjectProblem(f"object {oid} is missing")
    if not isinstance(obj, pygit2.Commit):
        raise ObjectProblem(f"{oid} is a {obj.type_str}, not a commit")
    return obj


def is_commit(repo: Repo, oid: str) -> bool:
    try:
        _commit(repo, oid)
    except ObjectProblem:
        return False
    return True


def descends(repo: Repo, tip: str, ancestor: str) -> bool:
    """``tip`` is ``ancestor`` or has it in its history."""
    if tip == ancestor:
        return True
    try:
        return bool(repo._pg.descendant_of(tip, ancestor))
    except (ValueError, pygit2.GitError) as exc:
        raise ObjectProblem(f"cannot compare {tip[:12]} with {ancestor[:12]}: {exc}") from exc


def merge_base(repo: Repo, one: str, other: str) -> str | None:
    try:
        base = repo._pg.merge_base(one, other)
    except (ValueError, pygit2.GitError) as exc:
        raise ObjectProblem(f"cannot find a merge base of {one[:12]} and {other[:12]}: {exc}") from exc
    return str(base) if base is not None else None


@dataclass
class CommitInfo:
    oid: str
    parents: list[str]
    message: str
    time: int
    offset: int


def commit_info(repo: Repo, oid: str) -> CommitInfo:
    commit = _commit(repo, oid)
    return CommitInfo(oid, [str(p) for p in commit.parent_ids], commit.message,
                      commit.commit_time, commit.commit_time_offset)


def new_commits(repo: Repo, tip: str, hide: Iterable[str]) -> Iterator[CommitInfo]:
    """Commits reachable from ``tip`` and from none of ``hide``, newest first.
    ObjectProblem when one of them is missing or is not a commit."""
    _commit(repo, tip)
    try:
        walker = repo._pg.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
        for hidden in hide:
            walker.hide(hidden)
        for commit in walker:
            yield CommitInfo(str(commit.id), [str(p) for p in commit.parent_ids], commit.message,
                             commit.commit_time, commit.commit_time_offset)
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise ObjectProblem(f"history of {tip[:12]} cannot be read: {exc}") from exc


def single_file(repo: Repo, oid: str) -> tuple[str, bytes]:
    """The one file of a chain commit's tree: (name, content)."""
    tree = _commit(repo, oid).tree
    entries = list(tree)
    if len(entries) != 1:
        raise ObjectProblem(f"commit {oid[:12]} holds {len(entries)} entries, not one file")
    entry = entries[0]
    blob = repo._pg.get(entry.id)
    if not isinstance(blob, pygit2.Blob) or entry.filemode != pygit2.enums.FileMode.BLOB:
        raise ObjectProblem(f"commit {oid[:12]}: {entry.name} is not a regular file")
    if blob.size > MAX_FILE_BYTES:
        raise ObjectProblem(f"commit {oid[:12]}: {entry.name} is {blob.size} bytes, too large for a record")
    return str(entry.name), bytes(blob.data)


def flat_tree(repo: Repo, oid: str | None) -> dict[str, str]:
    """A notes commit's tree as annotated object id -> blob id, fan-out
    folders (``ab/cdef…``) flattened."""
    if oid is None:
        return {}
    found: dict[str, str] = {}
    pending: list[tuple[str, pygit2.Tree]] = [("", _commit(repo, oid).tree)]
    while pending:
        prefix, tree = pending.pop()
        for entry in tree:
            name = prefix + str(entry.name)
            obj = repo._pg.get(entry.id)
            if isinstance(obj, pygit2.Tree):
                pending.append((name, obj))
            elif isinstance(obj, pygit2.Blob):
                found[name] = str(entry.id)
            else:
                raise ObjectProblem(f"notes commit {oid[:12]}: {name} is neither a note nor a folder")
    return found


def read_blob(repo: Repo, oid: str) -> bytes:
    obj = repo._pg.get(oid)
    if not isinstance(obj, pygit2.Blob):
        raise ObjectProblem(f"{oid} is not a blob")
    if obj.size > MAX_FILE_BYTES:
        raise ObjectProblem(f"blob {oid[:12]} is {obj.size} bytes, too large for a note")
    return bytes(obj.data)


def write_blob(repo: Repo, data: bytes) -> str:
    return str(repo._pg.create_blob(data))


def _tree_of(repo: Repo, files: dict[str, str]) -> pygit2.Oid:
    builder = repo._pg.TreeBuilder()
    for name in sorted(files):
        builder.insert(name, pygit2.Oid(hex=files[name]), pygit2.enums.FileMode.BLOB)
    return builder.write()


def merge_commit(repo: Repo, parents: Sequence[str], files: dict[str, str], message: str) -> str:
    """A reproducible merge commit: ``files`` (name -> blob id) as its tree,
    parents in object-id order, a fixed identity, and the committer date of
    the later parent, so any clone merging the same pair makes the same commit."""
    ordered = sorted(set(parents))
    infos = [commit_info(repo, oid) for oid in ordered]
    later = max(infos, key=lambda info: (info.time, info.oid))
    signature = pygit2.Signature(DEFAULT_MACHINE_NAME, DEFAULT_MACHINE_EMAIL, later.time, later.offset)
    tree = _tree_of(repo, files)
    oid = repo._pg.create_commit(None, signature, signature, message, tree,
                                [pygit2.Oid(hex=p) for p in ordered])
    return str(oid)
