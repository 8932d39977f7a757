"""Integrate a task branch as one squash commit on ``<remote>/<base>`` [I1]-[I4].

Under the merge lock, in git-harn's own integration worktree (never the
user's checkout), each attempt fetches the base, rebases the task branch
onto it, resets ``integrate-<slug>`` onto the fresh base with ``git switch
--discard-changes -C`` (which throws away whatever an earlier attempt left
staged), squash-merges, ticks the roadmap checkbox in the same commit and
pushes with a lease on the base it read [P3]. A push that loses a race
re-fetches and starts the attempt over, up to a bound. A crash is not
retried automatically [I4]: a marker left behind makes the next run stop
and ask the operator to look first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pygit2

from git_harn.clock import now_iso
from git_harn.errors import BadInput, GitFailure, Refused
from git_harn.failpoints import failpoint
from git_harn.git import Repo
from git_harn.git.run import error_line, run_git
from git_harn.integrate.report import (
    ALREADY_INTEGRATED,
    CONFLICT,
    LANDED,
    NEEDS_OPERATOR,
    NOTHING_TO_INTEGRATE,
    PUSH_FAILED,
    REFUSED,
    RETRIES_EXHAUSTED,
    IntegrationReport,
)
from git_harn.notices import info
from git_harn.store.locks import hold_merge, hold_worktrees
from git_harn.store.notes import merge_note
from git_harn.tasks.branches import DEFAULT_BASE
from git_harn.tasks.roadmap import (
    Task,
    find_task,
    parse_roadmap,
    parse_task_branch,
    roadmap_path,
    tick,
    validate_task_id,
)
from git_harn.text import jsonable
from git_harn.workspace.paths import admin_dir, repo_key, worktree_root
from git_harn.workspace.reconcile import prune_registration

DEFAULT_REMOTE = "origin"
DEFAULT_MAX_ATTEMPTS = 5
MERGE_LOCK_TIMEOUT = 600  # seconds; git config harn.mergeLockTimeout
# The integration worktree is git-harn's own: no user hook runs in it.
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
# Push rejections that mean "the base moved under us" (checked by a re-fetch).
MOVED_SIGNS = ("stale info", "non-fast-forward", "fetch first", "failed to update ref",
               "cannot lock ref", "incorrect old value", "but expected")
SHOWN_PATHS = 10
REMOTE_LINES = 20
REGULAR_FILE_MODES = (0o100644, 0o100755)
TITLE_LIMIT = 200


@dataclass(frozen=True)
class Request:
    branch: str
    base: str | None = None  # None: git config harn.base, else main
    remote: str = DEFAULT_REMOTE
    task_id: str | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    resume_after_crash: bool = False


@dataclass(frozen=True)
class Target:
    """A validated request: what lands where."""

    branch: str  # short name of the task branch
    base: str
    remote: str
    task_id: str
    addendum: int | None
    roadmap: str  # path of the roadmap inside the tree
    max_attempts: int

    @property
    def branch_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def tracking_ref(self) -> str:
        return f"refs/remotes/{self.remote}/{self.base}"

    @property
    def upstream(self) -> str:
        return f"{self.remote}/{self.base}"

    @property
    def work_branch(self) -> str:
        return f"integrate-{slug(self.task_id, self.addendum)}"


def slug(task_id: str, addendum: int | None = None) -> str:
    """``1.2.3`` → ``1-2-3`` (``-addendum-<n>`` for an addendum): one-to-one,
    since a task id holds only digits and dots."""
    suffix = f"-addendum-{addendum}" if addendum is not None else ""
    return task_id.replace(".", "-") + suffix


# --- input -------------------------------------------------------------------


def resolve_target(repo: Repo, request: Request) -> Target:
    """Check every input before anything changes [P7]."""
    branch = _branch_name(request.branch)
    if repo.ref_oid(f"refs/heads/{branch}") is None:
        raise BadInput(f"unknown branch: {branch}")
    base = _branch_name(request.base or repo.config("harn.base") or DEFAULT_BASE)
    _check_remote(repo, request.remote)
    parsed = parse_task_branch(branch)
    if request.task_id is not None:
        task_id = validate_task_id(request.task_id)
    elif parsed is not None:
        task_id = parsed[0]
    else:
        raise BadInput(f"cannot tell the task of {branch} (not roadmap-<id>); pass --task <id>")
    addendum = parsed[1] if parsed is not None and parsed[0] == task_id else None
    if request.max_attempts < 1:
        raise BadInput("--max-attempts must be at least 1")
    return Target(branch, base, request.remote, task_id, addendum,
                  _roadmap_file(repo), request.max_attempts)


def _branch_name(name: str) -> str:
    short = name.removeprefix("refs/heads/")
    if short.startswith("-") or short == "HEAD" or not pygit2.reference_is_valid_name(f"refs/heads/{short}"):
        raise BadInput(f"invalid branch name: {name!r}")
    return short


def _check_remote(repo: Repo, remote: str) -> None:
    if remote.startswith("-"):
        raise BadInput(f"invalid remote name: {remote!r}")
    try:
        repo.pg.remotes[remote]
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise BadInput(f"unknown remote: {remote}") from exc


def _roadmap_file(repo: Repo) -> str:
    path = PurePosixPath(roadmap_path(repo.config("harn.roadmap")))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BadInput(f"harn.roadmap must be a path inside the repository, not {str(path)!r}")
    return str(path)


# --- the command -----------------------------------------------------------


def integrate(repo: Repo, request: Request) -> IntegrationReport:
    """Land ``request.branch`` on ``<remote>/<base>``; see the module docstring."""
    return integrate_target(repo, resolve_target(repo, request), request.resume_after_crash)


def integrate_target(repo: Repo, target: Target, resume_after_crash: bool = False) -> IntegrationReport:
    """Land an already validated ``target``, under the merge lock."""
    wait = repo.config_int("harn.mergeLockTimeout", MERGE_LOCK_TIMEOUT)
    with hold_merge(repo, f"integrate {target.branch} into {target.upstream}", wait):
        interrupted = _interrupted_run(repo, target, resume_after_crash)
        if interrupted is not None:
            return interrupted
        with _crash_marker(repo, target):
            return _integrate_locked(repo, target)


def _new_report(target: Target) -> IntegrationReport:
    return IntegrationReport(taskId=target.task_id, branch=target.branch, base=target.base,
                             remote=target.remote)


def _integrate_locked(repo: Repo, target: Target) -> IntegrationReport:
    report = _new_report(target)
    worktree: Path | None = None
    rejected: tuple[pygit2.Oid, str] | None = None  # (base we pushed onto, why refused)
    for attempt in range(1, target.max_attempts + 1):
        base = fetch_base(repo, target)
        if rejected is not None and rejected[0] == base:
            return _push_failed(report, target, rejected[1])
        report = _new_report(target)  # nothing from a lost attempt is carried forward
        report.attempts = attempt
        task = _roadmap_task(repo, target, base)
        if _landed_before(repo, target, base, task, report):
            return report
        worktree = worktree or ensure_worktree(repo, base)
        why = _attempt(repo, target, worktree, base, task, report)
        if why is None:
            return report
        rejected = (base, why)
        info(f"push to {target.upstream} was rejected ({why}); fetching and trying again")
    report.outcome = RETRIES_EXHAUSTED
    report.summary = (f"{target.upstream} kept moving: the push was rejected {target.max_attempts} "
                      f"time(s); rerun, or raise --max-attempts")
    return report


def _push_refused(report: IntegrationReport, target: Target, why: str) -> None:
    report.outcome = PUSH_FAILED
    report.commit = None  # made, but not on the base
    report.summary = f"push to {target.upstream} was refused: {why}"


def _push_failed(report: IntegrationReport, target: Target, why: str) -> IntegrationReport:
    report.outcome = PUSH_FAILED
    report.pushed = False
    report.ok = False
    report.summary = f"push to {target.upstream} was rejected although it did not move: {why}"
    return report


# --- I4: a crash is not retried behind the operator's back ----------------


def marker_path(repo: Repo, target: Target) -> Path:
    return repo.common_dir / "harnery" / "integrate" / f"{slug(target.task_id, target.addendum)}.json"


@contextmanager
def _crash_marker(repo: Repo, target: Target) -> Iterator[None]:
    """A file that exists only while an integrate runs (under the merge lock).
    Python-level failures remove it; a killed process cannot, and that is the point."""
    path = marker_path(repo, target)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    scratch.write_text(json.dumps({"taskId": target.task_id, "branch": target.branch,
                                   "remote": target.remote, "base": target.base,
                                   "pid": os.getpid(), "startedAt": now_iso()}))
    os.replace(scratch, path)
    try:
        yield
    finally:
        with suppress(FileNotFoundError):
            path.unlink()


def _interrupted_run(repo: Repo, target: Target, resume: bool) -> IntegrationReport | None:
    """A needs-operator report if an earlier integrate of this task died midway."""
    path = marker_path(repo, target)
    try:
        left = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        left = {}
    if resume:
        path.unlink(missing_ok=True)
        info(f"resuming after an interrupted integrate of task {target.task_id}")
        return None
    report = _new_report(target)
    report.outcome = NEEDS_OPERATOR
    report.summary = (
        f"an earlier integrate of task {target.task_id} (pid {left.get('pid', '?')}, started "
        f"{left.get('startedAt', '?')}) was interrupted and is not retried automatically: it may "
        f"already have pushed. Inspect {target.upstream} (git fetch {target.remote}; git log "
        f"{target.upstream}) and {target.roadmap} there, then rerun with --resume-after-crash"
    )
    return report


# --- fetch, roadmap, already integrated ------------------------------------


def fetch_base(repo: Repo, target: Target) -> pygit2.Oid:
    """Fetch ``<remote>/<base>`` and return where it is."""
    refspec = f"+refs/heads/{target.base}:{target.tracking_ref}"
    done = run_git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", target.remote, refspec],
                   repo.cli_cwd, check=False)
    if done.returncode != 0:
        why = error_line(done.stderr)
        if "couldn't find remote ref" in why:
            raise BadInput(f"{target.remote} has no branch {target.base}")
        raise GitFailure(f"git fetch {target.remote} failed: {why}")
    oid = repo.ref_oid(target.tracking_ref)
    if oid is None:
        raise GitFailure(f"{target.tracking_ref} is missing after the fetch")
    return oid


def _roadmap_task(repo: Repo, target: Target, base: pygit2.Oid) -> Task:
    """The task's roadmap entry as ``<remote>/<base>`` has it; BadInput if absent."""
    try:
        blob = repo.pg[repo.commit(base).tree[target.roadmap].id]
    except KeyError:
        raise BadInput(f"{target.upstream} has no roadmap at {target.roadmap} (git config harn.roadmap)") from None
    if not isinstance(blob, pygit2.Blob):
        raise BadInput(f"{target.roadmap} on {target.upstream} is not a file")
    task = find_task(parse_roadmap(blob.data.decode("utf-8", "replace")), target.task_id)
    if task is None:
        raise BadInput(f"{target.roadmap} on {target.upstream} has no task {target.task_id}")
    return task


