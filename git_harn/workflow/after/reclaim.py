"""``git harn reclaim`` of any workspace, a workflow task's among them [W5] [P1].

A task that landed is recognised first, as settling recognises it (its
squash on the base, or its tip in the base or kept under
``refs/harnery/integrated/<id>``): its tip is kept there and the workspace
released, never salvaged. Every other workspace is reclaimed as ever.
"""

from __future__ import annotations

from git_harn.git import Repo
from git_harn.store.locks import hold_run
from git_harn.store.workflows import WORKFLOWS_PREFIX
from git_harn.workspace.cleanup import read_known
from git_harn.workspace.reclaim import DISCARD, ReclaimResult, reclaim_locked
from git_harn.workspace.reconcile import reach


def reclaim(repo: Repo, run_id: str, mode: str) -> ReclaimResult:
    """Salvage (or discard) and release ``run_id``'s workspace, under its run
    lock; through the clone on this host that made it, when that is another."""
    read_known(repo, run_id)
    repo = reach(repo, run_id, f"git harn reclaim {run_id}" + (" --discard --yes" if mode == DISCARD else ""))
    with hold_run(repo, run_id, "reclaim"):
        landed = _keep_if_landed(repo, run_id)
        result = reclaim_locked(repo, run_id, mode)
    if landed is not None:
        result.reason = f"{landed}; {result.reason}"
    return result


def _keep_if_landed(repo: Repo, run_id: str) -> str | None:
    """``settle.keep_if_landed`` for a run id a workflow's task could have:
    ``<workflow-id>-<task key>``, the workflow's record there. Any other
    reclaim never loads settling, which brings the integration and forge
    code with it (50 ms of imports a reclaim, issue 45 item 15)."""
    if not any(repo.ref_oid(WORKFLOWS_PREFIX + run_id[:cut]) is not None
               for cut, char in enumerate(run_id) if char == "-"):
        return None
    from git_harn.workflow.after.settle import keep_if_landed

    return keep_if_landed(repo, run_id)
