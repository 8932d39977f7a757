"""A proposal killed at every new failpoint (after the push, after the
request is opened) reruns to exactly one request per task, never two [F1] [P6]."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_harn.forge.github import OPENED_POINT
from git_harn.forge.landing import PUSHED_POINT
from tests.kit.local_forges import FakeGitHub, bare_forge, branch_at, git, make_clone, new_bare, requests_of, squash

TOKEN = "ghp_crashTestToken"
PROPOSE = """
import json, sys
from pathlib import Path
from git_harn.forge.choose import forge_for
from git_harn.forge.propose import propose
from git_harn.git.objects import to_oid
from git_harn.git.repo import open_repo
args = json.loads(sys.argv[1])
repo = open_repo(Path(args["work"]))
forge = forge_for(repo, "origin", args["kind"], args["url"], env=args["env"])
got = propose(repo, forge, "origin", "main", "1.2", to_oid(args["squash"]), "T", "B")
print(json.dumps({"number": got.number}))
"""


def run_propose(args: dict[str, object], failpoint: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARN_FAILPOINT")}
    env.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    if failpoint:
        env["HARN_FAILPOINT"] = failpoint
    return subprocess.run([sys.executable, "-c", PROPOSE, json.dumps(args)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


@pytest.mark.parametrize("point", [PUSHED_POINT, OPENED_POINT])
@pytest.mark.parametrize("kind", ["github", "gitlab", "gitea"])
def test_killed_at_each_point_a_rerun_makes_one_request(tmp_path: Path, kind: str, point: str) -> None:
    bare = new_bare(tmp_path) if kind == "github" else bare_forge(tmp_path, kind)
    work = make_clone(tmp_path, bare)
    sq = squash(work, git(work, "rev-parse", "main"), {"hello.txt": "hi\n"})
    server = FakeGitHub(bare, TOKEN) if kind == "github" else None
    url = server.api if server else f"https://{kind}.example"
    args = {"work": str(work), "kind": kind, "url": url, "squash": sq,
            "env": {"GH_ENTERPRISE_TOKEN": TOKEN, "PATH": ""}}
    try:
        killed = run_propose(args, point)
        assert killed.returncode == -9, killed.stderr
        if kind != "gitea":
            assert branch_at(bare, "refs/heads/harnery/land/1.2") == sq  # the push was made before the kill
        rerun = run_propose(args, None)
        assert rerun.returncode == 0, rerun.stderr
        again = run_propose(args, None)
        assert again.returncode == 0, again.stderr
        made = server.pulls if server else requests_of(bare)
        assert len(made) == 1
        if server:
            assert json.loads(rerun.stdout)["number"] == json.loads(again.stdout)["number"] == 1
    finally:
        if server:
            server.close()
