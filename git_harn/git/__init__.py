"""The git layer: every git argv, every pygit2 object and every read of git's
admin files. pygit2 where it is faster or safer, the git CLI (argv lists,
never a shell) where git's own behaviour matters. Errors become git-harn's
own exceptions here.

Layer 1: may import only the shared helpers at the top of the package
(errors, text, clock, notices, failpoints). Nothing outside this folder
imports pygit2 or runs git.
"""

from git_harn.git.objects import Change, CommitInfo, Oid, Signature, to_oid
from git_harn.git.repo import ANY, Repo, open_repo

__all__ = ["ANY", "Change", "CommitInfo", "Oid", "Repo", "Signature", "open_repo", "to_oid"]