def _landed_before(repo: Repo, target: Target, base: pygit2.Oid, task: Task,
                   report: IntegrationReport) -> bool:
    """Fill ``report`` and say True when the task is already on the base, or
    when the base says it is done without showing how.

    Only this task's own squash commit (its ``Harnery-Task:`` trailer, and
    ``Harnery-Addendum:`` for an addendum) proves it landed: a checkbox can be
    ticked by any commit, another task's included [P5]."""
    if target.addendum is None and not task.done:
        return False
    commit = _squash_on(repo, target, base)
    if commit is None:
        if target.addendum is not None:
            return False
        report.outcome = NEEDS_OPERATOR
        report.summary = (f"task {target.task_id} is ticked in {target.roadmap} on {target.upstream}, "
                          f"but no commit there carries Harnery-Task: {target.task_id}; it was not "
                          f"integrated by git-harn. Inspect {target.upstream} and the roadmap; untick "
                          f"the task there to integrate {target.branch}")
        return True
    report.ok = report.rebased = report.squashMerged = report.pushed = report.roadmapMarkedDone = True
    report.commit = commit
    report.outcome = ALREADY_INTEGRATED
    what = f"addendum {target.addendum} of task" if target.addendum is not None else "task"
    report.summary = (f"{what} {target.task_id} is already integrated into {target.upstream} "
                      f"by {commit[:12]}; nothing changed")
    return True


