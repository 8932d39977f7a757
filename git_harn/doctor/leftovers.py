"""What finished or killed operations leave: the integration worktree left
mid-operation, ``refs/harnery-push/*`` staging refs a killed sync left, and
salvage branches older than ``--older-than`` (reported, never deleted: they
are the work), and notes on objects that are gone [P1] [P6].
"""

from __future__ import annotations

import os
import time

from git_harn.doctor.findings import LEFTOVER, Finding, command
from git_harn.files import disk_use
from git_harn.git import Repo
from git_harn.git.checkout import leftovers
from git_harn.git.worktrees import registered_here
from git_harn.integrate.worktree import integration_worktree
from git_harn.store.archive import ARCHIVE_REF
from git_harn.store.locks import SYNC_LOCK, locks_dir, owner_alive, read_owner
from git_harn.store.notes import NOTES_REF, notes_on_missing_objects
from git_harn.sync.push import STAGING_ROOT
from git_harn.workspace.gc import DEFAULT_THRESHOLD, THRESHOLD_SETTING, archive_after
from git_harn.workspace.salvage import SALVAGE_LOG, SALVAGE_PREFIX


def check_leftovers(repo: Repo, older_than: float) -> list[Finding]:
    return [*_integration(repo), *_staging(repo), *_salvage(repo, older_than), *_notes(repo)]


def _held(repo: Repo, name: str) -> bool:
    owner = read_owner(locks_dir(repo) / name)
    return bool(owner) and owner_alive(owner or {})


def _integration(repo: Repo) -> list[Finding]:
    """The integration worktree is kept between integrations; it is a
    leftover when a killed one left it mid-operation, or unregistered."""
    path = integration_worktree(repo)
    if not os.path.lexists(path) or _held(repo, "merge.lock"):
        return []
    if registered_here(repo, path):
        left = leftovers(path)
        if not left:
            return []
        why = (f"the integration worktree was left mid-operation ({', '.join(left[:3])}); it holds only "
               "committed content, and the next integration makes it afresh")
        fix = command("git worktree remove --force --force", str(path))
    else:
        why = "a folder where the integration worktree was, no longer registered: committed content only"
        fix = command("rm -r --", str(path))
    return [Finding(LEFTOVER, "integration-worktree-left", str(path), why, fix, diskBytes=disk_use(path),
                    subject={"path": str(path)})]


def _staging(repo: Repo) -> list[Finding]:
    """Staging refs while no sync holds the sync lock: a killed sync's."""
    found = {name: str(oid) for name, oid in repo.refs_under(STAGING_ROOT)}
    if not found or _held(repo, SYNC_LOCK):
        return []
    return [Finding(LEFTOVER, "staging-ref-left", name,
                    "a staging ref a killed 'git harn sync' left; it only names what that sync was pushing, "
                    "which its record refs still hold", command("git update-ref -d", name, oid),
                    fixable=True, subject={"ref": name, "oid": oid}) for name, oid in sorted(found.items())]


def _salvage(repo: Repo, older_than: float) -> list[Finding]:
    found = []
    now = time.time()
    for name, tip in sorted(repo.refs_under(SALVAGE_PREFIX)):
        age = int(now - repo.commit_info(tip).time)
        if age < older_than:
            continue
        branch = name.removeprefix("refs/heads/")
        found.append(Finding(LEFTOVER, "salvage-old", branch,
                             f"salvaged work, last changed {age // 86400} day(s) ago; doctor never deletes it "
                             f"(it is the work): merge what is wanted, then delete the branch; every salvaged "
                             f"branch: {SALVAGE_LOG}",
                             command("git branch -D", branch), ageSeconds=age,
                             subject={"ref": name, "oid": str(tip)}))
    return found



def _notes(repo: Repo) -> list[Finding]:
    """Notes whose object this clone had and lost: nothing here can show
    them any more. The prune keeps them in the notes ref's history and is
    this clone's own (sync never takes a note from the remote or another
    clone), so it loses nothing. Plain ``git notes prune`` refuses a ref
    outside refs/notes/: --fix does it."""
    gone = notes_on_missing_objects(repo)
    if not gone:
        return []
    return [Finding(LEFTOVER, "notes-object-gone", NOTES_REF,
                    f"{len(gone)} note(s) annotate objects this clone wrote them on and no longer has (their "
                    "commits were deleted and pruned), so nothing here can show them; --fix takes them out of "
                    "this clone's notes in one commit, whose history keeps them; the prune stays here: sync "
                    "keeps them on the remote and in the other clones", "git harn doctor --fix --yes", fixable=True,
                    subject={"ref": NOTES_REF, "count": len(gone), "objects": gone[:20]})]


def archive_due(repo: Repo, ended: int) -> list[Finding]:
    """More ended run records kept as refs than harn.archiveThreshold: each
    costs a ref here and on the remote, and ``git harn gc`` folds the old
    ones into the archive, from which they read back as before."""
    threshold = repo.config_int(THRESHOLD_SETTING, DEFAULT_THRESHOLD)
    if ended <= max(threshold, 0):
        return []
    return [Finding(LEFTOVER, "archive-due", ARCHIVE_REF,
                    f"{ended} ended run records are refs, more than {THRESHOLD_SETTING} ({threshold}); "
                    f"'git harn gc' archives those older than {archive_after(repo)} (harn.archiveAfter): "
                    "log and status read them back as before", command("git harn gc"),
                    subject={"ended": ended, "threshold": threshold})]
