"""What a commit changes, told apart from where it sits: ``git patch-id``.

A squash that a forge merged by squashing or rebasing is a new commit with
a new id (another parent, maybe another committer), yet the same change;
``git patch-id --stable`` gives the same id to the same diff whatever its
line numbers. The diffs are made the same way on both sides (no rename
detection, binary files in full, no external diff or textconv), so a
setting of the operator's cannot make one side differ from the other.
"""

from __future__ import annotations

from typing import NamedTuple

from git_harn.git.objects import Oid, to_oid
from git_harn.git.repo import Repo
from git_harn.git.run import run_git

# One diff of each commit against its first parent, as ``git patch-id`` reads them.
_DIFF = ["-p", "--no-renames", "--binary", "--no-color", "--no-relative", "--no-show-signature",
         "--src-prefix=a/", "--dst-prefix=b/", "--format=commit %H"]
PATCH_LIMIT = 64 * 1024 * 1024  # bytes of diff read for one walk: past it, fewer ids, never a wrong one


class BaseCommit(NamedTuple):
    """One commit of a branch, as a merged-by-content check reads it."""

    oid: Oid
    tree: Oid
    message: str
    patch_id: str | None  # None: a merge (no one diff) or a commit with no change


def patch_ids(repo: Repo, *revisions: str) -> dict[Oid, str]:
    """commit -> its stable patch-id, for the non-merge commits ``git log
    <revisions>`` walks (``<tip>``, ``^<hidden>``, or ``-1 <commit>``)."""
    log = run_git(["log", "--no-merges", *_DIFF, *revisions, "--"], repo.cli_cwd)
    if not log.stdout or len(log.stdout) > PATCH_LIMIT:
        return {}
    done = run_git(["patch-id", "--stable"], repo.cli_cwd, input_bytes=log.stdout)
    found: dict[Oid, str] = {}
    for line in done.stdout.decode("ascii", "replace").splitlines():
        patch, _, commit = line.partition(" ")
        if patch and commit:
            found[to_oid(commit.strip())] = patch
    return found


def patch_id(repo: Repo, commit: Oid) -> str | None:
    """The stable patch-id of ``commit`` against its first parent (None: it changes nothing)."""
    return patch_ids(repo, "-1", str(commit)).get(commit)


def commits_since(repo: Repo, tip: Oid, since: Oid | None, limit: int = 2000) -> list[BaseCommit]:
    """The commits of ``tip`` not in ``since`` (newest first, at most
    ``limit``), each with its tree, message and patch-id."""
    revisions = [str(tip), *([f"^{since}"] if since is not None else []), f"--max-count={limit}"]
    out = run_git(["log", "-z", "--no-show-signature", "--format=%H%x01%T%x01%B", *revisions, "--"],
                  repo.cli_cwd)
    ids = patch_ids(repo, *revisions)
    found = []
    for item in filter(None, out.stdout.decode("utf-8", "surrogateescape").split("\0")):
        commit, tree, message = item.lstrip("\n").split("\x01", 2)
        oid = to_oid(commit)
        found.append(BaseCommit(oid, to_oid(tree), message, ids.get(oid)))
    return found
