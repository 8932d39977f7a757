"""A local stand-in for GitLab, as the post-receive hook of the demo's bare
``origin``: a push with ``-o merge_request.create`` opens (or updates) a
merge request, recorded in ``requests.json`` beside the repository, and the
hook prints its address as GitLab does. No network, no token."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

log = Path.cwd() / "requests.json"
requests = json.loads(log.read_text()) if log.exists() else []
count = int(os.environ.get("GIT_PUSH_OPTION_COUNT", "0"))
options = [os.environ[f"GIT_PUSH_OPTION_{i}"] for i in range(count)]


def option(name: str) -> str | None:
    found = [o.split("=", 1)[1] for o in options if o.startswith(name + "=")]
    return found[-1] if found else None


for line in sys.stdin.read().splitlines():
    old, new, ref = line.split()
    if not ref.startswith("refs/heads/") or "merge_request.create" not in options or set(new) == {"0"}:
        continue
    branch = ref[len("refs/heads/"):]
    found = [r for r in requests if r["source"] == branch and r["state"] == "opened"]
    request = found[0] if found else {"iid": len(requests) + 1, "source": branch, "state": "opened",
                                      "target": option("merge_request.target") or "main",
                                      "title": option("merge_request.title")}
    if not found:
        requests.append(request)
    request["sha"] = new
    print("")
    print(f"View merge request for {branch}:")
    print(f"  https://gitlab.example/demo/project/-/merge_requests/{request['iid']}")
    print("")
log.write_text(json.dumps(requests, indent=2))
