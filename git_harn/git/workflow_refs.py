"""Git plumbing the workflow needs: fetching a base, reading files at a
commit, commit chains of one JSON file, and the state of a task worktree."""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from git_harn.errors import BadInput, GitFailure, RaceLost
from git_harn.git.env import child_env
from git_harn.git.identity import machine_signature
from git_harn.git.objects import BLOB_MODE, REGULAR_MODES, Oid, to_oid
from git_harn.git.refnames import branch_name
from git_harn.git.repo import Repo
from git_harn.git.run import error_line, run_git

FETCH_TRIES = 3

__all__ = ["Oid", "to_oid"]


def tracking_ref(remote: str, branch: str) -> str:
    return f"refs/remotes/{remote}/{branch}"


def check_remote(repo: Repo, remote: str) -> None:
    if remote.startswith("-"):
        raise BadInput(f"invalid remote name: {remote!r}")
    if not repo.has_remote(remote):
        raise BadInput(f"unknown remote: {remote}")


def check_branch_name(name: str, what: str) -> str:
    try:
        return branch_name(name)
    except BadInput:
        raise BadInput(f"{what}: invalid branch name {name!r}") from None


def fetch_branch(repo: Repo, remote: str, branch: str, write_ref: bool = True) -> Oid:
    """Fetch ``<remote>/<branch>`` and return its commit. With ``write_ref``
    False no ref changes at all (the objects arrive, FETCH_HEAD names the tip)."""
    if write_ref:
        args = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
                f"+refs/heads/{branch}:{tracking_ref(remote, branch)}"]
    else:
        args = ["fetch", "--quiet", "--no-tags", "--refmap=", remote, f"refs/heads/{branch}"]
    why = ""
    for attempt in range(FETCH_TRIES):
        done = run_git(args, repo.cli_cwd, check=False)
        if done.returncode == 0:
            break
        why = error_line(done.stderr)
        if "couldn't find remote ref" in why:
            raise BadInput(f"{remote} has no branch {branch}")
        time.sleep(0.2 * (attempt + 1))  # a concurrent fetch holds the ref lock
    else:
        raise GitFailure(f"git fetch {remote} failed: {why}")
    if write_ref:
        oid = repo.ref_oid(tracking_ref(remote, branch))
        if oid is None:
            raise GitFailure(f"{tracking_ref(remote, branch)} is missing after the fetch")
        return oid
    out = run_git(["rev-parse", "--verify", "-q", "FETCH_HEAD^{commit}"], repo.cli_cwd, check=False)
    if out.returncode != 0:
        raise GitFailure(f"cannot read what was fetched from {remote}/{branch}")
    return to_oid(out.stdout.decode().strip())


def file_at(repo: Repo, commit: Oid, path: str, limit: int = 1 << 20) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path`` in ``commit`` (None: absent)."""
    return repo.read_file(commit, path, limit=limit, regular_only=True)


def names_in(repo: Repo, commit: Oid, folder: str) -> list[str]:
    """Names of the regular files directly inside ``folder`` at ``commit``."""
    return [name for name, mode in repo.list_folder(commit, folder) if mode in REGULAR_MODES]


def descends(repo: Repo, tip: Oid, ancestor: Oid) -> bool:
    """``tip`` is ``ancestor`` or has it in its history."""
    return repo.contains(tip, ancestor)


def ahead(repo: Repo, tip: Oid, base: Oid) -> int:
    return repo.ahead_behind(tip, base)[0]


# --- commit chains of one JSON file (workflow records) ----------------------


@dataclass
class ChainEvent:
    oid: Oid
    time: int
    subject: str
    trailers: dict[str, str]


def chain_write(repo: Repo, ref: str, filename: str, content: bytes, message: str,
                old_tip: Oid | None) -> Oid:
    """Append a commit holding ``filename`` to the chain at ``ref`` with CAS [P3]."""
    parents = [old_tip] if old_tip is not None else []
    commit = repo.commit_files({filename: (content, BLOB_MODE)}, message, parents, machine_signature(repo))
    repo.move_ref(ref, commit, old_tip, f"git-harn: {message.splitlines()[0][:80]}")
    return commit


def chain_read(repo: Repo, tip: Oid, filename: str) -> bytes | None:
    return file_at(repo, tip, filename, limit=64 << 20)


def chain_history(repo: Repo, ref: str) -> list[ChainEvent]:
    """The chain's commits, newest first (first parents)."""
    tip = repo.ref_oid(ref)
    events = []
    while tip is not None:
        commit = repo.commit_info(tip)
        subject = commit.message.split("\n", 1)[0]
        trailers = {}
        for line in commit.message.splitlines():
            key, sep, value = line.partition(": ")
            if sep and key.startswith("Harnery-"):
                trailers[key] = value.strip()
        events.append(ChainEvent(tip, commit.time, subject, trailers))
        tip = commit.parents[0] if commit.parents else None
    return events


def commit_time(repo: Repo, oid: Oid) -> int:
    return repo.commit_info(oid).time


def keep_ref(repo: Repo, name: str, oid: Oid, message: str) -> str:
    """Point ``name`` at ``oid``: created, or left if already there; a ref
    that holds something else is never moved, ``name-<n>`` is made instead [P1]."""
    for n in range(0, 100):
        candidate = name if n == 0 else f"{name}-{n}"
        current = repo.ref_oid(candidate)
        if current == oid:
            return candidate
        if current is None:
            try:
                repo.create_ref(candidate, oid, message)
                return candidate
            except RaceLost:
                continue
    raise GitFailure(f"cannot keep {oid} under {name}: too many refs of that name")


# --- a task worktree ----------------------------------------------------------


def worktree_branch(worktree: Path) -> str | None:
    """The branch ref the worktree has checked out (None: detached or unreadable)."""
    done = run_git(["symbolic-ref", "-q", "HEAD"], worktree, check=False)
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def detach(worktree: Path) -> None:
    """Detach the worktree's HEAD at the same commit (files untouched), so
    the branch may be moved by someone else."""
    run_git(["switch", "--quiet", "--detach"], worktree)


def attach(worktree: Path, branch: str) -> None:
    """Check the branch out again in a clean worktree."""
    run_git(["switch", "--quiet", branch], worktree)


def agent_env(extra: dict[str, str], secrets: Collection[str] = ()) -> dict[str, str]:
    """The operator's environment without git location variables (which
    would point an agent's git at another repository) and without the
    secrets not named in ``secrets`` (git/env.py), plus ``extra``."""
    return child_env(extra, secrets)
