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
from git_harn.git import Repo
from git_harn.integrate import door
from git_harn.store import proposals


def check_proposals(repo: Repo, older_than: float, remote: str | None) -> list[Finding]:
    found: list[Finding] = []
    ended: list[dict[str, object]] = []
    for record in proposals.every(repo):
        where = str(record.get("url") or f"{record['landingBranch']} on {record.get('remote')}")
        if record["state"] in proposals.LIVE_STATES:
            age = age_of(record.get("openedAt") or record.get("updatedAt"))
            if age is not None and age >= older_than:
                found.append(Finding(
                    WORKFLOW, "proposal-open-old", where,
                    f"task {record['taskId']}'s request has been {record['state']} for {shown_age(age)}: the forge "
                    "has neither merged nor closed it, and the task is held until it does; the listing "
                    "reconciles it and names its state", command("git harn workflow list"), ageSeconds=age,
                    subject={"key": record["key"], "url": record.get("url")}))
        elif remote is not None and record.get("remote") == remote:
            ended.append(record)
    if ended:
        found += _ended_branches(repo, remote or "", ended)
    return found


def _ended_branches(repo: Repo, remote: str, ended: list[dict[str, object]]) -> list[Finding]:
    """Landing branches ``remote`` still holds for requests that ended."""
    out = []
    for record in ended:
        key = str(record["key"])
        held = door.remote_landing(repo, remote, key)
        if held is None:
            continue
        closed = record["state"] == proposals.CLOSED
        why = ("its request was closed without a merge; git-harn keeps the branch (the task's work is also "
               f"roadmap-{record['taskId']} here, a survivor): delete it once that work is dealt with"
               if closed else "its request was merged and the branch left behind: it holds nothing the base lacks")
        out.append(Finding(WORKFLOW, "landing-branch-ended", f"{door.landing_branch(key)} on {remote}", why,
                           command("git push", remote, "--delete", door.landing_branch(key)),
                           subject={"key": key, "state": record["state"], "oid": str(held)}))
    return out
