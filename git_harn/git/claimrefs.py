"""The git plumbing of task claims: ``refs/harnery/claims/<id>`` on a remote.

The remote is the coordination service; git gives the compare-and-swap
[P3]. A claim is created by a push that succeeds only if the ref does not
exist yet (``--force-with-lease=<ref>:`` with an empty expected value: the
server applies the update against "absent", so of two pushes at once one
lands and the other is rejected); a heartbeat or a take-over moves it with a
lease on the exact value read; a release deletes it with a lease on the
exact value. Nothing here overwrites a claim it did not read. Claim commits
hold one file, ``claim.json``, under the machine identity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from git_harn.errors import GitFailure
from git_harn.git.identity import machine_signature
from git_harn.git.objects import BLOB_MODE, to_oid
from git_harn.git.refsync import ObjectProblem, fetch, ls_remote, single_file
from git_harn.git.remote import NO_HOOKS, remote_lines
from git_harn.git.repo import Repo
from git_harn.git.run import error_line, run_git

PREFIX = "refs/harnery/claims/"
FILE = "claim.json"
# The claim moved or exists already (client-side lease check, or the server's own ref CAS).
LOST_SIGNS = ("stale info", "already exists", "failed to update ref", "cannot lock ref",
              "incorrect old value", "but expected", "non-fast-forward", "fetch first",
              "remote ref does not exist", "unable to delete")


def claim_ref(claim_id: str) -> str:
    return PREFIX + claim_id


@dataclass(frozen=True)
class ClaimPush:
    """What one push of a claim ref did."""

    landed: bool
    lost: str | None = None  # the ref was not at the expected value: someone else's
    refused: str | None = None  # the remote refused it (a hook, a permission)
    failure: str | None = None  # the push failed as a whole (transport)

    @property
    def why(self) -> str:
        return self.lost or self.refused or self.failure or ""


def make_claim_commit(repo: Repo, content: bytes, message: str, parent: str | None) -> str:
    """A claim commit (``claim.json`` only) on top of ``parent``, no ref moved."""
    parents = [to_oid(parent)] if parent else []
    oid = repo.commit_files({FILE: (content, BLOB_MODE)}, message, parents, machine_signature(repo))
    return str(oid)


def push_claim(repo: Repo, remote: str, ref: str, new: str | None, expected: str | None) -> ClaimPush:
    """Move ``ref`` on ``remote`` to ``new`` (None: delete it) only if it is at
    ``expected`` (None: only if it does not exist). Never forced otherwise."""
    lease = f"--force-with-lease={ref}:{expected or ''}"
    spec = f"{new}:{ref}" if new is not None else f":{ref}"
    done = run_git([*NO_HOOKS, "push", "--porcelain", "--no-verify", lease, remote, spec],
                   repo.cli_cwd, check=False)
    if done.returncode == 0:
        return ClaimPush(landed=True)
    text = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace")
    line = _status_line(text, ref)
    lowered = (line or text).lower()
    if any(sign in lowered for sign in LOST_SIGNS):
        return ClaimPush(landed=False, lost=_clean(line or error_line(done.stderr)))
    if line is not None:
        said = remote_lines(done.stderr)
        return ClaimPush(landed=False, refused="; ".join([_clean(line), *said[:3]]))
    return ClaimPush(landed=False, failure=error_line(done.stderr or done.stdout))


def _status_line(push_output: str, ref: str) -> str | None:
    """The summary of ``ref``'s ``!`` line in ``git push --porcelain`` output."""
    for line in push_output.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0] == "!" and parts[1].rpartition(":")[2] == ref:
            return parts[2].strip()
    return None


def _clean(text: str) -> str:
    return "".join(ch for ch in text if ch.isprintable()).strip()[:200]


def remote_claims(repo: Repo, remote: str, ids: Sequence[str] = ()) -> dict[str, str]:
    """The claim refs ``remote`` holds (all, or those of ``ids``): ref -> object id."""
    patterns = [claim_ref(i) for i in ids] if ids else [PREFIX + "*"]
    found = ls_remote(repo, remote, patterns)
    return {name: oid for name, oid in found.items() if name.startswith(PREFIX)}


def fetch_claims(repo: Repo, remote: str, refs: Sequence[str]) -> None:
    """Bring the objects of ``refs`` here; no ref is written."""
    why = fetch(repo, remote, list(refs))
    if why is not None:
        raise GitFailure(f"git fetch {remote} of claims failed: {why}")


def read_claim(repo: Repo, oid: str) -> tuple[bytes, list[str]]:
    """(``claim.json``, parents) of a claim commit; GitFailure if it is not one."""
    try:
        name, content = single_file(repo, oid)
    except ObjectProblem as exc:
        raise GitFailure(str(exc)) from exc
    if name != FILE:
        raise GitFailure(f"claim commit {oid[:12]} holds {name}, not {FILE}")
    parents = [str(p) for p in repo.commit_info(to_oid(oid)).parents]
    return content, parents
