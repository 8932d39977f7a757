"""Talking to a remote: the one door [P3] [P4].

Every fetch, push and ``ls-remote`` of git-harn goes through this module.
``fetch`` and ``push`` return one ``Outcome``; one table (``SIGNS``) reads
git's messages into it, and the one retry that is safe at this level is
made here: a fetch that met another fetch's ref lock runs again. A push
whose remote moved is not retried here: the caller reads the remote again
and decides (rebase, merge, or let the other side's value stand).

A push is never forced. With ``lease`` every ref moves only from the value
the caller read (``--force-with-lease=<ref>:<old>``, empty for "must not
exist"); without it a push is a plain update that git refuses unless it
fast-forwards, and never deletes. Hooks are off (``run_git`` turns them
off for every git it runs; ``--no-verify`` besides): the operator's pre-push
hook is not for the refs a tool moves on its own.
"""

from __future__ import annotations

import re
import secrets
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from git_harn.errors import BadInput, GitFailure
from git_harn.failpoints import failpoint
from git_harn.git.config import normal_key
from git_harn.git.objects import Oid, to_oid
from git_harn.git.pins import active_pins, without_credentials
from git_harn.git.pins import remote_url as pinned_remote_url
from git_harn.git.refwatch import host_writes
from git_harn.git.repo import Repo
from git_harn.git.run import error_line, run_git

DEFAULT_REMOTE = "origin"  # the remote git-harn talks to when none is named, as git clone names it

# What one fetch or push did (to one ref, or as a whole).
PUSHED = "pushed"
FETCHED = "fetched"
MOVED_ON = "moved-on"  # the remote ref is not where the caller read it: read again
REFUSED_BY_HOOK = "refused-by-hook"  # a hook on the remote said no: report, never retry
REJECTED = "rejected"  # refused for another reason (permission, policy, bad object)
NO_SUCH_REF = "no-such-ref"  # a fetch of a ref the remote does not have
UNREACHABLE = "unreachable"  # the remote could not be talked to at all

# git's words -> what they mean, read in order: the first sign found wins.
SIGNS: tuple[tuple[str, str], ...] = (
    ("hook declined", REFUSED_BY_HOOK),
    ("couldn't find remote ref", NO_SUCH_REF),
    # The remote ref moved: a lost lease, a lost race on the server's ref
    # lock, a non-fast-forward, a ref that exists already or no longer; an
    # atomic push that failed for another ref's sake goes again too.
    ("stale info", MOVED_ON), ("non-fast-forward", MOVED_ON), ("fetch first", MOVED_ON),
    ("failed to update ref", MOVED_ON), ("cannot lock ref", MOVED_ON), ("failed to lock", MOVED_ON),
    ("incorrect old value", MOVED_ON), ("but expected", MOVED_ON), ("atomic transaction failed", MOVED_ON),
    ("atomic push failed", MOVED_ON), ("already exists", MOVED_ON), ("remote ref does not exist", MOVED_ON),
    ("unable to delete", MOVED_ON),
    # The transport: nothing was said about any ref.
    ("could not read from remote repository", UNREACHABLE), ("does not appear to be a git repository",
                                                             UNREACHABLE),
    ("unable to access", UNREACHABLE), ("could not resolve host", UNREACHABLE),
    ("connection refused", UNREACHABLE), ("connection timed out", UNREACHABLE),
)
# A fetch that failed for these (another fetch held a local ref's lock) runs again.
FETCH_LOCK_SIGNS = ("cannot lock ref", "unable to create", "but expected", "unable to update local ref",
                    "some local refs could not be updated")
FETCH_PAUSES = (0.2, 0.4)
NO_ATOMIC_SIGN = "does not support --atomic"
NO_PUSH_OPTIONS_SIGN = "does not support push options"  # git's words, then a hang-up line that says less
REMOTE_LINES = 20
LINE_LIMIT = 200
_HEX40 = re.compile(r"[0-9a-f]{40}")


def meaning(text: str, default: str = REJECTED) -> str:
    """What git's words ``text`` mean, by the one table."""
    lowered = text.lower()
    return next((status for sign, status in SIGNS if sign in lowered), default)


@dataclass(frozen=True)
class RefPush:
    status: str
    words: str


