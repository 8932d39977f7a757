"""All git access: pygit2 where it is faster or safer, the git CLI where git's
own behaviour matters. Errors become git-harn's own exceptions here."""

from git_harn.git.repo import Repo, open_repo

__all__ = ["Repo", "open_repo"]
