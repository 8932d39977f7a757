"""Whether what an integration agent put on the base is the judged work [T4].

An integration agent pushes by itself, so its report proves nothing about
what it pushed. Once it reports success the host fetches the base and
compares it with where the base stood before the agent ran (fetched under
the same merge lock):

- the base did not move: nothing landed, the claim is refused;
- the old base is no longer in the new one: history was rewritten;
- the commits between them, taken together, must make exactly the tree of
  the judged commit merged onto the old base (from their merge base, as
  ``git merge --squash`` stages it), with the task's (or the addendum's)
  box ticked in the roadmap. One squash, several commits or a merge commit
  all pass when their sum is that tree; an extra commit, a change to any
  other path, a missing part of the judged work, or a conflict the agent
  resolved (nobody judged the resolution) does not.

Trees, not patch-ids: a patch-id ignores whitespace, which a judged file
may not lose (an indented line in Python). Which of the new commits was the
judged squash is told by ``forge.content.merged_by_content`` (its trailer
and the expected tree, or the judged commit itself), so the detail can name
the others as not judged.
"""

from __future__ import annotations

from dataclasses import dataclass

from git_harn.errors import BadInput
from git_harn.forge.content import merged_by_content
from git_harn.git import Oid, Repo
from git_harn.git.patches import BaseCommit, commits_since
from git_harn.tasks.roadmap import tick_item

SHOWN = 10  # commits or paths named in one detail


@dataclass(frozen=True)
class Landing:
    """What an integration agent was to land, and where."""

    judged: Oid  # the commit the gates and both reviewers passed
    before: Oid  # the base as fetched before the agent ran
    landed: Oid  # the base as fetched after it reported success
    roadmap: str  # the roadmap's path in the tree
    task_id: str
    addendum: int | None
    upstream: str  # <remote>/<base>, for the detail


@dataclass(frozen=True)
class NotJudged:
    """Why the base is not the judged work on the old base. ``moved``: the
    base moved by something nobody judged (a tamper; git-harn does not
    unpush), else it did not move and the claim of success is refused."""

    detail: str
    moved: bool


def not_judged(repo: Repo, landing: Landing) -> NotJudged | None:
    """None when ``landing.landed`` is ``landing.before`` plus exactly the judged work; see the module."""
    old, new, upstream = _short(landing.before), _short(landing.landed), landing.upstream
    if landing.landed == landing.before:
        return NotJudged(f"the integration agent reported success but {upstream} did not move from {old}: "
                         "nothing landed, its claim is refused", moved=False)
    if not repo.contains(landing.landed, landing.before):
        return NotJudged(f"the integration agent rewrote {upstream}: {old}, where it stood before the agent ran, "
                         f"is no longer in it (now {new}); git-harn does not unpush: inspect {new} and the "
                         f"history that replaced {old}", moved=True)
    expected = judged_onto(repo, landing)
    if expected is not None and repo.tree_id(landing.landed) == expected:
        return None
    commits = commits_since(repo, landing.landed, landing.before)  # read only to name them
    if expected is None:
        return NotJudged(f"the judged commit {_short(landing.judged)} does not merge cleanly onto {old}, yet the "
                         f"integration agent moved {upstream} to {new} by {_names(commits)}: nobody judged how it "
                         f"resolved that; git-harn does not unpush: inspect them", moved=True)
    return NotJudged(_differs(repo, landing, commits, expected), moved=True)


def judged_onto(repo: Repo, landing: Landing) -> Oid | None:
    """The tree the judged commit makes merged onto ``landing.before``, with
    its box ticked (the roadmap as the merge has it); None on a conflict."""
    ancestor = repo.merge_base(landing.before, landing.judged)
    merged = repo.merge_trees(ancestor if ancestor is not None else repo.empty_tree(), landing.before,
                              landing.judged)
    if isinstance(merged, list):  # the conflicting paths
        return None
    entry = repo.entry(merged, landing.roadmap)
    if entry is None:
        return merged
    blob, mode = entry
    try:
        ticked, changed = tick_item(repo.read_blob(blob).decode("utf-8", "surrogateescape"), landing.task_id,
                                    landing.addendum)
    except BadInput:  # no such task there: nothing to tick, the tree is compared as merged
        return merged
    if not changed:
        return merged
    return repo.tree_with(merged, {landing.roadmap: (ticked.encode("utf-8", "surrogateescape"), mode)})


def _differs(repo: Repo, landing: Landing, commits: list[BaseCommit], expected: Oid) -> str:
    """The detail of a base that moved by more, less or other than the judged work."""
    paths = repo.changed_paths(expected, [repo.tree_id(landing.landed)])
    what = f"addendum {landing.addendum} of task" if landing.addendum is not None else "task"
    squash = merged_by_content(BaseCommit(landing.judged, expected, "", None), commits, landing.task_id,
                               landing.addendum)
    others = [c for c in commits if c.oid != squash]
    which = f"; the judged work is {_short(squash)}, not judged: {_names(others)}" if squash is not None else ""
    return (f"the integration agent landed what was not judged: {landing.upstream} moved from "
            f"{_short(landing.before)} to {_short(landing.landed)} by {_names(commits)}, which taken together "
            f"do not make the judged commit {_short(landing.judged)} merged onto {_short(landing.before)} with "
            f"{what} {landing.task_id} ticked ({len(paths)} path(s) differ: {_shown(paths)}){which}; git-harn "
            f"does not unpush: inspect {_names(others)} on {landing.upstream}")


def _names(commits: list[BaseCommit]) -> str:
    return f"{len(commits)} commit(s): " + _shown([_short(c.oid) for c in commits])


def _shown(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (f" … and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _short(oid: Oid | None) -> str:
    return str(oid)[:12]