@dataclass
class Outcome:
    """What a fetch or a push did: ``status`` as a whole, and for a push each
    ref's own status with git's words for it, and what the remote said."""

    status: str
    words: str = ""  # git's words: the ref's summary, or its error line
    said: list[str] = field(default_factory=list)  # the remote's own lines (its hooks'), untrusted
    refs: dict[str, RefPush] = field(default_factory=dict)
    atomic_unsupported: bool = False

    @property
    def ok(self) -> bool:
        return self.status in (PUSHED, FETCHED)

    def having(self, status: str) -> dict[str, str]:
        """ref -> git's words, for the refs of the push that got ``status``."""
        return {ref: got.words for ref, got in self.refs.items() if got.status == status}

    def told(self, separator: str = "; ", lines: int = REMOTE_LINES) -> str:
        """git's words, then the remote's own lines, as one text."""
        return separator.join([self.words, *(f"remote: {line}" for line in self.said[:lines])])

    @property
    def why(self) -> str:
        """git's words and the first of the remote's lines, for one message."""
        return self.told(lines=3)


def remote_lines(stderr: bytes) -> list[str]:
    """What the remote said (its hooks' ``remote:`` lines): untrusted text,
    kept printable and bounded [P5]."""
    said = [_clean(line.removeprefix("remote:")) for line in stderr.decode("utf-8", "replace").splitlines()
            if line.startswith("remote:")]
    return [line for line in said if line][:REMOTE_LINES]


def _clean(text: str) -> str:
    return "".join(ch for ch in text if ch.isprintable()).strip()[:LINE_LIMIT]


# --- the remote as a run pinned it [T1] --------------------------------------------

# The settings of a remote that say where a fetch or push goes and what runs
# there: a run passes each as it stood at its start.
PINNED_PARTS = ("url", "pushurl", "uploadpack", "receivepack", "fetch")


def remote_args(remote: str) -> tuple[list[str], str]:
    """(``-c`` options, the name to give git) for a fetch, push or ls-remote of
    ``remote``: with a run's pins, the remote as it was at the run's start,
    under a name no config file can hold (a new one each time); else as given."""
    pins = active_pins()
    found = pins.remotes.get(remote) if pins is not None else None
    if found is None or found.url() is None:
        return [], remote
    alias = f"harn-pinned-{secrets.token_hex(8)}"
    options: list[str] = []
    for part in PINNED_PARTS:
        for value in found.settings.get(part, []):
            options += ["-c", f"{normal_key(f'remote.{alias}.{part}')}={value}"]
    return options, alias


# --- reading what a remote holds --------------------------------------------------


def remote_url(repo: Repo, remote: str) -> str | None:
    """Where ``remote`` is (as a run pinned it, else as git resolves it now,
    ``insteadOf`` applied), without a user name or password: what may be
    shown or kept. None: no such remote, or no URL."""
    pinned = pinned_remote_url(remote)
    if pinned is not None:
        return pinned
    done = run_git(["remote", "get-url", "--", remote], repo.cli_cwd, check=False)
    url = done.stdout.decode("utf-8", "surrogateescape").strip()
    return without_credentials(url) if done.returncode == 0 and url else None



def ls_remote(repo: Repo, remote: str, patterns: Sequence[str]) -> dict[str, str]:
    """The refs ``remote`` holds under ``patterns``: name -> object id."""
    pinned, name = remote_args(remote)
    done = run_git([*pinned, "ls-remote", "--refs", name, *patterns], repo.cli_cwd, check=False)
    if done.returncode != 0:
        raise GitFailure(f"git ls-remote {remote} failed: {error_line(done.stderr or done.stdout)}")
    found: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, _, ref_name = line.partition("\t")
        if _HEX40.fullmatch(oid) and ref_name:
            found[ref_name] = oid
    return found


# --- fetch --------------------------------------------------------------------------


# One fetch at a time into a repository from this process: a workflow's
# tasks and its runner fetch the same tracking ref from several threads, and
# two at once make one fail on the other's ref lock and try again after a
# pause (FETCH_PAUSES), where waiting for the other's few milliseconds is
# enough. Another process's fetch is still met by the pauses.
_FETCHES: dict[str, threading.Lock] = {}
_FETCHES_GUARD = threading.Lock()


def _fetching(repo: Repo) -> threading.Lock:
    with _FETCHES_GUARD:
        return _FETCHES.setdefault(str(repo.common_dir), threading.Lock())


