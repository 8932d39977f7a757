"""Talking to a remote: fetch one branch, push with a lease [P3] [P4].

Only integration (and, later, sync and the workflow) come here; no other
command touches a remote.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from git_harn.errors import BadInput, GitFailure
from git_harn.git.objects import Oid
from git_harn.git.repo import Repo
from git_harn.git.run import error_line, run_git

NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
# Push rejections that mean "the remote ref moved under us" (checked by a re-fetch).
MOVED_SIGNS = ("stale info", "non-fast-forward", "fetch first", "failed to update ref",
               "cannot lock ref", "incorrect old value", "but expected")
REMOTE_LINES = 20
LINE_LIMIT = 200


def fetch_branch(repo: Repo, remote: str, branch: str, tracking_ref: str) -> Oid:
    """Fetch ``<remote> <branch>`` into ``tracking_ref``; return where it is."""
    done = run_git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
                    f"+refs/heads/{branch}:{tracking_ref}"], repo.cli_cwd, check=False)
    if done.returncode != 0:
        why = error_line(done.stderr)
        if "couldn't find remote ref" in why:
            raise BadInput(f"{remote} has no branch {branch}")
        raise GitFailure(f"git fetch {remote} failed: {why}")
    oid = repo.ref_oid(tracking_ref)
    if oid is None:
        raise GitFailure(f"{tracking_ref} is missing after the fetch")
    return oid


@dataclass(frozen=True)
class PushResult:
    landed: bool
    moved: str | None = None  # the remote ref moved: retry from a fresh fetch
    refused: str | None = None  # refused for another reason: stop and say why


def push_with_lease(worktree: Path, remote: str, local_ref: str, branch: str, expected: Oid) -> PushResult:
    """Push ``local_ref`` to ``<remote>``'s ``branch`` only if it is still at ``expected``."""
    done = run_git([*NO_HOOKS, "push", "--porcelain", "--no-verify",
                    f"--force-with-lease=refs/heads/{branch}:{expected}", remote,
                    f"{local_ref}:refs/heads/{branch}"], worktree, check=False)
    if done.returncode == 0:
        return PushResult(landed=True)
    text = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace")
    why = rejection_reason(text)
    if why is not None:
        return PushResult(landed=False, moved=why)
    refusal = _refusal_line(text) or error_line(done.stderr or done.stdout)
    return PushResult(landed=False, refused="\n".join([refusal, *remote_lines(done.stderr)]))


def remote_lines(stderr: bytes) -> list[str]:
    """What the remote said (its hooks' ``remote:`` lines): untrusted text,
    kept printable and bounded [P5]."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    said = ["".join(ch for ch in line if ch.isprintable()).rstrip()
            for line in lines if line.startswith("remote:")]
    return [line[:LINE_LIMIT] for line in said if line != "remote:"][:REMOTE_LINES]


def _refusal_line(push_output: str) -> str | None:
    """The ``!`` line of ``git push --porcelain``: ``[remote rejected] (why)``."""
    for line in push_output.splitlines():
        if line.startswith("!\t"):
            return line.split("\t")[-1].strip()
    return None


def rejection_reason(push_output: str) -> str | None:
    """The rejection in ``git push --porcelain`` output that means the remote
    ref moved (lost lease, non-fast-forward, fetch first, lost ref race)."""
    for line in push_output.splitlines():
        lowered = line.lower()
        if any(sign in lowered for sign in MOVED_SIGNS):
            return line.split("\t")[-1].strip()
    return None
