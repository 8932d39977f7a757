"""Gitea and Forgejo: the AGit flow, read by the REST API when a token is
configured.

``git push <remote> <squash>:refs/for/<base>/<topic> -o topic=<topic> -o
title=… -o description=…`` opens a request whose head the forge keeps
itself (``refs/pull/<n>/head``); no branch is made and no token is needed.
The same topic again updates that request instead of opening another, so a
retry is harmless; moving it to a squash rebuilt on a new base is not a
fast-forward, and Gitea wants ``-o force-push=true`` for that, which
git-harn sends only when it moves the squash it pushed before. With
``GITEA_TOKEN`` (or ``FORGEJO_TOKEN``) the state is read from ``GET
/repos/{owner}/{repo}/pulls/{n}`` and auto-merge asked with ``POST
…/pulls/{n}/merge`` (``merge_when_checks_succeed``); without it the state
is ``unknown`` and the caller decides by content.
"""

from __future__ import annotations

import re

from git_harn.errors import ForgeFailure
from git_harn.failpoints import failpoint
from git_harn.forge.github import OPENED_POINT
from git_harn.forge.gitlab import OPTION_TEXT
from git_harn.forge.landing import push_for_review
from git_harn.forge.model import Ask, AutoMerge, Forge, Proposal, Reading, State
from git_harn.forge.rest import Api, oid_of, words
from git_harn.forge.tokens import Token
from git_harn.git.repo import Repo
from git_harn.text import one_line

_SAID = re.compile(r"(https?://\S+/pulls/(\d+))(?![\d/?])")
MERGE_STYLES = ("merge", "rebase", "rebase-merge", "squash", "fast-forward-only")


def push_options(ask: Ask) -> list[str]:
    options = [f"topic={ask.branch}", f"title={one_line(ask.title, OPTION_TEXT)}",
               f"description={one_line(ask.body, OPTION_TEXT)}"]
    return options + (["force-push=true"] if ask.previous is not None and ask.previous != ask.squash else [])


class Gitea(Forge):
    name = "gitea"

    def __init__(self, api_root: str, owner_repo: str, token: Token | None) -> None:
        self.api = Api(api_root, "gitea", token, "Authorization", "token ")
        self.owner_repo = owner_repo
        self.token = token

    def open_or_find(self, repo: Repo, remote: str, ask: Ask) -> Proposal:
        ref = f"refs/for/{ask.base}/{ask.branch}"
        outcome = push_for_review(repo, remote, ref, ask.squash, push_options(ask))
        url, number = None, None
        for line in outcome.said:
            found = _SAID.search(line)
            if found:
                url, number = found.group(1), int(found.group(2))
                break
        failpoint(OPENED_POINT)
        return Proposal(self.name, url, number, ask.squash, ask.branch, ask.base, State.OPEN, None,
                        list(outcome.said))

    def read(self, proposal: Proposal) -> Reading:
        if self.token is None or proposal.number is None:
            return Reading(State.UNKNOWN, by="")
        pull = self.api.call("GET", self.api.url(f"/repos/{self.owner_repo}/pulls/{proposal.number}")).data
        if not isinstance(pull, dict):
            raise ForgeFailure(f"gitea: pull request {proposal.number} came back as no object")
        if pull.get("merged"):
            state = State.MERGED
        else:
            state = {"open": State.OPEN, "closed": State.CLOSED}.get(str(pull.get("state")), State.UNKNOWN)
        merged = oid_of(pull.get("merge_commit_sha")) if state is State.MERGED else None
        head = pull.get("head")
        return Reading(state, merged, "closed without merging" if state is State.CLOSED else "", "forge",
                       oid_of(head.get("sha")) if isinstance(head, dict) else None)

    def auto_merge(self, proposal: Proposal, method: str | None = None) -> AutoMerge:
        if self.token is None or proposal.number is None:
            return AutoMerge(False, "gitea: auto-merge needs a token (GITEA_TOKEN) and the request's number")
        style = method or "merge"
        if style not in MERGE_STYLES:
            return AutoMerge(False, f"gitea: unknown merge style {style!r}")
        body = {"Do": style, "merge_when_checks_succeed": True, "head_commit_id": str(proposal.head)}
        reply = self.api.call("POST", self.api.url(f"/repos/{self.owner_repo}/pulls/{proposal.number}/merge"),
                              body, accept=(405, 409, 422))
        if reply.status >= 300:
            return AutoMerge(False, self.api.scrub(words(reply.data)))
        return AutoMerge(True)
