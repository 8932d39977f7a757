"""The door a proposal goes through to the forge [F1] [F2].

``open_request`` pushes the squash to git-harn's own landing branch
(``harnery/land/<key>``, with a lease on the value it held: never the base)
and opens the pull request from it, or finds the one already open;
``request_state`` asks what became of it. Which forge: the one named
(``workflow.forge``, ``--forge``), else the one the remote's URL says; the
forge modules (``git_harn.forge``) do the talking (GitHub's REST API,
GitLab's push options, Gitea's AGit flow). A remote that is no forge
git-harn speaks to (a plain git server, a bare repository) still takes the
landing branch: it is then the proposal itself, with no URL or number, and
its state is read from content alone (merged when its change is on the
base, closed when the branch was deleted without that).
"""

from __future__ import annotations

from dataclasses import dataclass

from git_harn.errors import Refused
from git_harn.failpoints import failpoint
from git_harn.forge.choose import forge_for
from git_harn.forge.model import Ask, Forge, Proposal
from git_harn.forge.place import forge_of_host, place_of
from git_harn.forge.propose import propose
from git_harn.git import Oid, Repo, to_oid
from git_harn.git.remote import Update, ls_remote, push, remote_url

LANDING_PREFIX = "harnery/land/"  # git-harn's own branches on the remote: never the base
PLAIN = "plain"  # no forge: the landing branch is the proposal
# what a forge says of a request (the store keeps its own words for a proposal's states)
OPEN, MERGED, CLOSED, UNKNOWN = "open", "merged", "closed", "unknown"


@dataclass(frozen=True)
class Opened:
    """The request: which forge, its URL and number (None: the forge gives none)."""

    forge: str
    url: str | None
    number: int | None
    auto_merge: dict[str, object] | None = None  # what the forge said to auto-merge: {enabled, words}


@dataclass(frozen=True)
class Reading:
    """A request's state as the forge tells it, its words for a close, and
    the head commit it says the request has (None: it did not say)."""

    state: str
    words: str = ""
    head: Oid | None = None


def landing_branch(key: str) -> str:
    return LANDING_PREFIX + key


def landing_ref(key: str) -> str:
    return "refs/heads/" + landing_branch(key)


def remote_landing(repo: Repo, remote: str, key: str) -> Oid | None:
    """What ``<remote>``'s landing branch of ``key`` holds now (None: absent)."""
    found = ls_remote(repo, remote, [landing_ref(key)]).get(landing_ref(key))
    return to_oid(found) if found else None


def push_landing(repo: Repo, remote: str, key: str, squash: Oid, previous: Oid | None) -> None:
    """Move the landing branch to ``squash`` from ``previous`` (None: it must
    not exist), never forced; Refused with the remote's words otherwise."""
    if previous == squash:
        return
    pushed = push(repo, remote, [Update(landing_ref(key), str(squash), str(previous) if previous else None)],
                  lease=True)
    if not pushed.ok:
        raise Refused(f"push of {landing_branch(key)} to {remote} was refused: {pushed.told()}")


def delete_landing(repo: Repo, remote: str, key: str, held: Oid) -> bool:
    """Delete the landing branch, only if it still holds ``held``; whether it went."""
    return push(repo, remote, [Update(landing_ref(key), None, str(held))], lease=True).ok


@dataclass(frozen=True)
class Where:
    """The remote, and the forge it is on as the operator named it
    (``workflow.forge``, ``workflow.forgeUrl``; None: its URL says)."""

    remote: str
    forge: str | None = None
    forge_url: str | None = None
    auto_merge: bool = False  # ask the forge to merge the request once its checks pass


def forge_of(repo: Repo, where: Where) -> Forge | None:
    """The forge the remote is on: the one named, else the one its URL's
    host says (None: no forge git-harn speaks to; a plain git server)."""
    if where.forge is None:
        url = remote_url(repo, where.remote)
        if url is None or forge_of_host(place_of(url).host) is None:
            return None
    return forge_for(repo, where.remote, where.forge, where.forge_url)


def _task_of(key: str) -> tuple[str, int | None]:
    task_id, _, addendum = key.partition("-addendum-")
    return task_id, int(addendum) if addendum else None


def open_request(repo: Repo, where: Where, key: str, base: str, squash: Oid, previous: Oid | None,
                 title: str, body: str) -> Opened:
    """Push the landing branch and open (or find) its request; idempotent.
    ``title`` and ``body`` are for the forge's request (untrusted task text
    made printable by the caller)."""
    remote = where.remote
    forge = forge_of(repo, where)
    if forge is None:  # a plain remote takes the branch and no request
        push_landing(repo, remote, key, squash, previous)
        failpoint("propose-after-push")
        return Opened(PLAIN, None, None)
    task_id, addendum = _task_of(key)
    made = propose(repo, forge, remote, base, task_id, squash, title, body, addendum=addendum, previous=previous,
                   auto_merge=where.auto_merge)
    auto = {"enabled": made.auto_merge.enabled, "words": made.auto_merge.words} if made.auto_merge else None
    return Opened(made.forge, made.url, made.number, auto)


def open_branch(repo: Repo, where: Where, branch: str, base: str, commit: Oid, previous: Oid | None,
                title: str, body: str) -> Opened:
    """Push ``commit`` to ``branch``, one of git-harn's own landing branches
    that holds no task's squash (a run's remediation: its roadmap addenda),
    and open (or find) a request from it, as ``open_request`` does for a
    task's; a plain remote takes the branch alone. Idempotent."""
    if not branch.startswith(LANDING_PREFIX) or branch == LANDING_PREFIX:
        raise Refused(f"{branch} is not one of git-harn's landing branches ({LANDING_PREFIX}…)")
    forge = forge_of(repo, where)
    if forge is None:
        ref = "refs/heads/" + branch
        if previous != commit:
            pushed = push(repo, where.remote, [Update(ref, str(commit), str(previous) if previous else None)],
                          lease=True)
            if not pushed.ok:
                raise Refused(f"push of {branch} to {where.remote} was refused: {pushed.told()}")
        return Opened(PLAIN, None, None)
    made = forge.open_or_find(repo, where.remote, Ask(base, branch, commit, title, body, previous))
    return Opened(made.forge, made.url, made.number)


def request_state(repo: Repo, where: Where, key: str, forge: str, number: int | None, url: str | None = None,
                  head: Oid | None = None, base: str = "") -> Reading:
    """What the forge says of the request; UNKNOWN when it cannot tell (the caller reads content)."""
    remote = where.remote
    found = forge_of(repo, where) if forge != PLAIN else None
    if found is not None and head is not None:
        read = found.read(Proposal(forge, url, number, head, landing_branch(key), base))
        return Reading(read.state.value, read.words, read.head)
    if remote_landing(repo, remote, key) is None:
        return Reading(CLOSED, f"{landing_branch(key)} was deleted from {remote}")
    return Reading(UNKNOWN)
