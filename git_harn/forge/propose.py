"""The entry points: propose a task's judged squash on a forge [F1], and
read back what became of it [F2].

``propose`` is idempotent: asked again for the same task and squash (a
retry, or a rerun after a crash at any point) it pushes nothing new and
finds the request an earlier call opened. ``proposal_state`` asks the forge,
and where the forge cannot be asked (no token) looks at the base's commits
since the request was made (``content``).
"""

from __future__ import annotations

from dataclasses import replace

from git_harn.errors import BadInput, ForgeFailure
from git_harn.forge.content import merged_by_content
from git_harn.forge.model import Ask, AutoMerge, Forge, Proposal, Reading, State, landing_branch
from git_harn.git.branches import check_branch_name, fetch_branch
from git_harn.git.objects import Oid
from git_harn.git.patches import BaseCommit, commits_since, patch_id
from git_harn.git.repo import Repo


def propose(repo: Repo, forge: Forge, remote: str, base: str, task_id: str, squash: Oid, title: str,
            body: str, *, addendum: int | None = None, previous: Oid | None = None,
            auto_merge: bool = False, merge_method: str | None = None) -> Proposal:
    """Push ``squash`` to ``harnery/land/<id>`` on ``remote`` and open (or
    find) the one request from it to ``base``. ``previous``: the squash an
    earlier call pushed for this task (the only value the branch is moved
    from); ``auto_merge``: ask the forge to merge it once its checks pass."""
    check_branch_name(base, "base")
    if base.startswith("harnery/"):
        raise BadInput(f"the base cannot be one of git-harn's own branches: {base}")
    if not title.strip():
        raise BadInput("a proposal needs a title")
    repo.commit_info(squash)  # the squash is a commit of this repository, or GitFailure
    ask = Ask(base, landing_branch(task_id, addendum), squash, title.strip(), body, previous, auto_merge)
    proposal = forge.open_or_find(repo, remote, ask)
    if auto_merge and proposal.auto_merge is None and proposal.state is State.OPEN:
        proposal = replace(proposal, auto_merge=_auto_merge(forge, proposal, merge_method))
    return proposal


def _auto_merge(forge: Forge, proposal: Proposal, method: str | None) -> AutoMerge:
    """Auto-merge asked; a forge that fails to answer leaves the request open, and says why."""
    try:
        return forge.auto_merge(proposal, method)
    except ForgeFailure as failure:
        return AutoMerge(False, failure.message)


def proposal_state(repo: Repo, forge: Forge, remote: str, proposal: Proposal, task_id: str,
                   addendum: int | None = None, since: Oid | None = None) -> Reading:
    """What became of ``proposal``: the forge's word, or (it cannot be asked)
    the base's content since ``since`` (the base when the request was made)."""
    reading = forge.read(proposal)
    if reading.state is not State.UNKNOWN:
        return reading
    tip = fetch_branch(repo, remote, proposal.base)
    merged = merged_by_content(squash_of(repo, proposal.head), commits_since(repo, tip, since), task_id, addendum)
    if merged is not None:
        return Reading(State.MERGED, merged, "", "content")
    return Reading(State.UNKNOWN, None, "", "content")


def squash_of(repo: Repo, squash: Oid) -> BaseCommit:
    info = repo.commit_info(squash)
    return BaseCommit(squash, info.tree, info.message, patch_id(repo, squash))
