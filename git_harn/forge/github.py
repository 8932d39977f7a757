"""GitHub and GitHub Enterprise: the branch pushed, then the REST API.

``POST /repos/{owner}/{repo}/pulls`` opens the request; before it, ``GET
…/pulls?head=<owner>:<branch>&state=all`` (every page, by the Link header)
finds one an earlier attempt opened, so a retry or a rerun after a crash
makes none twice; a 422 "A pull request already exists" (another attempt
won the race) is answered by looking again. ``GET …/pulls/{n}`` reads the
state. GitHub's REST API has no auto-merge call: auto-merge is the GraphQL
mutation ``enablePullRequestAutoMerge``, asked with the head commit the
request must still have (``expectedHeadOid``), so the forge merges only
the judged squash [T4].
"""

from __future__ import annotations

from typing import Any

from git_harn.errors import BadInput, ForgeFailure
from git_harn.failpoints import failpoint
from git_harn.forge.landing import push_branch
from git_harn.forge.model import Ask, AutoMerge, Forge, Proposal, Reading, State
from git_harn.forge.rest import Api, number_of, oid_of, text_of, words
from git_harn.forge.tokens import Token
from git_harn.git.objects import Oid
from git_harn.git.repo import Repo
from git_harn.text import one_line

OPENED_POINT = "forge-opened"  # killed here: the request is open, the caller has not recorded it
API_VERSION = "2022-11-28"
PER_PAGE = 100  # GitHub's largest page
EXISTS = "already exists"  # GitHub's words in the 422 for a second request from one head
MERGE_METHODS = ("MERGE", "SQUASH", "REBASE")
_AUTO_MERGE = """mutation($id: ID!, $head: GitObjectID, $method: PullRequestMergeMethod) {
  enablePullRequestAutoMerge(input: {pullRequestId: $id, expectedHeadOid: $head, mergeMethod: $method}) {
    pullRequest { number autoMergeRequest { enabledAt mergeMethod } }
  }
}"""


def api_roots(web_or_api: str | None, host: str | None) -> tuple[str, str]:
    """(REST root, GraphQL URL) for github.com or an Enterprise server. A
    URL with a path is the REST root as given (``https://ghe.example/api/v3``);
    a bare host is its API's usual place."""
    if web_or_api:
        base = web_or_api.rstrip("/")
        if "/" in base.split("://", 1)[-1]:
            rest = base
        else:
            named = base.split("://", 1)[-1].lower()
            rest = "https://api.github.com" if named in ("github.com", "api.github.com") else f"{base}/api/v3"
    elif host in ("github.com", None):
        rest = "https://api.github.com"
    else:
        rest = f"https://{host}/api/v3"
    graphql = rest.removesuffix("/v3") + "/graphql"
    return rest, graphql


