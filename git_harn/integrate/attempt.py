"""One integration attempt: rebase, squash, tick, commit, push [I1].

An attempt ends in exactly one of two ways, as a value: a report (landed, or
stopped with the reason in it), or a Retry when the push lost a race and the
whole attempt must start over from a fresh fetch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from git_harn.errors import HarnError, RaceLost, Refused
from git_harn.failpoints import failpoint
from git_harn.git import Oid, Repo
from git_harn.git import checkout as wt
from git_harn.git.objects import REGULAR_MODES
from git_harn.git.remote import MOVED_ON, Update, push
from git_harn.git.worktrees import checked_out_branches, head_of
from git_harn.integrate.report import (
    CONFLICT,
    LANDED,
    NOTHING_TO_INTEGRATE,
    PUSH_FAILED,
    REFUSED,
    IntegrationReport,
    new_report,
)
from git_harn.integrate.target import Moved, Target
from git_harn.notices import warn
from git_harn.store.notes import merge_note
from git_harn.tasks.roadmap import Task, tick_item

SHOWN_PATHS = 10
TITLE_LIMIT = 200


@dataclass(frozen=True)
class Retry:
    """The push lost a race: ``why`` is what the remote said."""

    why: str
    commit: str  # what this attempt made and could not push


def attempt(repo: Repo, target: Target, worktree: Path, base: Oid, task: Task,
            number: int) -> IntegrationReport | Retry:
    made = squash(repo, target, worktree, base, task, number)
    if isinstance(made, IntegrationReport):
        return made
    commit, tip = made
    failpoint("integrate-after-commit")
    failpoint("integrate-before-push")
    pushed = push(repo, target.remote, [Update(f"refs/heads/{target.base}", f"refs/heads/{target.work_branch}",
                                               str(base))], lease=True, cwd=worktree)
    if pushed.status == MOVED_ON:
        return Retry(pushed.words, str(commit))
    if not pushed.ok:
        told = pushed.told("\n")
        return new_report(target, number, rebased=True, squashMerged=True, roadmapMarkedDone=True,
                          outcome=PUSH_FAILED, summary=f"push to {target.upstream} was refused: {told}")
    failpoint("integrate-after-push")
    return _landed(repo, target, commit, base, number, tip)


def squash(repo: Repo, target: Target, worktree: Path, base: Oid, task: Task,
           number: int) -> tuple[Oid, Oid] | IntegrationReport:
    """The judged commit rebased onto ``base`` and squashed with its box
    ticked, as one commit on ``base`` (``integrate-<slug>`` points at it):
    (that commit, the rebased tip), or the report of why there is none."""
    tip = _rebase(repo, target, worktree, base)
    if isinstance(tip, list):
        return _conflict(target, number, "rebase", tip, repo.ref_oid(target.branch_ref))
    # The tip grows from the base (it did, or the rebase made it so): its
    # squash onto the base is its own tree, which is what `git merge --squash`
    # stages for a descendant (a fast-forward: no content is merged, so no
    # conflict). Read in-process, where a switch and a merge ran before.
    squashed = repo.tree_id(tip)
    if squashed == repo.tree_id(base):
        return new_report(target, number, rebased=True, outcome=NOTHING_TO_INTEGRATE, summary=(
            f"nothing to integrate: {target.branch} ({str(tip)[:12]}) adds no change to "
            f"{target.upstream}; {_what(target)} stays unticked"))
    ticked = _tick_roadmap(repo, target, squashed, base)
    if not isinstance(ticked, Oid):  # an Oid is a str too: the refusal is the other one
        return new_report(target, number, rebased=True, outcome=REFUSED,
                          summary=f"{ticked}; {_what(target)} cannot be marked done, nothing was pushed")
    # The squash and the tick as one commit of their tree onto the base: what
    # `git commit` of the index with the tick staged would make, in one process.
    commit = wt.commit_tree(worktree, ticked, base, commit_message(target, task, repo.ahead_behind(tip, base)[0]),
                            sign=repo.config_bool("commit.gpgSign", False))
    _point_work_branch(repo, target, commit)
    return commit, tip


def _rebase(repo: Repo, target: Target, worktree: Path, base: Oid) -> Oid | list[str]:
    """The judged commit rebased onto ``base`` (the branch moved with CAS from
    it), or the conflicting paths, with the task branch left exactly as it
    was. The branch must still hold the judged commit: else Moved [T4]."""
    tip = target.judged
    found = repo.ref_oid(target.branch_ref)
    if found != tip:
        raise Moved(target, found)
    if repo.contains(tip, base):
        return tip
    _refuse_if_checked_out(repo, target)
    # Untracked leftovers go first; the switch discards tracked ones.
    wt.clean_untracked(worktree)
    wt.switch_detached(worktree, tip)
    conflicts = wt.rebase_onto(worktree, base)
    if conflicts is not None:
        return conflicts
    rebased = head_of(worktree)
    assert rebased is not None
    try:
        repo.move_ref(target.branch_ref, rebased, tip, f"git-harn: integrate: rebase onto {target.upstream}")
    except RaceLost:  # moved while the rebase ran
        raise Moved(target, repo.ref_oid(target.branch_ref)) from None
    return rebased


def _refuse_if_checked_out(repo: Repo, target: Target) -> None:
    """Rebasing a branch that a worktree has checked out would leave that
    checkout out of step with its branch; git refuses too."""
    for path, branch in checked_out_branches(repo):
        if branch == target.branch_ref:
            raise Refused(
                f"{target.branch} needs a rebase onto {target.upstream} but is checked out in {path}; "
                f"switch that worktree away from it (git -C {path} switch --detach) and rerun"
            )


def _conflict(target: Target, number: int, step: str, paths: list[str], tip: Oid | None) -> IntegrationReport:
    shown = ", ".join(paths[:SHOWN_PATHS]) + (f" … and {len(paths) - SHOWN_PATHS} more"
                                               if len(paths) > SHOWN_PATHS else "")
    return new_report(target, number, outcome=CONFLICT, conflictPaths=paths,
                      conflicts=f"{step} of {target.branch} onto {target.upstream} conflicts in {shown}",
                      summary=(f"{target.branch} was left as it was ({str(tip)[:12]}); rebase it "
                               f"onto {target.upstream} by hand, then rerun"))


def _tick_roadmap(repo: Repo, target: Target, squashed: Oid, base: Oid) -> Oid | str:
    """``- [ ] <id>`` → ``- [x] <id>`` (for an addendum, its own ``- [ ] addendum
    <n>:`` line under the task) in the tree the squash staged: that tree
    ticked, else why the roadmap cannot be ticked.

    The task branch decides what sits at the roadmap's path, so the file on
    disk may be a symlink out of the worktree: only blobs are read and
    written, never the filesystem [P5]. The squash may change no roadmap
    line but this task's own checkbox: a task does not tick other tasks."""
    entry = repo.entry(squashed, target.roadmap)
    if entry is None:
        return f"the squash of {target.branch} removes {target.roadmap}"
    oid, mode = entry
    if mode not in REGULAR_MODES:
        return (f"the squash of {target.branch} makes {target.roadmap} something other than a "
                f"regular file (mode {mode:o})")
    merged = repo.read_blob(oid)
    before = repo.read_file(base, target.roadmap) or b""
    ticked, _ = tick_item(before.decode("utf-8", "surrogateescape"), target.task_id, target.addendum)
    wanted = ticked.encode("utf-8", "surrogateescape")
    if merged not in (before, wanted):
        return (f"the squash of {target.branch} changes {target.roadmap} beyond the checkbox of {_what(target)}; "
                "a task may not edit the roadmap or tick other tasks")
    if merged == wanted:
        return squashed
    return repo.tree_with(squashed, {target.roadmap: (wanted, mode)})


