"""``git harn doctor``: one look at the whole state of a clone and its
machine, read-only. The checks run in the order the report groups them;
a check that a later one would repeat is told what to leave out (a dead
run's workspaces are its settling's; a killed run's lock is its cleanup's).
"""

from __future__ import annotations

from git_harn.clock import parse_age
from git_harn.doctor.claims import check_claims
from git_harn.doctor.findings import DoctorReport, Finding, grouped
from git_harn.doctor.leftovers import archive_due, check_leftovers
from git_harn.doctor.locks import check_locks
from git_harn.doctor.proposals import check_proposals
from git_harn.doctor.setup import check_setup
from git_harn.doctor.workflows import check_task_branches, check_workflows
from git_harn.doctor.workspaces import check_workspaces
from git_harn.git import Repo
from git_harn.store import runs
from git_harn.store.live import live_records_by_tip
from git_harn.store.locks import run_lock_name
from git_harn.store.record import RunRecord

DEFAULT_OLDER_THAN = "30d"
def live_records(repo: Repo) -> tuple[list[RunRecord], dict[str, int]]:
    """The records of workspaces that have not ended, and the counts; an
    ended record is read once, ever (``store.live``)."""
    found, ended = live_records_by_tip(repo)
    live = [entry.record for entry in found if isinstance(entry, runs.Stored)]
    return live, {"live": len(live), "ended": ended, "unreadable": len(found) - len(live)}


def diagnose(repo: Repo, older_than: str = DEFAULT_OLDER_THAN, remote: str | None = None) -> DoctorReport:
    """``remote``: also the claims this clone holds there for runs that ended
    (the one network call doctor makes, and only when asked)."""
    age = parse_age(older_than)
    live, counts = live_records(repo)
    dead = check_workflows(repo, live)
    seen = check_workspaces(repo, live, dead.dead_runs)
    killed = {run_lock_name(f.subject["runId"]) for f in seen.findings if f.code == "workspace-run-killed"}
    killed |= {run_lock_name(run_id) for run_id in dead.dead_runs}
    findings: list[Finding] = [*seen.findings, *check_locks(repo, killed), *dead.findings,
                               *check_task_branches(repo, live, dead.dead_runs), *check_leftovers(repo, age),
                               *archive_due(repo, counts["ended"])]
    findings += check_proposals(repo, age, remote)
    if remote is not None:
        findings += check_claims(repo, remote, dead.dead_workflows)
    setup, notes, version = check_setup(repo)
    findings += setup
    in_order = [finding for _, group in grouped(findings) for finding in group]
    return DoctorReport(in_order, seen.notes + notes, counts, version)
