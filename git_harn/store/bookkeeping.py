"""Which refs hold git-harn's own bookkeeping, never workspace history, and
which can hold work [P1].

The walks that look for unmerged work (a commit reachable from no other ref)
count only the refs that can hold work (``WORK_REFS``): branches, tags,
remote-tracking refs, the stash, and what git-harn keeps of workspace
history under ``refs/harnery/`` (detached heads, landed tips). A record chain
never holds a workspace's commits, and a year of runs puts 200,000 refs in
the bookkeeping folders, so they are never read for this. A ref elsewhere
(``refs/pull/*``, say) is not counted: a commit only it reaches is salvaged
rather than taken as kept, which errs on the side of keeping work.
"""

from __future__ import annotations

from git_harn.git import Oid, Repo
from git_harn.store.archive import ARCHIVE_REF
from git_harn.store.claims import CLAIMS
from git_harn.store.notes import NOTES_REF
from git_harn.store.proposals import KEPT_ROOT, PROPOSALS
from git_harn.store.proposals import LIVE as LIVE_PROPOSALS
from git_harn.store.runs import LIVE, RUNS
from git_harn.store.workflows import WORKFLOWS

# Where sync keeps what a remote holds of refs/harnery/* (its tracking copies).
TRACKING_ROOT = "refs/harnery-remotes/"
# The local folder a sync's push is staged in (git/remote's one-glob push); never pushed as itself.
STAGING_ROOT = "refs/harnery-push/"
# The live index (store/live) points at record commits, the archive holds
# ended records' blobs: bookkeeping too.
BOOKKEEPING = (RUNS.namespace, LIVE.namespace, LIVE.marker, WORKFLOWS.namespace, CLAIMS.namespace, NOTES_REF,
               ARCHIVE_REF, TRACKING_ROOT, PROPOSALS.namespace, LIVE_PROPOSALS.namespace, LIVE_PROPOSALS.marker)

# A vanished worktree's detached HEAD, pinned; a landed task's tip.
DETACHED_ROOT = "refs/harnery/detached/"
INTEGRATED_ROOT = "refs/harnery/integrated/"
# What a stage tampered with, kept before it was undone (store/seal) [P1] [T2].
TAMPER_ROOT = "refs/harnery/tamper/"
# for-each-ref patterns: a folder matches without its slash
WORK_REFS = ("refs/heads", "refs/tags", "refs/remotes", "refs/stash", DETACHED_ROOT.rstrip("/"),
             INTEGRATED_ROOT.rstrip("/"), TAMPER_ROOT.rstrip("/"), KEPT_ROOT.rstrip("/"))


def history_tips(repo: Repo) -> dict[str, Oid]:
    """The commit every ref that can hold work points at (Repo.ref_tips)."""
    return repo.ref_tips(WORK_REFS)