def _squash_on(repo: Repo, target: Target, base: pygit2.Oid) -> str | None:
    """The newest commit on the base that is this task's squash: its
    ``Harnery-Task:`` trailer, and this addendum's (or, for the task itself,
    no) ``Harnery-Addendum:`` trailer."""
    out = repo.git("log", "-z", "--format=%H%n%B", "-E",
                   f"--grep=^Harnery-Task: {re.escape(target.task_id)}$", str(base))
    for entry in filter(None, out.split("\0")):
        commit, _, message = entry.partition("\n")
        addenda = re.findall(r"^Harnery-Addendum: (\d+)$", message, re.MULTILINE)
        if addenda == ([str(target.addendum)] if target.addendum is not None else []):
            return commit.strip()
    return None


# --- the integration worktree ------------------------------------------------


def integration_worktree(repo: Repo) -> Path:
    """Beside the workspaces, under a name no run id can take."""
    return worktree_root(repo) / repo_key(repo) / ".integrate"


def ensure_worktree(repo: Repo, start: pygit2.Oid) -> Path:
    """The integration worktree, made (detached) on first use and reused
    while it is still this repository's [P6]."""
    path = integration_worktree(repo)
    if _registered_here(repo, path):
        _abandon_rebase(path)
        return path
    _clear_stale_checkout(path)
    prune_registration(repo, path)
    if os.path.lexists(path) and (not path.is_dir() or any(path.iterdir())):
        raise Refused(f"{path} is in the way of the integration worktree; move it aside")
    path.parent.mkdir(parents=True, exist_ok=True)
    with hold_worktrees(repo):
        repo.git("worktree", "add", "--detach", "--quiet", str(path), str(start))
    return path


