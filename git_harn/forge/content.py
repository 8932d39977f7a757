"""Merged by content: whether the base took a task's squash, told from the
base's commits alone, with no forge to ask [F2].

A forge may merge a request three ways. A merge commit (or a fast-forward)
keeps the squash itself: it is among the base's commits. A squash merge or a
rebase merge writes a new commit: it is the task's when it carries the
task's ``Harnery-Task`` trailer (and this addendum's, or for the task itself
no, ``Harnery-Addendum``) and the judged tree exactly, or when its change has
the squash's patch-id (the same diff on a base that moved meanwhile).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from git_harn.git.objects import Oid
from git_harn.git.patches import BaseCommit


def carries_task(message: str, task_id: str, addendum: int | None) -> bool:
    """The message names the task (and exactly this addendum, or none) in its trailers."""
    if not re.search(rf"^Harnery-Task: {re.escape(task_id)}[ \t]*$", message, re.MULTILINE):
        return False
    addenda = re.findall(r"^Harnery-Addendum: ([0-9]+)[ \t]*$", message, re.MULTILINE)
    return addenda == ([str(addendum)] if addendum is not None else [])


def merged_by_content(squash: BaseCommit, commits: Iterable[BaseCommit], task_id: str,
                      addendum: int | None = None) -> Oid | None:
    """The base's commit that took ``squash`` (``commits``: the base's commits
    since the request was made), or None."""
    for commit in commits:
        if commit.oid == squash.oid:
            return commit.oid
        if commit.tree == squash.tree and carries_task(commit.message, task_id, addendum):
            return commit.oid
        if squash.patch_id is not None and commit.patch_id == squash.patch_id:
            return commit.oid
    return None