def fetch(repo: Repo, remote: str, refspecs: Sequence[str], fetch_head: bool = False) -> Outcome:
    """Fetch ``refspecs`` (given on stdin, so any number): no tags, no
    configured refmap, no prune, no auto gc; FETCH_HEAD only when asked.
    A refspec writes a ref only when it names one (``src:dst``)."""
    if not refspecs:
        return Outcome(FETCHED)
    pinned, name = remote_args(remote)  # in a run: the remote as it was at its start [T1]
    args = [*pinned, "fetch", "--quiet", "--no-tags", "--no-auto-gc", "--refmap=", "--stdin", name]
    if not fetch_head:
        args.insert(len(pinned) + 1, "--no-write-fetch-head")
    given = ("\n".join(refspecs) + "\n").encode()
    written = fetched_into(refspecs)
    for pause in (*FETCH_PAUSES, None):
        with _fetching(repo), host_writes(prefixes=written):
            done = run_git(args, repo.cli_cwd, check=False, input_bytes=given)
        if done.returncode == 0:
            return Outcome(FETCHED)
        text = done.stderr.decode("utf-8", "replace").lower()
        if pause is None or not any(sign in text for sign in FETCH_LOCK_SIGNS):
            break
        time.sleep(pause)  # a concurrent fetch holds the ref lock
    words = error_line(done.stderr or done.stdout)
    return Outcome(meaning(done.stderr.decode("utf-8", "replace")), words, remote_lines(done.stderr))


def fetched_into(refspecs: Sequence[str]) -> list[str]:
    """The local refs (or folders, ending in ``/``) a fetch of ``refspecs`` may write."""
    out = []
    for spec in refspecs:
        _, colon, dst = spec.lstrip("+").partition(":")
        if colon and dst:
            out.append(dst[:-1] if dst.endswith("*") else dst)
    return out


def fetch_branch(repo: Repo, remote: str, branch: str, tracking_ref: str | None) -> Oid:
    """Fetch ``<remote>``'s ``branch`` and return its commit: into
    ``tracking_ref``, or (None) with no ref changed at all (FETCH_HEAD names it)."""
    source = f"refs/heads/{branch}"
    outcome = fetch(repo, remote, [f"+{source}:{tracking_ref}" if tracking_ref else source],
                    fetch_head=tracking_ref is None)
    if outcome.status == NO_SUCH_REF:
        raise BadInput(f"{remote} has no branch {branch}")
    if not outcome.ok:
        raise GitFailure(f"git fetch {remote} failed: {outcome.words}")
    if tracking_ref is None:
        return _fetched_head(repo, remote, branch)
    oid = repo.ref_oid(tracking_ref)
    if oid is None:
        raise GitFailure(f"{tracking_ref} is missing after the fetch")
    return oid


def _fetched_head(repo: Repo, remote: str, branch: str) -> Oid:
    out = run_git(["rev-parse", "--verify", "-q", "FETCH_HEAD^{commit}"], repo.cli_cwd, check=False)
    if out.returncode != 0:
        raise GitFailure(f"cannot read what was fetched from {remote}/{branch}")
    return to_oid(out.stdout.decode().strip())


# --- push ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Update:
    """One ref to move on the remote: to ``new`` (an object id or a local
    ref; None deletes it, only with a lease), from ``old`` (None: the ref must
    not exist yet), which only a push with a lease checks; ``leased``: this
    update alone is pushed with a lease (it may then replace any value the
    ref held when read, a blob by a blob, say) while the rest stay plain."""

    ref: str
    new: str | None
    old: str | None = None
    leased: bool = False