def _registered_here(repo: Repo, path: Path) -> bool:
    """``path/.git`` names a git dir that exists, is this repository's, and
    whose ``gitdir`` file points back at ``path``."""
    if not (path / ".git").is_file():
        return False
    try:
        linked = _admin_dir(path)
    except OSError:
        return False
    admin = admin_dir(repo, path)
    return admin is not None and linked.is_dir() and os.path.samefile(admin, linked)


def _clear_stale_checkout(path: Path) -> None:
    """A checkout whose git dir is gone (the repository was cloned afresh,
    its registration pruned) or belongs elsewhere. It is git-harn's own
    scratch copy of committed content, never anyone's work, so it goes."""
    if path.is_symlink() or not (path / ".git").is_file():
        return
    info(f"the integration worktree {path} no longer belongs to this repository; making it afresh")
    shutil.rmtree(path)


def _admin_dir(worktree: Path) -> Path:
    text = (worktree / ".git").read_text().strip()
    return worktree / text.removeprefix("gitdir:").strip()  # a relative one is relative to the worktree


def _abandon_rebase(worktree: Path) -> None:
    """An attempt killed mid-rebase left it in progress: abort it."""
    admin = _admin_dir(worktree)
    if (admin / "rebase-merge").exists() or (admin / "rebase-apply").exists():
        run_git(["rebase", "--abort"], worktree, check=False)


def _worktree_head(worktree: Path) -> pygit2.Oid:
    target = pygit2.Repository(str(worktree)).head.target
    if not isinstance(target, pygit2.Oid):
        raise GitFailure(f"cannot read HEAD of {worktree}")
    return target


def _wt(worktree: Path, *args: str, input_bytes: bytes | None = None) -> str:
    done = run_git([*NO_HOOKS, *args], worktree, input_bytes=input_bytes, check=False)
    if done.returncode != 0:  # name the subcommand, not the ``-c`` before it
        raise GitFailure(f"git {args[0]} failed: {error_line(done.stderr or done.stdout)}")
    return done.stdout.decode("utf-8", "surrogateescape")


def _conflict_paths(worktree: Path) -> list[str]:
    out = _wt(worktree, "diff", "--name-only", "--diff-filter=U", "-z")
    return [p for p in out.split("\0") if p]


# --- one attempt -------------------------------------------------------------


