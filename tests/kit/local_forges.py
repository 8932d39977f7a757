"""Local forges for the forge tests: no network.

``FakeGitHub`` is a loopback HTTP server implementing the few endpoints
git-harn uses, with the response shapes of GitHub's published REST
description (the ``pull-request`` and ``pull-request-simple`` objects, the
``validation-error`` 422 for a second request from one head, ``basic-error``
for 401/404, Link-header pagination) and the GraphQL mutation
``enablePullRequestAutoMerge``. Its pull requests' heads are read from a
real bare repository, as GitHub reads the pushed branch.

``bare_forge`` makes a bare repository with ``receive.advertisePushOptions``
and hooks that act as GitLab (push options) or Gitea (the AGit flow) would:
they record what the forge would make of a push into ``requests.json`` and
refuse what it would refuse.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

OWNER, REPO = "octo", "hello"
DOCS = "https://docs.github.com/rest"


def git(cwd: Path, *args: str, input_text: str | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, input=input_text, check=True)
    return done.stdout.strip()


def make_clone(tmp: Path, bare: Path) -> Path:
    """A clone of ``bare`` whose main has one commit (pushed)."""
    work = tmp / "work"
    git(tmp, "init", "-q", "-b", "main", str(work))
    git(work, "config", "user.name", "Op")
    git(work, "config", "user.email", "op@example.com")
    (work / "README.md").write_text("hello\n")
    (work / "docs").mkdir()
    (work / "docs" / "roadmap.md").write_text("- [ ] 1.2 add a greeting\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "start")
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "main")
    return work


def squash(work: Path, parent: str, files: dict[str, str], task: str = "1.2", subject: str = "Add a greeting") -> str:
    """A squash commit onto ``parent`` as integration makes it: the files
    changed, the task ticked, the trailer."""
    git(work, "read-tree", parent)
    roadmap = git(work, "show", f"{parent}:docs/roadmap.md").replace(f"- [ ] {task} ", f"- [x] {task} ")
    for path, text in {**files, "docs/roadmap.md": roadmap + "\n"}.items():
        blob = git(work, "hash-object", "-w", "--stdin", input_text=text)
        git(work, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    tree = git(work, "write-tree")
    git(work, "read-tree", "HEAD")
    return git(work, "commit-tree", tree, "-p", parent, "-m", f"{subject}\n\nHarnery-Task: {task}\n")


def new_bare(tmp: Path) -> Path:
    bare = tmp / "forge" / OWNER / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    return bare


def branch_at(bare: Path, ref: str) -> str | None:
    done = subprocess.run(["git", "rev-parse", "--verify", "-q", ref], cwd=bare, capture_output=True, text=True,
                          check=False)
    return done.stdout.strip() or None


# --- a GitHub on the loopback ------------------------------------------------------


def _user() -> dict[str, Any]:
    return {"login": OWNER, "id": 1, "node_id": "MDQ6VXNlcjE=", "type": "User", "site_admin": False}



class Serving(Protocol):
    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None: ...


def loopback(fake: Serving) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """An HTTP server on this machine's loopback, on a free port, whose GETs
    and POSTs ``fake`` answers, served from a thread of its own."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            fake.serve(self, "GET")

        def do_POST(self) -> None:
            fake.serve(self, "POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread

class FakeGitHub:
    """GitHub's REST (under ``/api/v3``, as Enterprise serves it) and GraphQL (``/api/graphql``)."""

    def __init__(self, bare: Path, token: str, page_cap: int = 100) -> None:
        self.bare = bare
        self.token = token
        self.page_cap = page_cap  # GitHub pages by at most 100; a test may make pages smaller
        self.pulls: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.hide_open_once = False  # the next listing misses the open requests (another opener's race)
        self.echo_auth = False  # a hostile forge: it puts the Authorization header into its error words
        self.refuse_auto_merge: str | None = None
        self.redirect_to: str | None = None  # every answer a 301 to there (a moved or hostile forge)
        self.graphql_down = False  # GraphQL answers 502
        self.lock = threading.Lock()
        self.server, self.thread = loopback(self)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def api(self) -> str:
        return f"{self.root}/api/v3"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- what the test does on the "forge" -------------------------------------

    def add_pull(self, head_ref: str, sha: str, state: str = "open", merged: bool = False) -> dict[str, Any]:
        with self.lock:
            number = len(self.pulls) + 1
            pull = {"number": number, "head_ref": head_ref, "base_ref": "main", "title": f"earlier {number}",
                    "body": "", "state": state, "sha": sha, "merged": merged, "merge_commit_sha": None,
                    "closed_at": None if state == "open" else "2026-01-01T00:00:00Z", "auto_merge": None}
            self.pulls.append(pull)
            return pull

    def posts(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "POST" and r["path"].endswith("/pulls")]

    # --- the HTTP side ----------------------------------------------------------

    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urllib.parse.urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length)) if length else None
        self.requests.append({"method": method, "path": url.path, "query": urllib.parse.parse_qs(url.query),
                              "headers": {k.lower(): v for k, v in handler.headers.items()}, "body": body})
        status, data, headers = self.answer(method, url.path, urllib.parse.parse_qs(url.query),
                                            handler.headers.get("Authorization", ""), body)
        if self.redirect_to is not None:
            status, data, headers = 301, {"message": "Moved Permanently"}, {"Location": self.redirect_to + url.path}
        raw = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json; charset=utf-8")
        handler.send_header("Content-Length", str(len(raw)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(raw)

    def answer(self, method: str, path: str, query: dict[str, list[str]], auth: str,
               body: Any) -> tuple[int, Any, dict[str, str]]:
        if auth != f"Bearer {self.token}":
            words = f"Bad credentials ({auth})" if self.echo_auth else "Bad credentials"
            return 401, {"message": words, "documentation_url": DOCS}, {}
        if self.echo_auth:
            return 500, {"message": f"server error while handling {auth}"}, {}
        pulls = f"/api/v3/repos/{OWNER}/{REPO}/pulls"
        with self.lock:
            if method == "GET" and path == pulls:
                return self.list_pulls(path, query)
            if method == "POST" and path == pulls:
                return self.create(body)
            if method == "GET" and path.startswith(pulls + "/") and path[len(pulls) + 1:].isdigit():
                found = self.find(int(path[len(pulls) + 1:]))
                if found is None:
                    return 404, {"message": "Not Found", "documentation_url": DOCS}, {}
                return 200, self.full(found), {}
            if method == "POST" and path == "/api/graphql":
                if self.graphql_down:
                    return 502, {"message": "Server Error"}, {}
                return self.graphql(body)
        return 404, {"message": "Not Found", "documentation_url": DOCS}, {}

    def find(self, number: int) -> dict[str, Any] | None:
        return next((p for p in self.pulls if p["number"] == number), None)

    def list_pulls(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        state = query.get("state", ["open"])[0]
        head = query.get("head", [None])[0]
        base = query.get("base", [None])[0]
        per_page = min(int(query.get("per_page", ["30"])[0]), self.page_cap)
        page = int(query.get("page", ["1"])[0])
        found = [p for p in self.pulls if state == "all" or p["state"] == state]
        if head is not None:
            found = [p for p in found if f"{OWNER}:{p['head_ref']}" == head]
        if base is not None:
            found = [p for p in found if p["base_ref"] == base]
        if self.hide_open_once:
            self.hide_open_once = False
            found = [p for p in found if p["state"] != "open"]
        chunk = found[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(found):
            rest = {k: v[0] for k, v in query.items()}
            rest["page"] = str(page + 1)
            last = dict(rest, page=str((len(found) + per_page - 1) // per_page))
            headers["Link"] = (f'<{self.api}/repos/{OWNER}/{REPO}/pulls?{urllib.parse.urlencode(rest)}>; rel="next", '
                               f'<{self.api}/repos/{OWNER}/{REPO}/pulls?{urllib.parse.urlencode(last)}>; rel="last"')
        return 200, [self.simple(p) for p in chunk], headers

    def create(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        missing = [key for key in ("head", "base") if not (isinstance(body, dict) and body.get(key))]
        if missing or not body.get("title"):
            errors = [{"resource": "PullRequest", "field": key, "code": "missing_field"} for key in missing]
            return 422, {"message": "Validation Failed", "errors": errors, "documentation_url": DOCS}, {}
        sha = branch_at(self.bare, f"refs/heads/{body['head']}")
        if sha is None:
            return 422, {"message": "Validation Failed", "documentation_url": DOCS,
                         "errors": [{"resource": "PullRequest", "field": "head", "code": "invalid"}]}, {}
        if any(p["head_ref"] == body["head"] and p["base_ref"] == body["base"] and p["state"] == "open"
               for p in self.pulls):
            return 422, {"message": "Validation Failed", "documentation_url": DOCS, "errors": [
                {"resource": "PullRequest", "code": "custom",
                 "message": f"A pull request already exists for {OWNER}:{body['head']}."}]}, {}
        number = len(self.pulls) + 1
        pull = {"number": number, "head_ref": body["head"], "base_ref": body["base"], "title": body["title"],
                "body": body.get("body"), "state": "open", "sha": sha, "merged": False, "merge_commit_sha": None,
                "closed_at": None, "auto_merge": None}
        self.pulls.append(pull)
        return 201, self.full(pull), {"Location": f"{self.api}/repos/{OWNER}/{REPO}/pulls/{number}"}

    def head_sha(self, pull: dict[str, Any]) -> str:
        if pull["state"] == "open":  # an open request follows its branch
            pull["sha"] = branch_at(self.bare, f"refs/heads/{pull['head_ref']}") or pull["sha"]
        return str(pull["sha"])

    def simple(self, pull: dict[str, Any]) -> dict[str, Any]:
        """The ``pull-request-simple`` object of a listing."""
        number = pull["number"]
        repo = {"id": 1, "node_id": "R_1", "name": REPO, "full_name": f"{OWNER}/{REPO}", "private": False,
                "owner": _user(), "html_url": f"{self.root}/{OWNER}/{REPO}", "url": f"{self.api}/repos/{OWNER}/{REPO}"}
        base_sha = branch_at(self.bare, f"refs/heads/{pull['base_ref']}") or ""
        return {
            "url": f"{self.api}/repos/{OWNER}/{REPO}/pulls/{number}", "id": 1000 + number,
            "node_id": f"PR_node{number}", "html_url": f"{self.root}/{OWNER}/{REPO}/pull/{number}",
            "diff_url": f"{self.root}/{OWNER}/{REPO}/pull/{number}.diff",
            "patch_url": f"{self.root}/{OWNER}/{REPO}/pull/{number}.patch",
            "issue_url": f"{self.api}/repos/{OWNER}/{REPO}/issues/{number}", "number": number,
            "state": pull["state"], "locked": False, "title": pull["title"], "user": _user(), "body": pull["body"],
            "labels": [], "milestone": None, "active_lock_reason": None, "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z", "closed_at": pull["closed_at"],
            "merged_at": "2026-01-02T00:00:00Z" if pull["merged"] else None,
            "merge_commit_sha": pull["merge_commit_sha"], "assignee": None, "assignees": [],
            "requested_reviewers": [], "requested_teams": [],
            "head": {"label": f"{OWNER}:{pull['head_ref']}", "ref": pull["head_ref"], "sha": self.head_sha(pull),
                     "user": _user(), "repo": repo},
            "base": {"label": f"{OWNER}:{pull['base_ref']}", "ref": pull["base_ref"], "sha": base_sha,
                     "user": _user(), "repo": repo},
            "_links": {}, "author_association": "OWNER", "auto_merge": pull["auto_merge"], "draft": False,
        }

    def full(self, pull: dict[str, Any]) -> dict[str, Any]:
        """The ``pull-request`` object of one request."""
        return {**self.simple(pull), "merged": pull["merged"], "mergeable": None, "rebaseable": None,
                "mergeable_state": "unknown", "merged_by": _user() if pull["merged"] else None, "comments": 0,
                "review_comments": 0, "maintainer_can_modify": False, "commits": 1, "additions": 1,
                "deletions": 0, "changed_files": 1}

    def graphql(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        variables = body.get("variables") or {} if isinstance(body, dict) else {}
        if "enablePullRequestAutoMerge" not in str(body.get("query", "")):
            return 200, {"errors": [{"message": "unknown query"}]}, {}
        pull = next((p for p in self.pulls if f"PR_node{p['number']}" == variables.get("id")), None)
        problem = self.refuse_auto_merge
        if pull is None:
            problem = f"Could not resolve to a node with the global id of '{variables.get('id')}'"
        elif variables.get("head") and variables["head"] != self.head_sha(pull):
            problem = "Head sha didn't match expected head oid"
        if problem:
            return 200, {"data": {"enablePullRequestAutoMerge": None}, "errors": [
                {"type": "UNPROCESSABLE", "path": ["enablePullRequestAutoMerge"],
                 "locations": [{"line": 2, "column": 3}], "message": problem}]}, {}
        assert pull is not None
        method = variables.get("method") or "MERGE"
        pull["auto_merge"] = {"enabled_by": _user(), "merge_method": method.lower(), "commit_title": None,
                              "commit_message": None}
        return 200, {"data": {"enablePullRequestAutoMerge": {"pullRequest": {
            "number": pull["number"], "autoMergeRequest": {"enabledAt": "2026-01-01T00:00:00Z",
                                                           "mergeMethod": method}}}}}, {}


# --- GitLab and Gitea as hooks of a bare repository -----------------------------------

_HOOK_HEAD = f"""#!{sys.executable}
import json, os, subprocess, sys
from pathlib import Path
here = Path.cwd()
log = here / "requests.json"
requests = json.loads(log.read_text()) if log.exists() else []
options = [os.environ["GIT_PUSH_OPTION_%d" % i] for i in range(int(os.environ.get("GIT_PUSH_OPTION_COUNT", "0")))]
updates = [line.split() for line in sys.stdin.read().splitlines()]
def branch_exists(name):
    argv = ["git", "rev-parse", "--verify", "-q", "refs/heads/" + name]
    return subprocess.run(argv, capture_output=True).returncode == 0
def opt(name):
    found = [o.split("=", 1)[1] if "=" in o else "" for o in options if o.split("=", 1)[0] == name]
    return found[-1] if found else None
"""

GITLAB_PRE = _HOOK_HEAD + """
if "merge_request.create" in options:
    target = opt("merge_request.target")
    if target is not None and not branch_exists(target):
        print("GitLab: target branch %s does not exist: no merge request" % target)
        sys.exit(1)
"""

GITLAB_POST = _HOOK_HEAD + """
for old, new, ref in updates:
    if not ref.startswith("refs/heads/") or "merge_request.create" not in options or set(new) == {"0"}:
        continue
    branch = ref[len("refs/heads/"):]
    found = [r for r in requests if r["source"] == branch and r["state"] == "opened"]
    if found:
        request = found[0]
    else:
        request = {"iid": len(requests) + 1, "source": branch, "target": opt("merge_request.target") or "main",
                   "title": opt("merge_request.title"), "description": opt("merge_request.description"),
                   "remove_source_branch": "merge_request.remove_source_branch" in options,
                   "auto_merge": "merge_request.merge_when_pipeline_succeeds" in options, "state": "opened"}
        requests.append(request)
    request["sha"] = new
    request["options"] = options
    print("")
    print("View merge request for %s:" % branch)
    print("  https://gitlab.example/octo/hello/-/merge_requests/%d" % request["iid"])
    print("")
log.write_text(json.dumps(requests))
"""

# Gitea's AGit: the topic from -o topic, else the part after the longest
# existing base branch; no topic, no request; a non-fast-forward update of a
# request only with -o force-push.
GITEA_PRE = _HOOK_HEAD + """
for old, new, ref in updates:
    if not ref.startswith("refs/for/"):
        continue
    rest = ref[len("refs/for/"):]
    base, topic = rest, opt("topic")
    if not branch_exists(base):
        parts = rest.split("/")
        for i in range(1, len(parts)):
            if branch_exists("/".join(parts[:i])):
                base, topic = "/".join(parts[:i]), topic or "/".join(parts[i:])
                break
    if not branch_exists(base):
        print("Gitea: target branch %s does not exist" % base)
        sys.exit(1)
    if not topic:
        print("Gitea: topic-branch is empty: no pull request")
        sys.exit(1)
    for request in requests:
        if request["topic"] == topic and request["state"] == "open" and request["sha"] != new:
            ff = subprocess.run(["git", "merge-base", "--is-ancestor", request["sha"], new]).returncode == 0
            if not ff and opt("force-push") not in ("true", ""):
                print("Gitea: request %d is not fast-forwarded by %s: push with -o force-push"
                      % (request["index"], new[:12]))
                sys.exit(1)
"""

GITEA_POST = _HOOK_HEAD + """
for old, new, ref in updates:
    if not ref.startswith("refs/for/"):
        continue
    rest = ref[len("refs/for/"):]
    base, topic = rest, opt("topic")
    if not branch_exists(base):
        parts = rest.split("/")
        for i in range(1, len(parts)):
            if branch_exists("/".join(parts[:i])):
                base, topic = "/".join(parts[:i]), topic or "/".join(parts[i:])
                break
    found = [r for r in requests if r["topic"] == topic and r["state"] == "open"]
    if found:
        request = found[0]
        print("Visit the existing pull request:")
    else:
        request = {"index": len(requests) + 1, "topic": topic, "base": base, "title": opt("title"),
                   "description": opt("description"), "state": "open"}
        requests.append(request)
        print("Create a new pull request for '%s':" % topic)
    request["sha"] = new
    request["options"] = options
    print("  https://gitea.example/octo/hello/pulls/%d" % request["index"])
    subprocess.run(["git", "update-ref", "refs/pull/%d/head" % request["index"], new], check=True)
    subprocess.run(["git", "update-ref", "-d", ref], check=True)
log.write_text(json.dumps(requests))
"""

HOOKS = {"gitlab": (GITLAB_PRE, GITLAB_POST), "gitea": (GITEA_PRE, GITEA_POST)}


def bare_forge(tmp: Path, kind: str, push_options: bool = True) -> Path:
    """A bare repository that acts as ``kind`` (gitlab, gitea) would."""
    bare = new_bare(tmp)
    if push_options:
        git(bare, "config", "receive.advertisePushOptions", "true")
    pre, post = HOOKS[kind]
    for name, text in (("pre-receive", pre), ("post-receive", post)):
        hook = bare / "hooks" / name
        hook.write_text(text)
        hook.chmod(0o755)
    return bare


def requests_of(bare: Path) -> list[dict[str, Any]]:
    log = bare / "requests.json"
    return json.loads(log.read_text()) if log.exists() else []


# --- recording what programs git-harn runs ----------------------------------------------


def recorder(folder: Path, program: str, real: str, log: Path, prints: str | None = None) -> Path:
    """``folder/program``: appends its argv (a JSON line) to ``log``, then
    runs ``real`` with it (or, with ``prints``, prints that and exits 0)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / program
    tail = f"print({prints!r})" if prints is not None else f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])"
    script.write_text(f"""#!{sys.executable}
import json, os, sys
with open({str(log)!r}, "a") as out:
    out.write(json.dumps(sys.argv[1:]) + "\\n")
{tail}
""")
    script.chmod(0o755)
    return script


def recorded(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# --- GitLab's and Gitea's REST API over what the hooks recorded ----------------------------


class FakeRest:
    """The few REST endpoints git-harn reads on GitLab (``/api/v4``) or
    Gitea (``/api/v1``), answering from the requests the bare repository's
    hooks opened (``requests.json``), in the shapes of their API documents."""

    def __init__(self, bare: Path, kind: str, token: str) -> None:
        self.bare, self.kind, self.token = bare, kind, token
        self.requests: list[dict[str, Any]] = []
        self.server, _ = loopback(self)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def update(self, number: int, **changes: Any) -> None:
        """What the forge's web page would do to request ``number`` (merge it, close it)."""
        found = requests_of(self.bare)
        key = "iid" if self.kind == "gitlab" else "index"
        for request in found:
            if request[key] == number:
                request.update(changes)
        (self.bare / "requests.json").write_text(json.dumps(found))

    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urllib.parse.urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length)) if length else None
        headers = {k.lower(): v for k, v in handler.headers.items()}
        self.requests.append({"method": method, "path": url.path, "headers": headers, "body": body})
        status, data = self.answer(method, url.path, urllib.parse.parse_qs(url.query), headers, body)
        raw = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)

    def answer(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str],
               body: Any) -> tuple[int, Any]:
        if self.kind == "gitlab":
            if headers.get("private-token") != self.token:
                return 401, {"message": "401 Unauthorized"}
            return self.gitlab(method, path, query)
        if headers.get("authorization") != f"token {self.token}":
            return 401, {"message": "token is required", "url": "https://gitea.example/api/swagger"}
        return self.gitea(method, path, body)

    def gitlab(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        mrs = f"/api/v4/projects/{OWNER}%2F{REPO}/merge_requests"
        found = requests_of(self.bare)
        if method == "GET" and path == mrs:
            want = {k: v[0] for k, v in query.items()}
            return 200, [self.mr(r) for r in found
                         if r["source"] == want.get("source_branch", r["source"])
                         and r["target"] == want.get("target_branch", r["target"])
                         and want.get("state", "all") in ("all", r["state"])]
        if method == "GET" and path.startswith(mrs + "/"):
            match = [r for r in found if str(r["iid"]) == path.rsplit("/", 1)[1]]
            return (200, self.mr(match[0])) if match else (404, {"message": "404 Not found"})
        return 404, {"message": "404 Not found"}

    def mr(self, r: dict[str, Any]) -> dict[str, Any]:
        return {"id": 100 + r["iid"], "iid": r["iid"], "project_id": 1, "title": r["title"],
                "description": r["description"], "state": r["state"], "source_branch": r["source"],
                "target_branch": r["target"], "sha": r["sha"], "merge_commit_sha": r.get("merge_commit_sha"),
                "squash_commit_sha": r.get("squash_commit_sha"), "squash": False, "draft": False,
                "web_url": f"https://gitlab.example/{OWNER}/{REPO}/-/merge_requests/{r['iid']}",
                "merge_when_pipeline_succeeds": r["auto_merge"], "should_remove_source_branch": None,
                "force_remove_source_branch": r["remove_source_branch"], "closed_at": None, "merged_at": None}

    def gitea(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        pulls = f"/api/v1/repos/{OWNER}/{REPO}/pulls/"
        found = requests_of(self.bare)
        if not path.startswith(pulls):
            return 404, {"message": "Not Found"}
        number, _, rest = path[len(pulls):].partition("/")
        match = [r for r in found if str(r["index"]) == number]
        if not match:
            return 404, {"message": "pull request does not exist"}
        r = match[0]
        if method == "POST" and rest == "merge":
            if body.get("head_commit_id") not in (None, r["sha"]):
                return 409, {"message": "head out of date"}
            r["auto_merge"] = body.get("merge_when_checks_succeed")
            (self.bare / "requests.json").write_text(json.dumps(found))
            return 200, None
        return 200, {"id": 200 + r["index"], "number": r["index"], "title": r["title"], "body": r["description"],
                     "state": r["state"], "merged": r.get("merged", False),
                     "merge_commit_sha": r.get("merge_commit_sha"),
                     "html_url": f"https://gitea.example/{OWNER}/{REPO}/pulls/{r['index']}",
                     "head": {"label": r["topic"], "ref": f"refs/pull/{r['index']}/head", "sha": r["sha"]},
                     "base": {"label": r["base"], "ref": r["base"]}, "flow": 1}
