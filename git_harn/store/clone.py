"""Which clone of a repository made a workspace [N3] [P1].

A record names the clone that made its workspace: an id kept in that
clone's own config (``harn.cloneId``, made on first use) and, to tell the
operator where it lives, its common git dir. Records fetched into another
clone are then known for what they are there: another clone's.
"""

from __future__ import annotations

from git_harn.git import Repo
from git_harn.git.identity import clone_id, set_clone_id
from git_harn.store.ids import new_clone_id
from git_harn.store.locks import hold, locks_dir


def this_clone(repo: Repo) -> dict[str, str]:
    """This clone as a record names it; its id is made on first use."""
    return {"id": clone_id(repo) or _make_clone_id(repo), "commonDir": str(repo.common_dir)}


def _make_clone_id(repo: Repo) -> str:
    # Under a lock, and read again inside it: two first starts at once must
    # not each write an id, leaving one of them with records of "another" clone.
    with hold(locks_dir(repo) / "clone-id.lock", "clone id", "make harn.cloneId", 30.0, announce=False):
        made = clone_id(repo)
        if made is None:
            made = new_clone_id()
            set_clone_id(repo, made)
        return made
