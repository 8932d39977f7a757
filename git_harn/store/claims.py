"""Task claims as a remote holds them: ``refs/harnery/claims/<id>``, a chain
of ``claim.json`` commits (a kind of ``store/chain``) that lives on the
remote only.

The remote is the coordination service; git gives the compare-and-swap
[P3]. A claim is created by a push that succeeds only if the ref does not
exist yet (a lease on "absent": of two pushes at once one lands and the
other is rejected); a heartbeat or a take-over moves it with a lease on the
exact value read; a release deletes it with a lease on the exact value.
Nothing here overwrites a claim it did not read. Every push and fetch goes
through the one remote door (``git/remote``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from git_harn.errors import CorruptRecord, GitFailure
from git_harn.git import Repo, to_oid
from git_harn.git import remote as door
from git_harn.store import chain

PREFIX = chain.ROOT + "claims/"
FILE = "claim.json"
FORMAT_VERSION = 1


def _check(claim_id: str, raw: bytes, where: str) -> dict[str, Any]:
    data = chain.json_object(CLAIMS, raw, where)
    if data.get("claimId") != claim_id:
        raise CorruptRecord("not a claim of this task")
    return data


def _as_dict(body: dict[str, Any]) -> dict[str, Any]:
    return body


CLAIMS: chain.Kind[dict[str, Any]] = chain.Kind("claim", PREFIX, FILE, "Harnery-Claim", FORMAT_VERSION, _check,
                                                _as_dict)


def claim_ref(claim_id: str) -> str:
    return CLAIMS.ref(claim_id)


def make(repo: Repo, claim_id: str, content: bytes, event: str, summary: str,
         more: Sequence[tuple[str, str]], parent: str | None) -> str:
    """A claim commit on top of ``parent``; no ref moves here (it is pushed)."""
    oid = chain.make(repo, CLAIMS, claim_id, content, event, summary, more, to_oid(parent) if parent else None)
    return str(oid)


def push_claim(repo: Repo, remote: str, ref: str, new: str | None, expected: str | None) -> door.Outcome:
    """Move ``ref`` on ``remote`` to ``new`` (None: delete it) only if it is at
    ``expected`` (None: only if it does not exist). Never forced otherwise."""
    return door.push(repo, remote, [door.Update(ref, new, expected)], lease=True)


def remote_claims(repo: Repo, remote: str, ids: Sequence[str] = ()) -> dict[str, str]:
    """The claim refs ``remote`` holds (all, or those of ``ids``): ref -> object id."""
    patterns = [claim_ref(i) for i in ids] if ids else [PREFIX + "*"]
    found = door.ls_remote(repo, remote, patterns)
    return {name: oid for name, oid in found.items() if name.startswith(PREFIX)}


def fetch_claims(repo: Repo, remote: str, refs: Sequence[str]) -> None:
    """Bring the objects of ``refs`` here; no ref is written."""
    fetched = door.fetch(repo, remote, list(refs))
    if not fetched.ok:
        raise GitFailure(f"git fetch {remote} of claims failed: {fetched.words}")


def read_claim(repo: Repo, claim_id: str, oid: str) -> dict[str, Any]:
    """The body of a claim commit; CorruptRecord if it is not one of ``claim_id``."""
    return chain.checked_record(repo, CLAIMS, claim_id, to_oid(oid))