def push(repo: Repo, remote: str, updates: Sequence[Update], lease: bool, atomic: bool = False,
         cwd: Path | None = None, staging: str | None = None, options: Sequence[str] = ()) -> Outcome:
    """Push ``updates``, never forced. ``staging``: a local ref folder to
    push them from by one glob (see ``_stage``), for many refs without a lease.
    ``options``: push options (``-o``) for the remote's hooks (a forge reads
    them to open a request); each one line, since git sends them as lines."""
    if not updates:
        return Outcome(PUSHED)
    pinned, name = remote_args(remote)  # in a run: the remote as it was at its start [T1]
    args = [*pinned, "push", "--porcelain", "--no-verify", "--no-follow-tags"]
    args += ["--atomic"] if atomic else []
    args += [f"--push-option={option}" for option in checked_options(options)]
    args += [f"--force-with-lease={u.ref}:{u.old or ''}" for u in updates if lease or u.leased]
    if not lease and any(u.new is None and not u.leased for u in updates):
        raise GitFailure("a push without a lease never deletes a remote ref")
    where = cwd or repo.cli_cwd
    if staging is None or lease:
        with host_writes(prefixes=[f"refs/remotes/{remote}/"]):  # git moves the tracking refs it pushed
            done = run_git([*args, name, *(f"{u.new or ''}:{u.ref}" for u in updates)], where, check=False)
    else:  # a deletion has nothing to stage: it goes as its own refspec
        staged = [u for u in updates if u.new is not None]
        deleted = [f":{u.ref}" for u in updates if u.new is None]
        folder = _stage(repo, staging, staged) if staged else ""
        try:
            failpoint("push-staged")
            done = run_git([*args, name, *([f"{folder}*:refs/*"] if staged else []), *deleted], where,
                           check=False)
        finally:
            if staged:
                _unstage(repo, folder, staged)
    return _read_push(done.returncode, done.stdout, done.stderr, {u.ref for u in updates})


OPTION_LIMIT = 8000  # characters of one push option: git sends each as one pkt-line


def checked_options(options: Sequence[str]) -> list[str]:
    """``options`` as git can send them: one line each, no NUL, bounded; BadInput otherwise."""
    for option in options:
        if not option or "\n" in option or "\r" in option or "\0" in option:
            raise BadInput(f"a push option must be one non-empty line: {option[:40]!r}")
        if len(option) > OPTION_LIMIT:
            raise BadInput(f"a push option is longer than {OPTION_LIMIT} characters: {option[:40]!r}")
    return list(options)


# Of the refs a push did not move, the one that speaks for the push: a refusal
# before a race, since a race is worth another round and a refusal is not.
SEVERITY = (REFUSED_BY_HOOK, REJECTED, UNREACHABLE, NO_SUCH_REF, MOVED_ON)


def _read_push(code: int, stdout: bytes, stderr: bytes, wanted: set[str]) -> Outcome:
    """The outcome of ``git push --porcelain``: each wanted ref's line read
    by the table; no line at all means the push failed as a whole."""
    refs = _ref_lines(stdout, wanted)
    said = remote_lines(stderr)
    failed = [got for got in refs.values() if got.status != PUSHED]
    if code == 0 or (len(refs) == len(wanted) and not failed):
        return Outcome(PUSHED, "", said, refs)
    if not refs:
        words = error_line(stderr or stdout)
        text = stderr.decode("utf-8", "replace")
        if NO_ATOMIC_SIGN in text:
            return Outcome(REJECTED, words, said, refs, atomic_unsupported=True)
        if NO_PUSH_OPTIONS_SIGN in text:
            return Outcome(REJECTED, "the remote does not support push options", said, refs)
        return Outcome(meaning(text, UNREACHABLE), words, said, refs)
    worst = min(failed, key=lambda got: SEVERITY.index(got.status)) if failed else RefPush(REJECTED, "")
    return Outcome(worst.status, worst.words, said, refs)


def _ref_lines(stdout: bytes, wanted: set[str]) -> dict[str, RefPush]:
    """ref -> what its ``<flag> TAB <src>:<dst> TAB <summary>`` line says."""
    refs: dict[str, RefPush] = {}
    for line in stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        ref = parts[1].rpartition(":")[2] if len(parts) >= 3 and len(parts[0]) == 1 else ""
        if ref in wanted:
            summary = _clean(parts[2])
            refs[ref] = RefPush(PUSHED if parts[0] in " *=+-" else meaning(summary), summary)
    return refs


# git matches each explicit refspec against every remote ref (and every local
# one): with thousands of records, 25 ``<oid>:<ref>`` specs cost more than the
# transfer. One glob over a folder that holds exactly the refs to push is
# matched in one pass. The folder is local only, never pushed as itself, and
# what a killed push left there is swept (``sweep``) by the next push's caller,
# under the lock that keeps any other push out (sync sweeps before each sync).
def _stage(repo: Repo, staging: str, updates: Sequence[Update]) -> str:
    """A fresh folder under ``staging`` holding ``<folder><ref minus refs/>`` at each update."""
    folder = f"{staging}{secrets.token_hex(6)}/"
    lines = [f"create {folder}{u.ref.removeprefix('refs/')} {u.new}" for u in updates]
    run_git(["update-ref", "--stdin"], repo.cli_cwd, input_bytes=("\n".join(lines) + "\n").encode())
    return folder


