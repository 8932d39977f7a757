"""What lands where: a request checked into a target before anything changes [P7]."""

from __future__ import annotations

from dataclasses import dataclass

from git_harn.errors import BadInput, Refused
from git_harn.git import Oid, Repo
from git_harn.git.refnames import branch_name
from git_harn.tasks.branches import DEFAULT_BASE, default_remote
from git_harn.tasks.config import LandMode
from git_harn.tasks.roadmap import parse_task_branch, roadmap_file, validate_task_id, work_key

DEFAULT_MAX_ATTEMPTS = 5


@dataclass(frozen=True)
class Request:
    branch: str
    base: str | None = None  # None: git config harn.base, else main
    remote: str | None = None  # None: git config harn.remote, else origin
    task_id: str | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    resume_after_crash: bool = False
    judged: Oid | None = None  # the commit to land (None: the branch's tip, read once here) [T4]
    land: LandMode = LandMode.PUSH  # pull-request: propose it from harnery/land/<key> instead [F1]
    body: str = ""  # what the request says beside the squash's message (the workflow's evidence)
    forge: str | None = None  # github | gitlab | gitea (None: the remote's URL says, or it is no forge)
    forge_url: str | None = None  # where the forge's API is, when the remote's URL does not say
    auto_merge: bool = False  # ask the forge to merge the request once its checks pass


@dataclass(frozen=True)
class Target:
    """A validated request."""

    branch: str  # short name of the task branch
    base: str
    remote: str
    task_id: str
    addendum: int | None
    roadmap: str  # path of the roadmap inside the tree
    max_attempts: int
    # The one commit this integration lands: what the workflow's gates and
    # reviewers judged, or the tip ``git harn integrate`` read once. The
    # branch is compared-and-swapped from it, never read again as "whatever
    # it points at now" [T4].
    judged: Oid
    land: LandMode = LandMode.PUSH
    body: str = ""
    forge: str | None = None
    forge_url: str | None = None
    auto_merge: bool = False

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


class Moved(Refused):
    """The task branch no longer holds the commit that was judged: nothing lands [T4]."""

    def __init__(self, target: Target, found: Oid | None) -> None:
        now = str(found)[:12] if found is not None else "nothing (deleted)"
        super().__init__(f"{target.branch_ref} moved since its commit was judged ({str(target.judged)[:12]} → "
                         f"{now}); nothing landed: only the judged commit may")
        self.ref, self.judged, self.found = target.branch_ref, target.judged, found


def slug(task_id: str, addendum: int | None = None) -> str:
    """``1.2.3`` → ``1-2-3`` (``-addendum-<n>`` for an addendum): one-to-one,
    since a task id holds only digits and dots."""
    return work_key(task_id, addendum).replace(".", "-")


def resolve_target(repo: Repo, request: Request) -> Target:
    """Check every input before anything changes [P7]."""
    branch = branch_name(request.branch)
    tip = repo.ref_oid(f"refs/heads/{branch}")
    if tip is None:
        raise BadInput(f"unknown branch: {branch}")
    base = branch_name(request.base or repo.config("harn.base") or DEFAULT_BASE)
    remote = request.remote or default_remote(repo)
    if remote.startswith("-"):
        raise BadInput(f"invalid remote name: {remote!r}")
    if not repo.has_remote(remote):
        raise BadInput(f"unknown remote: {remote}")
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
    return Target(branch, base, remote, task_id, addendum, roadmap_file(repo), request.max_attempts,
                  request.judged if request.judged is not None else tip, request.land, request.body,
                  request.forge, request.forge_url, request.auto_merge)
