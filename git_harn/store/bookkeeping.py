"""Which refs hold git-harn's own bookkeeping, never workspace history [P1].

The walks that look for unmerged work (a commit reachable from no other ref)
leave these folders out: a record chain never holds a workspace's commits,
and with 100,000 records hiding every chain's tip would cost more than the
walk. Everything else git-harn keeps under ``refs/harnery/`` (detached
heads, landed tips) is workspace history and is counted.
"""

from __future__ import annotations

from git_harn.git import Oid, Repo
from git_harn.store.claims import CLAIMS
from git_harn.store.notes import NOTES_REF
from git_harn.store.runs import RUNS
from git_harn.store.workflows import WORKFLOWS

# Where sync keeps what a remote holds of refs/harnery/* (its tracking copies).
TRACKING_ROOT = "refs/harnery-remotes/"
BOOKKEEPING = (RUNS.namespace, WORKFLOWS.namespace, CLAIMS.namespace, NOTES_REF, TRACKING_ROOT)


def history_tips(repo: Repo) -> dict[str, Oid]:
    """The commit every ref but the bookkeeping ones points at (Repo.ref_tips)."""
    return repo.ref_tips(leave_out=BOOKKEEPING)