def sweep(repo: Repo, staging: str) -> int:
    """Delete every ref under ``staging`` (the caller holds the lock that
    keeps any other push out, so what is there a killed one left). How many went."""
    left = repo.ref_ids([staging])
    if left:
        lines = "".join(f"delete {name} {oid}\n" for name, oid in left.items())
        run_git(["update-ref", "--stdin"], repo.cli_cwd, check=False, input_bytes=lines.encode())
    return len(left)


def _unstage(repo: Repo, folder: str, updates: Sequence[Update]) -> None:
    lines = "".join(f"delete {folder}{u.ref.removeprefix('refs/')}\n" for u in updates)
    run_git(["update-ref", "--stdin"], repo.cli_cwd, check=False, input_bytes=lines.encode())


# --- one advertised ref, cheaply ----------------------------------------------------

# What of this clone's config the probe repository needs to reach a remote as
# this clone would (the remote itself, URL rewrites, transport settings).
_PROBE_KEYS = r"^(remote\.{remote}\.|url\.|http\.|protocol\.|core\.sshcommand$|credential\.)"
_PROBE_REF = "refs/probe"
_PROBE_OBJECT_FOLDERS = 64  # more loose-object folders than this: the probe starts afresh


def advertised(repo: Repo, remote: str, ref: str, probe: Path) -> str | None:
    """The object id ``remote`` advertises for ``ref`` (None: no such ref),
    asked from ``probe``, a repository of its own with one ref. In this clone
    git would check the fetched ref against every local ref (hundreds of
    milliseconds with 200,000 of them), and ``ls-remote`` sends no ref prefix
    with a pattern, so the remote would advertise all its refs; a fetch by
    protocol v2 sends only the matching ones; ``--depth=1``: a ref at the tip
    of a history (the sync summary's chain) brings its tip alone. GitFailure
    if it cannot tell."""
    _fresh_probe(repo, probe)
    settings, name = remote_args(remote)
    if name == remote:  # no run's pins: this clone's own settings for it, as they are now
        settings = [arg for key, value in _probe_settings(repo, remote) for arg in ("-c", f"{key}={value}")]
    args = ["--git-dir", str(probe), *settings, "-c", "protocol.version=2", "fetch", "--quiet", "--no-tags",
            "--no-auto-gc", "--depth=1", "--refmap=", "--no-write-fetch-head", name, f"+{ref}:{_PROBE_REF}"]
    done = run_git(args, repo.cli_cwd, check=False)  # relative URLs mean what they do in the clone
    if done.returncode != 0:
        if meaning(done.stderr.decode("utf-8", "replace")) == NO_SUCH_REF:
            return None
        raise GitFailure(f"git fetch {remote} {ref} failed: {error_line(done.stderr or done.stdout)}")
    found = run_git(["--git-dir", str(probe), "rev-parse", "--verify", "-q", _PROBE_REF], repo.cli_cwd,
                    check=False)
    oid = found.stdout.decode().strip()
    if not _HEX40.fullmatch(oid):
        raise GitFailure(f"cannot read what {remote} advertises for {ref}")
    return oid


def _fresh_probe(repo: Repo, probe: Path) -> None:
    objects = probe / "objects"
    if objects.is_dir() and sum(1 for _ in objects.iterdir()) <= _PROBE_OBJECT_FOLDERS + 2:
        return
    if probe.exists():
        shutil.rmtree(probe)  # only ever the probe's own objects: what remotes advertised
    probe.parent.mkdir(parents=True, exist_ok=True)
    run_git(["init", "-q", "--bare", str(probe)], repo.cli_cwd)


def _probe_settings(repo: Repo, remote: str) -> list[tuple[str, str]]:
    """This repository's own settings the probe needs (global ones reach it anyway)."""
    done = run_git(["config", "--show-scope", "--get-regexp", _PROBE_KEYS.format(remote=re.escape(remote))],
                   repo.cli_cwd, check=False)
    found = []
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        scope, _, entry = line.partition("\t")
        key, _, value = entry.partition(" ")
        if scope in ("local", "worktree", "command") and "=" not in key:
            found.append((key, value))
    return found
