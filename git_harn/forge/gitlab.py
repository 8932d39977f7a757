"""GitLab: the request opened by push options, read by the REST API when
a token is configured.

The landing branch is pushed with ``-o merge_request.create -o
merge_request.target=<base> -o merge_request.title=… -o
merge_request.description=… -o merge_request.remove_source_branch``
(and ``merge_request.merge_when_pipeline_succeeds`` for auto-merge), which
needs no token: GitLab opens the request, or keeps the one open for the
branch, and says where in its ``remote:`` lines. A push option is one
line, so the description is the body folded to one. With ``GITLAB_TOKEN``
the state is read from ``GET /projects/:id/merge_requests/:iid``; without
it the state is ``unknown`` and the caller decides by content.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from git_harn.errors import ForgeFailure
from git_harn.failpoints import failpoint
from git_harn.forge.github import OPENED_POINT
from git_harn.forge.landing import push_branch
from git_harn.forge.model import Ask, AutoMerge, Forge, Proposal, Reading, State
from git_harn.forge.rest import Api, number_of, oid_of, text_of
from git_harn.forge.tokens import Token
from git_harn.git.remote import Outcome
from git_harn.git.repo import Repo
from git_harn.text import one_line

OPTION_TEXT = 4000  # characters of a title or description sent as a push option
_SAID = re.compile(r"(https?://\S+/-/merge_requests/(\d+))(?![\d/?])")
STATES = {"opened": State.OPEN, "locked": State.OPEN, "merged": State.MERGED, "closed": State.CLOSED}


def push_options(ask: Ask) -> list[str]:
    """The push options that open (or keep) the request for ``ask``."""
    options = ["merge_request.create", f"merge_request.target={ask.base}",
               f"merge_request.title={one_line(ask.title, OPTION_TEXT)}",
               f"merge_request.description={one_line(ask.body, OPTION_TEXT)}",
               "merge_request.remove_source_branch"]
    return options + (["merge_request.merge_when_pipeline_succeeds"] if ask.auto_merge else [])


def said_request(outcome: Outcome | None) -> tuple[str | None, int | None]:
    """The request's URL and number from the forge's ``remote:`` lines."""
    for line in outcome.said if outcome is not None else []:
        found = _SAID.search(line)
        if found:
            return found.group(1), int(found.group(2))
    return None, None


class GitLab(Forge):
    name = "gitlab"

    def __init__(self, api_root: str, project: str, token: Token | None) -> None:
        self.api = Api(api_root, "gitlab", token, "PRIVATE-TOKEN")
        self.project = urllib.parse.quote(project, safe="")
        self.token = token

    def open_or_find(self, repo: Repo, remote: str, ask: Ask) -> Proposal:
        outcome = push_branch(repo, remote, ask.branch, ask.squash, ask.previous, push_options(ask))
        url, number = said_request(outcome)
        state = State.OPEN if number is not None or outcome is not None else State.UNKNOWN
        if number is None and self.token is not None:
            found = self._find(ask)
            if found is not None:
                url, number = text_of(found.get("web_url")), number_of(found.get("iid"))
                state = STATES.get(str(found.get("state")), State.UNKNOWN)
        failpoint(OPENED_POINT)
        said = list(outcome.said) if outcome is not None else []
        auto = AutoMerge(True, "asked by push option") if ask.auto_merge and outcome is not None else None
        return Proposal(self.name, url, number, ask.squash, ask.branch, ask.base, state, auto, said)

    def _find(self, ask: Ask) -> dict[str, Any] | None:
        query: dict[str, str | int] = {"source_branch": ask.branch, "target_branch": ask.base, "state": "all",
                                       "per_page": 100}
        found = [mr for mr in self.api.pages(f"/projects/{self.project}/merge_requests", query)
                 if isinstance(mr, dict)]
        same = [mr for mr in found if oid_of(mr.get("sha")) == ask.squash]
        open_ = [mr for mr in found if mr.get("state") == "opened"]
        found_one = same or open_
        return found_one[0] if found_one else None

    def read(self, proposal: Proposal) -> Reading:
        if self.token is None or proposal.number is None:
            return Reading(State.UNKNOWN, by="")
        mr = self.api.call("GET", self.api.url(f"/projects/{self.project}/merge_requests/{proposal.number}")).data
        if not isinstance(mr, dict):
            raise ForgeFailure(f"gitlab: merge request {proposal.number} came back as no object")
        state = STATES.get(str(mr.get("state")), State.UNKNOWN)
        merged = (oid_of(mr.get("merge_commit_sha")) or oid_of(mr.get("squash_commit_sha"))
                  if state is State.MERGED else None)
        words = "closed without merging" if state is State.CLOSED else ""
        return Reading(state, merged, words, "forge", oid_of(mr.get("sha")))

    def auto_merge(self, proposal: Proposal, method: str | None = None) -> AutoMerge:
        # Asked when the request is opened (a push option), where no token is needed.
        return proposal.auto_merge or AutoMerge(False, "gitlab: asked only when the request is opened")
