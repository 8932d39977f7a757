"""The one vocabulary of a proposal and the interface every forge keeps."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from git_harn.errors import BadInput
from git_harn.git.objects import Oid, to_oid
from git_harn.git.repo import Repo

LANDING_PREFIX = "harnery/land/"  # git-harn's own branches on the remote: never the base
TASK_ID = re.compile(r"[0-9]+(\.[0-9]+)*")


class State(str, Enum):
    """What a request is, as the forge (or the base's content) says."""

    OPEN = "open"
    MERGED = "merged"
    CLOSED = "closed"  # closed without a merge
    UNKNOWN = "unknown"  # the forge cannot be asked (no token): the caller decides by content


def landing_branch(task_id: str, addendum: int | None = None) -> str:
    """``harnery/land/<id>`` (``<id>-addendum-<n>`` for an addendum): one per piece of work."""
    if not TASK_ID.fullmatch(task_id):
        raise BadInput(f"invalid task id: {task_id!r}")
    if addendum is not None and addendum < 1:
        raise BadInput(f"invalid addendum number: {addendum}")
    return f"{LANDING_PREFIX}{task_id}" + (f"-addendum-{addendum}" if addendum is not None else "")


@dataclass(frozen=True)
class Ask:
    """What to propose: ``squash`` from ``branch`` to ``base``. ``previous``:
    the squash git-harn last pushed to the branch (None: none yet), the only
    value it moves the branch from."""

    base: str
    branch: str
    squash: Oid
    title: str
    body: str
    previous: Oid | None = None
    auto_merge: bool = False


@dataclass(frozen=True)
class AutoMerge:
    """Whether the forge will merge the request by itself once its checks pass."""

    enabled: bool
    words: str = ""  # the forge's words (scrubbed), or why it was not asked


@dataclass(frozen=True)
class Proposal:
    """One request: where it is (``url``, ``number``; None where the forge
    did not say and cannot be asked) and the commit it proposes (``head``)."""

    forge: str
    url: str | None
    number: int | None
    head: Oid
    branch: str
    base: str
    state: State = State.OPEN
    auto_merge: AutoMerge | None = None
    said: list[str] = field(default_factory=list)  # the forge's own lines, untrusted, scrubbed


@dataclass(frozen=True)
class Reading:
    """A request's state: the merge commit where the forge names one, its
    words for a close, and who told (``forge`` or ``content``)."""

    state: State
    merge_commit: Oid | None = None
    words: str = ""
    by: str = "forge"
    head: Oid | None = None


def proposal_from(data: Mapping[str, Any]) -> Proposal:
    """A proposal as a record kept it (``text.jsonable`` of one): each value
    checked, since a record is read back from git; BadInput when it is not one."""
    try:
        number = data.get("number")
        url = data.get("url")
        fields = (data["forge"], data["branch"], data["base"])
        if not all(isinstance(value, str) for value in fields) or not isinstance(url, (str, type(None))):
            raise TypeError
        if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
            raise TypeError
        return Proposal(data["forge"], url, number, to_oid(data["head"]), data["branch"], data["base"],
                        State(data.get("state", State.OPEN.value)))
    except (KeyError, TypeError, ValueError):
        raise BadInput("not a proposal: it needs forge, url, number, head, branch and base") from None


class Forge(ABC):
    """One forge. Every method is idempotent: asked again after a crash or a
    retry, it finds what an earlier call made instead of making another."""

    name: str

    @abstractmethod
    def open_or_find(self, repo: Repo, remote: str, ask: Ask) -> Proposal:
        """Push ``ask.squash`` to the landing branch (with a lease) and open
        the request, or find the one already open for that branch."""

    @abstractmethod
    def read(self, proposal: Proposal) -> Reading:
        """The request's state now (``State.UNKNOWN`` when it cannot be asked)."""

    @abstractmethod
    def auto_merge(self, proposal: Proposal, method: str | None = None) -> AutoMerge:
        """Ask the forge to merge the request once its checks pass, where the repository allows it."""