def _what(target: Target) -> str:
    if target.addendum is None:
        return f"task {target.task_id}"
    return f"addendum {target.addendum} of task {target.task_id}"


def commit_message(target: Target, task: Task, commits: int) -> str:
    """Subject from the task's (or the addendum's) title (untrusted text, kept
    to one printable line)."""
    item = task.addendum(target.addendum) if target.addendum is not None else None
    raw = item.title if item is not None else task.title
    title = "".join(ch for ch in raw if ch.isprintable())[:TITLE_LIMIT].strip()
    what = f"addendum {target.addendum} of task" if target.addendum is not None else "task"
    trailers = f"Harnery-Task: {target.task_id}\n"
    if target.addendum is not None:
        trailers += f"Harnery-Addendum: {target.addendum}\n"
    return (f"{title or 'Task ' + target.task_id}\n\n"
            f"Squash of {target.branch} ({commits} commit(s)) onto {target.upstream}: "
            f"{what} {target.task_id}, marked done in {target.roadmap}.\n\n{trailers}")


def _landed(repo: Repo, target: Target, commit: Oid, base: Oid, number: int, tip: Oid) -> IntegrationReport:
    report = new_report(target, number, ok=True, rebased=True, squashMerged=True, pushed=True,
                        roadmapMarkedDone=True, commit=str(commit), outcome=LANDED,
                        judged=str(target.judged), rebasedTip=str(tip) if tip != target.judged else None, summary=(
                            f"{target.branch} landed on {target.upstream} as {str(commit)[:12]} "
                            f"({_what(target)} marked done) after {number} integration attempt(s)"))
    # Landed is landed: the local bookkeeping after the push may fail (a lock
    # file a killed git left), and is then reported and done next time, never
    # turned into a failure of what the remote already holds [P6].
    try:
        if repo.ref_oid(target.tracking_ref) == base:  # the remote has no fetch refspec that push could follow
            repo.move_ref(target.tracking_ref, commit, base, "git-harn: integrate: pushed")
        merge_note(repo, commit, "integration", report.document())
        _drop_work_branch(repo, target, commit)
    except HarnError as exc:
        left = (f"after the push, the clean-up of {target.work_branch} failed ({exc.message}); "
                f"it is left behind and the next integration of the task resets it")
        warn(left)
        report.summary += f"; {left}"
    return report


def _point_work_branch(repo: Repo, target: Target, commit: Oid) -> None:
    """``integrate-<slug>`` at the squash commit, whatever an earlier attempt
    left it at (as ``git branch -f``, compare-and-swap on the value read):
    what is pushed, and what a crash before the push leaves to look at."""
    ref = f"refs/heads/{target.work_branch}"
    repo.move_ref(ref, commit, repo.ref_oid(ref), "git-harn: integrate: squash")


def _drop_work_branch(repo: Repo, target: Target, commit: Oid) -> None:
    """The throwaway branch goes once its commit is on the remote-tracking ref [P1]."""
    if repo.ref_oid(target.tracking_ref) != commit:
        return
    repo.delete_ref(f"refs/heads/{target.work_branch}", commit)