class GitHub(Forge):
    name = "github"

    def __init__(self, rest: str, graphql: str, owner_repo: str, token: Token | None) -> None:
        self.api = Api(rest, "github", token, "Authorization", "Bearer ")
        self.api.headers.update({"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION})
        self.graphql = Api(graphql, "github", token, "Authorization", "Bearer ")
        self.owner, _, self.repo = owner_repo.partition("/")
        self.token = token

    def _need_token(self) -> None:
        if self.token is None:
            raise BadInput("github: no token: set GH_TOKEN or GITHUB_TOKEN, or log in with gh auth login")

    def open_or_find(self, repo: Repo, remote: str, ask: Ask) -> Proposal:
        self._need_token()  # before anything is pushed: bad input changes nothing
        push_branch(repo, remote, ask.branch, ask.squash, ask.previous)
        found = self._find(ask)
        if found is None:
            found = self._create(ask)
        failpoint(OPENED_POINT)
        return self._proposal(found, ask)

    def _pulls_path(self) -> str:
        return f"/repos/{self.owner}/{self.repo}/pulls"

    def _find(self, ask: Ask) -> dict[str, Any] | None:
        """The request from the landing branch to the base: the one whose
        head is the squash (in any state: a crash may have come after the
        forge merged it), else the open one."""
        head = f"{self.owner}:{ask.branch}"
        pulls = [pull for pull in self.api.pages(self._pulls_path(), {"head": head, "state": "all",
                                                                         "base": ask.base, "per_page": PER_PAGE})
                 if isinstance(pull, dict) and _ref(pull, "head") == ask.branch and _ref(pull, "base") == ask.base]
        same = [pull for pull in pulls if _sha(pull, "head") == ask.squash]
        open_ = [pull for pull in pulls if pull.get("state") == "open"]
        found_one = same or open_
        return found_one[0] if found_one else None

    def _create(self, ask: Ask) -> dict[str, Any]:
        body = {"title": ask.title, "head": ask.branch, "base": ask.base, "body": ask.body,
                "maintainer_can_modify": False}
        reply = self.api.call("POST", self.api.url(self._pulls_path()), body, accept=(422,))
        if reply.status == 422:
            said = words(reply.data)
            found = self._find(ask) if EXISTS in said else None
            if found is None:
                raise ForgeFailure(self.api.scrub(f"github: the pull request was refused: {said}"))
            return found
        if not isinstance(reply.data, dict):
            raise ForgeFailure("github: the new pull request came back as no object")
        return reply.data

    def _proposal(self, pull: dict[str, Any], ask: Ask) -> Proposal:
        state = _state(pull)
        return Proposal(self.name, text_of(pull.get("html_url")), number_of(pull.get("number")), ask.squash, ask.branch,
                        ask.base, state)

    def read(self, proposal: Proposal) -> Reading:
        if self.token is None or proposal.number is None:  # a token gone since: the caller looks at content
            return Reading(State.UNKNOWN, by="")
        pull = self.api.call("GET", self.api.url(f"{self._pulls_path()}/{proposal.number}")).data
        if not isinstance(pull, dict):
            raise ForgeFailure(f"github: pull request {proposal.number} came back as no object")
        state = _state(pull)
        merge = oid_of(pull.get("merge_commit_sha")) if state is State.MERGED else None
        said = f"closed without merging at {one_line(str(pull.get('closed_at')), 40)}" \
            if state is State.CLOSED else ""
        return Reading(state, merge, self.api.scrub(said), "forge", _sha(pull, "head"))

    def auto_merge(self, proposal: Proposal, method: str | None = None) -> AutoMerge:
        self._need_token()
        if method is not None and method.upper() not in MERGE_METHODS:
            raise BadInput(f"github: unknown merge method {method!r}: merge, squash or rebase")
        if proposal.number is None:
            return AutoMerge(False, "no pull request number")
        pull = self.api.call("GET", self.api.url(f"{self._pulls_path()}/{proposal.number}")).data
        node = pull.get("node_id") if isinstance(pull, dict) else None
        if not isinstance(node, str):
            return AutoMerge(False, "the pull request has no node id")
        variables = {"id": node, "head": str(proposal.head), "method": method.upper() if method else None}
        reply = self.graphql.call("POST", self.graphql.root, {"query": _AUTO_MERGE, "variables": variables})
        data = reply.data if isinstance(reply.data, dict) else {}
        if data.get("errors"):
            return AutoMerge(False, self.api.scrub(words(data)))
        done = (data.get("data") or {}).get("enablePullRequestAutoMerge") or {}
        request = (done.get("pullRequest") or {}).get("autoMergeRequest")
        return AutoMerge(bool(request), "" if request else "the forge did not say it will merge")


def _state(pull: dict[str, Any]) -> State:
    if pull.get("merged") or pull.get("merged_at"):
        return State.MERGED
    return {"open": State.OPEN, "closed": State.CLOSED}.get(str(pull.get("state")), State.UNKNOWN)


def _ref(pull: dict[str, Any], side: str) -> str | None:
    found = pull.get(side)
    return found.get("ref") if isinstance(found, dict) else None


def _sha(pull: dict[str, Any], side: str) -> Oid | None:
    found = pull.get(side)
    return oid_of(found.get("sha")) if isinstance(found, dict) else None
