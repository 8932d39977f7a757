"""Claims this clone holds on a remote for workflow runs that ended or whose
runner is gone (``git harn doctor --remote <name>``: claims live on the
remote, and doctor makes no network call unless asked) [L3] [P3].

A run releases its claims as its tasks end, and settling a dead run
releases what it left; a claim left behind keeps its task from every
other machine until it goes stale. Taken-over claims (no workflow) are
held on purpose, until the operator releases them, and are not reported.
"""

from __future__ import annotations

from typing import Any

from git_harn.doctor.findings import WORKFLOW, Finding, command
from git_harn.errors import BadInput
from git_harn.git import Repo
from git_harn.git.identity import clone_id
from git_harn.store.locks import settle_command
from git_harn.workflow.ledger import record
from git_harn.workflow.ledger.claims import Claim, claim_settings, read_remote
from git_harn.workflow.model.result import IN_PROGRESS


def check_claims(repo: Repo, remote: str, dead_workflows: set[str]) -> list[Finding]:
    where = claim_settings(repo, remote, None, None)
    mine = clone_id(repo)
    found = []
    for claim in read_remote(repo, where.remote):
        workflow_id = claim.text("workflowId")
        if claim.error is not None or not mine or claim.text("clone") != mine or not workflow_id:
            continue
        body = _record(repo, workflow_id)
        running = body is not None and body.get("outcome") == IN_PROGRESS
        if running and workflow_id not in dead_workflows:
            continue  # its run is alive: it releases the claim when the task ends
        found.append(_finding(claim, workflow_id, where.remote, body, where.stale_after))
    return found


def _record(repo: Repo, workflow_id: str) -> dict[str, Any] | None:
    """The run's record, or None when this clone has none."""
    try:
        return record.read(repo, workflow_id).body
    except BadInput:
        return None


def _settling_releases(body: dict[str, Any] | None, remote: str) -> bool:
    """Whether ``git harn workflow settle`` releases the run's claims on ``remote``."""
    settings = body.get("settings") if body is not None else None
    return isinstance(settings, dict) and bool(settings.get("claims")) and body is not None \
        and body.get("remote") == remote


def _finding(claim: Claim, workflow_id: str, remote: str, body: dict[str, Any] | None,
             stale_after: float) -> Finding:
    """Settling releases the claims of a run this clone has a record of (with
    a lease on each); any other is released by ``claims --release`` once
    stale, which is all that command allows."""
    state = ("this clone has no record of" if body is None else
             "whose runner is gone" if body.get("outcome") == IN_PROGRESS else "that ended")
    if _settling_releases(body, remote):
        fix: str | None = settle_command(workflow_id)
        how = "settling the run releases it (with a lease on its value)"
    elif claim.stale(stale_after):
        fix = command("git harn workflow claims --remote", remote, "--release", claim.claimId, "--yes")
        how = "it is stale: releasing it deletes it with a lease on its value"
    else:
        fix = None
        how = f"it goes stale {stale_after:g}s after its last heartbeat; then release it"
    why = (f"this clone holds the claim on task {claim.claimId} on {remote} for workflow {workflow_id}, a run "
           f"{state}; no other machine takes the task while it is held; {how}")
    return Finding(WORKFLOW, "claim-run-ended", f"claim {claim.claimId} on {remote}", why, fix,
                   ageSeconds=int(claim.age() or 0),
                   subject={"taskId": claim.claimId, "ref": claim.ref, "oid": claim.oid,
                            "workflowId": workflow_id, "remote": remote})