def _attempt(repo: Repo, target: Target, worktree: Path, base: pygit2.Oid, task: Task,
             report: IntegrationReport) -> str | None:
    """Rebase, squash, tick, commit, push. None when finished (landed or
    stopped, see ``report``); the rejection text when the push lost a race."""
    # Untracked leftovers go first; each switch below discards tracked ones.
    _wt(worktree, "clean", "-ffdq")
    tip = _rebase(repo, target, worktree, base, report)
    if tip is None:
        return None
    report.rebased = True
    _wt(worktree, "switch", "--quiet", "--discard-changes", "--no-track", "-C", target.work_branch, str(base))
    if not _squash(target, worktree, tip, report):
        return None
    if _nothing_staged(worktree):
        _nothing_to_integrate(report, target, tip)
        return None
    report.squashMerged = True
    refused = _tick_roadmap(repo, target, worktree, base)
    if refused is not None:
        _roadmap_refused(report, target, refused)
        return None
    report.roadmapMarkedDone = True
    commit = _commit(repo, target, worktree, task, tip, base)
    report.commit = str(commit)
    failpoint("integrate-before-push")
    pushed = _push(target, worktree, base)
    if pushed is not None and pushed.refused is not None:
        _push_refused(report, target, pushed.refused)
        return None
    if pushed is not None:
        return pushed.moved
    failpoint("integrate-after-push")
    _landed(repo, target, worktree, commit, base, report)
    return None


def _rebase(repo: Repo, target: Target, worktree: Path, base: pygit2.Oid,
            report: IntegrationReport) -> pygit2.Oid | None:
    """The task tip rebased onto ``base`` (the branch moved with CAS), or None
    after a conflict, with the task branch left exactly as it was."""
    tip = repo.ref_oid(target.branch_ref)
    if tip is None:
        raise BadInput(f"unknown branch: {target.branch}")
    if tip == base or repo.pg.descendant_of(tip, base):
        return tip
    _refuse_if_checked_out(repo, target)
    _wt(worktree, "switch", "--quiet", "--discard-changes", "--detach", str(tip))
    done = run_git([*NO_HOOKS, "-c", "rebase.autoStash=false", "-c", "rebase.updateRefs=false",
                    "rebase", "--quiet", "--no-autosquash", str(base)], worktree, check=False)
    if done.returncode != 0:
        paths = _conflict_paths(worktree)
        run_git(["rebase", "--abort"], worktree, check=False)
        if not paths:
            raise GitFailure(f"git rebase failed: {error_line(done.stderr or done.stdout)}")
        _conflict(report, target, "rebase", paths, tip)
        return None
    rebased = _worktree_head(worktree)
    repo.move_ref(target.branch_ref, rebased, tip, f"git-harn: integrate: rebase onto {target.upstream}")
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


def checked_out_branches(repo: Repo) -> Iterator[tuple[Path, str]]:
    """(worktree, branch ref) for every worktree that has a branch checked out,
    read from the HEAD files (as ``git worktree list`` does, without a process)."""
    heads = [] if repo.pg.is_bare else [(repo.common_dir, repo.common_dir.parent)]
    admin_root = repo.common_dir / "worktrees"
    if admin_root.is_dir():
        for admin in admin_root.iterdir():
            with suppress(OSError):
                heads.append((admin, Path((admin / "gitdir").read_text().strip()).parent))
    for admin, path in heads:
        with suppress(OSError):
            head = (admin / "HEAD").read_text().strip()
            if head.startswith("ref: "):
                yield path, head[len("ref: "):]


def _conflict(report: IntegrationReport, target: Target, step: str, paths: list[str],
              tip: pygit2.Oid) -> None:
    shown = ", ".join(paths[:SHOWN_PATHS]) + (f" … and {len(paths) - SHOWN_PATHS} more"
                                               if len(paths) > SHOWN_PATHS else "")
    report.outcome = CONFLICT
    report.conflictPaths = paths
    report.conflicts = f"{step} of {target.branch} onto {target.upstream} conflicts in {shown}"
    report.summary = (f"{target.branch} was left as it was ({str(tip)[:12]}); rebase it "
                      f"onto {target.upstream} by hand, then rerun")


