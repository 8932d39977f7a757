"""Proposals doctor reports [F2]: requests that stay open longer than
``--older-than`` (the forge has neither merged nor closed them), and, with
``--remote``, landing branches still on the remote whose request ended
(merged, where the forge and git-harn both left the branch; closed, where
git-harn keeps it on purpose until the work is dealt with). Read-only: the
next run, or ``workflow list``, reconciles a request; only an operator
deletes a landing branch of a closed request.
"""

from __future__ import annotations

from git_harn.doctor.disk import age_of, shown_age
from git_harn.doctor.findings import WORKFLOW, Finding, command
from git_harn.errors import HarnError
from git_harn.git import Repo
from git_harn.git.remote import ls_remote
from git_harn.integrate import door
from git_harn.store import proposals


def check_proposals(repo: Repo, older_than: float, remote: str | None) -> list[Finding]:
    found: list[Finding] = []
    for record in proposals.live(repo):  # the live index: no ended proposal is read for these
        where = str(record.get("url") or f"{record['landingBranch']} on {record.get('remote')}")
        age = age_of(record.get("openedAt") or record.get("updatedAt"))
        if age is not None and age >= older_than:
            found.append(Finding(
                WORKFLOW, "proposal-open-old", where,
                f"task {record['taskId']}'s request has been {record['state']} for {shown_age(age)}: the forge "
                "has neither merged nor closed it, and the task is held until it does; the listing "
                "reconciles it and names its state", command("git harn workflow list"), ageSeconds=age,
                subject={"key": record["key"], "url": record.get("url")}))
    if remote is not None and repo.has_remote(remote):  # an unknown one is doctor's own error to name
        found += _ended_branches(repo, remote)
    return found


def _ended_branches(repo: Repo, remote: str) -> list[Finding]:
    """Landing branches ``remote`` still holds for requests that ended: the
    remote's landing branches listed (one ls-remote), and only their
    proposals read, never every proposal that ever ended."""
    out = []
    held = ls_remote(repo, remote, [f"refs/heads/{door.LANDING_PREFIX}*"])
    for ref, oid in sorted(held.items()):
        key = ref[len(f"refs/heads/{door.LANDING_PREFIX}"):]
        try:
            record = proposals.read(repo, key)
        except HarnError:
            continue  # not a proposal key (a remediation's branch), or unreadable: nothing to say of it
        if record is None or record.get("remote") != remote or record["state"] in proposals.LIVE_STATES:
            continue
        closed = record["state"] == proposals.CLOSED
        why = ("its request was closed without a merge; git-harn keeps the branch (the task's work is also "
               f"roadmap-{record['taskId']} here, a survivor): delete it once that work is dealt with"
               if closed else "its request was merged and the branch left behind: it holds nothing the base lacks")
        out.append(Finding(WORKFLOW, "landing-branch-ended", f"{door.landing_branch(key)} on {remote}", why,
                           command("git push", remote, "--delete", door.landing_branch(key)),
                           subject={"key": key, "state": record["state"], "oid": oid}))
    return out
