"""The landing branch moved on the remote: only git-harn's own, only from
the value git-harn left there, by the git layer's one remote door [P3]."""

from __future__ import annotations

from collections.abc import Sequence

from git_harn.errors import ForgeFailure, Refused
from git_harn.failpoints import failpoint
from git_harn.git.objects import Oid
from git_harn.git.remote import MOVED_ON, Outcome, Update, ls_remote, push
from git_harn.git.repo import Repo

PUSHED_POINT = "forge-pushed"  # killed here: the branch moved, no request opened yet


def push_branch(repo: Repo, remote: str, branch: str, squash: Oid, previous: Oid | None,
                options: Sequence[str] = ()) -> Outcome | None:
    """Point ``refs/heads/<branch>`` on ``remote`` at ``squash``, with a lease
    on what it holds (absent, or ``previous``). None: it is there already
    (nothing pushed, so no hook ran). Refused when someone else moved it."""
    ref = f"refs/heads/{branch}"
    now = ls_remote(repo, remote, [ref]).get(ref)
    if now == squash:
        return None
    if now is not None and now != previous:
        raise Refused(f"{remote} {branch} is at {now[:12]}, which git-harn did not push there "
                      f"(it pushed {previous[:12] if previous else 'nothing'}); it is left as it is")
    outcome = push(repo, remote, [Update(ref, str(squash), old=now)], lease=True, options=options)
    return _pushed(outcome, remote, branch)


def push_for_review(repo: Repo, remote: str, ref: str, squash: Oid, options: Sequence[str]) -> Outcome:
    """Push ``squash`` to a ref the forge turns into a request and never keeps
    (``refs/for/<base>/<topic>``, the AGit flow): a plain push, no lease to take."""
    outcome = push(repo, remote, [Update(ref, str(squash))], lease=False, options=options)
    pushed = _pushed(outcome, remote, ref)
    assert pushed is not None
    return pushed


def _pushed(outcome: Outcome, remote: str, where: str) -> Outcome:
    if outcome.status == MOVED_ON:
        raise Refused(f"{remote} {where} moved while git-harn pushed it ({outcome.why}); it is left as it is")
    if not outcome.ok:
        raise ForgeFailure(f"push of {where} to {remote} failed: {outcome.why}")
    failpoint(PUSHED_POINT)
    return outcome


def delete_branch(repo: Repo, remote: str, branch: str, expected: Oid) -> bool:
    """Delete the landing branch on ``remote`` once its request is merged
    (where the forge did not), with a lease on ``expected``, the squash
    git-harn pushed: a branch someone else moved is kept [P1] [P3]. Whether
    it is gone now (False: it holds another commit, and is left)."""
    ref = f"refs/heads/{branch}"
    now = ls_remote(repo, remote, [ref]).get(ref)
    if now is None:
        return True
    if now != expected:
        return False
    outcome = push(repo, remote, [Update(ref, None, old=expected)], lease=True)
    if outcome.status == MOVED_ON:
        return False
    if not outcome.ok:
        raise ForgeFailure(f"deleting {branch} on {remote} failed: {outcome.why}")
    return True