def _squash(target: Target, worktree: Path, tip: pygit2.Oid, report: IntegrationReport) -> bool:
    done = run_git([*NO_HOOKS, "merge", "--squash", "--quiet", str(tip)], worktree, check=False)
    if done.returncode == 0:
        return True
    paths = _conflict_paths(worktree)
    if not paths:
        raise GitFailure(f"git merge --squash failed: {error_line(done.stderr or done.stdout)}")
    _conflict(report, target, "squash merge", paths, tip)
    return False


def _nothing_staged(worktree: Path) -> bool:
    done = run_git([*NO_HOOKS, "diff", "--cached", "--quiet"], worktree, check=False)
    if done.returncode not in (0, 1):
        raise GitFailure(f"git diff --cached failed: {error_line(done.stderr)}")
    return done.returncode == 0


def _nothing_to_integrate(report: IntegrationReport, target: Target, tip: pygit2.Oid) -> None:
    """A branch with no change of its own must not land as done with only
    its checkbox ticked."""
    report.outcome = NOTHING_TO_INTEGRATE
    report.summary = (f"nothing to integrate: {target.branch} ({str(tip)[:12]}) adds no change to "
                      f"{target.upstream}; task {target.task_id} stays unticked")


def _tick_roadmap(repo: Repo, target: Target, worktree: Path, base: pygit2.Oid) -> str | None:
    """``- [ ] <id>`` → ``- [x] <id>`` in the index the squash left; None when
    done, else why the roadmap cannot be ticked.

    The task branch decides what sits at the roadmap's path, so the file on
    disk may be a symlink out of the worktree: only blobs are read and
    written, never the filesystem [P5]. The squash may change no roadmap
    line but this task's own checkbox: a task does not tick other tasks."""
    entry = _index_entry(worktree, target.roadmap)
    if entry is None:
        return f"the squash of {target.branch} removes {target.roadmap}"
    mode, oid = entry
    if mode not in REGULAR_FILE_MODES:
        return (f"the squash of {target.branch} makes {target.roadmap} something other than a "
                f"regular file (mode {mode:o})")
    merged = _blob_bytes(repo, oid)
    before = _blob_bytes(repo, repo.commit(base).tree[target.roadmap].id)
    ticked, _ = tick(before.decode("utf-8", "surrogateescape"), target.task_id)
    wanted = ticked.encode("utf-8", "surrogateescape")
    if merged not in (before, wanted):
        return (f"the squash of {target.branch} changes {target.roadmap} beyond the checkbox of task "
                f"{target.task_id}; a task may not edit the roadmap or tick other tasks")
    if merged != wanted:
        blob = repo.pg.create_blob(wanted)
        _wt(worktree, "update-index", "--cacheinfo", f"{mode:o},{blob},{target.roadmap}")
    return None


def _index_entry(worktree: Path, path: str) -> tuple[int, pygit2.Oid] | None:
    """(mode, blob id) of ``path`` in the worktree's index, stage 0."""
    index = pygit2.Repository(str(worktree)).index
    try:
        entry = index[path]
    except KeyError:
        return None
    return entry.mode, entry.id


def _blob_bytes(repo: Repo, oid: pygit2.Oid) -> bytes:
    blob = repo.pg[oid]
    if not isinstance(blob, pygit2.Blob):
        raise GitFailure(f"{oid} is not a blob")
    return blob.data


def _roadmap_refused(report: IntegrationReport, target: Target, why: str) -> None:
    report.squashMerged = False
    report.outcome = REFUSED
    report.summary = f"{why}; task {target.task_id} cannot be marked done, nothing was pushed"


def commit_message(target: Target, task: Task, commits: int) -> str:
    """Subject from the task's title (untrusted text, kept to one printable line)."""
    title = "".join(ch for ch in task.title if ch.isprintable())[:TITLE_LIMIT].strip()
    what = f"addendum {target.addendum} of task" if target.addendum is not None else "task"
    trailers = f"Harnery-Task: {target.task_id}\n"
    if target.addendum is not None:
        trailers += f"Harnery-Addendum: {target.addendum}\n"
    return (f"{title or 'Task ' + target.task_id}\n\n"
            f"Squash of {target.branch} ({commits} commit(s)) onto {target.upstream}: "
            f"{what} {target.task_id}, marked done in {target.roadmap}.\n\n{trailers}")


def _commit(repo: Repo, target: Target, worktree: Path, task: Task, tip: pygit2.Oid,
            base: pygit2.Oid) -> pygit2.Oid:
    commits = repo.pg.ahead_behind(tip, base)[0]
    message = commit_message(target, task, commits)
    # The index alone: the ticked roadmap is staged there, not written to disk.
    _wt(worktree, "commit", "--quiet", "--no-verify", "-F", "-",
        input_bytes=message.encode("utf-8"))
    commit = repo.ref_oid(f"refs/heads/{target.work_branch}")
    if commit is None:
        raise GitFailure(f"{target.work_branch} is missing after the commit")
    failpoint("integrate-after-commit")
    return commit


@dataclass(frozen=True)
class PushOutcome:
    moved: str | None = None  # the base moved: retry
    refused: str | None = None  # refused for another reason: stop, say why


def _push(target: Target, worktree: Path, base: pygit2.Oid) -> PushOutcome | None:
    """Push with a lease on the base we built on [P3]. None when it landed;
    otherwise why not, as a race to retry or a refusal to report."""
    done = run_git([*NO_HOOKS, "push", "--porcelain", "--no-verify",
                    f"--force-with-lease=refs/heads/{target.base}:{base}", target.remote,
                    f"refs/heads/{target.work_branch}:refs/heads/{target.base}"],
                   worktree, check=False)
    if done.returncode == 0:
        return None
    text = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace")
    why = rejection_reason(text)
    if why is not None:
        return PushOutcome(moved=why)
    said = remote_lines(done.stderr)
    refusal = _refusal_line(text) or error_line(done.stderr or done.stdout)
    return PushOutcome(refused="\n".join([refusal, *said]))


def remote_lines(stderr: bytes) -> list[str]:
    """What the remote said (its hooks' ``remote:`` lines): untrusted text,
    kept printable and bounded [P5]."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    said = ["".join(ch for ch in line if ch.isprintable()).rstrip()
            for line in lines if line.startswith("remote:")]
    return [line[:TITLE_LIMIT] for line in said if line != "remote:"][:REMOTE_LINES]


def _refusal_line(push_output: str) -> str | None:
    """The ``!`` line of ``git push --porcelain``: ``[remote rejected] (why)``."""
    for line in push_output.splitlines():
        if line.startswith("!\t"):
            return line.split("\t")[-1].strip()
    return None


def rejection_reason(push_output: str) -> str | None:
    """The rejection in ``git push --porcelain`` output that means the remote
    ref moved (lost lease, non-fast-forward, fetch first, lost ref race)."""
    for line in push_output.splitlines():
        lowered = line.lower()
        if any(sign in lowered for sign in MOVED_SIGNS):
            return line.split("\t")[-1].strip()
    return None


def _landed(repo: Repo, target: Target, worktree: Path, commit: pygit2.Oid, base: pygit2.Oid,
            report: IntegrationReport) -> None:
    report.pushed = True
    report.ok = True
    report.outcome = LANDED
    report.summary = (f"{target.branch} landed on {target.upstream} as {str(commit)[:12]} "
                      f"(task {target.task_id} marked done) after {report.attempts} attempt(s)")
    tracked = repo.ref_oid(target.tracking_ref)
    if tracked == base:  # the remote has no fetch refspec that push could follow
        repo.move_ref(target.tracking_ref, commit, base, "git-harn: integrate: pushed")
    merge_note(repo, commit, "integration", jsonable(report))
    _drop_work_branch(repo, target, worktree, commit)


def _drop_work_branch(repo: Repo, target: Target, worktree: Path, commit: pygit2.Oid) -> None:
    """The throwaway branch goes once its commit is on the remote-tracking ref [P1]."""
    if repo.ref_oid(target.tracking_ref) != commit:
        return
    pygit2.Repository(str(worktree)).set_head(commit)  # detach: same commit, same tree
    repo.delete_ref(f"refs/heads/{target.work_branch}", commit)
