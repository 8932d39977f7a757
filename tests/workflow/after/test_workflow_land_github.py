"""workflow.land = "pull-request" against a GitHub on the loopback (the
kit's FakeGitHub, over a real bare repository), no network [F1] [F2] [T5]:
one pull request per task, the forge's word read back with the operator's
token, a closed request refused with the forge's state, and the token in
no record, log, prompt or page.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit.harn import assert_valid, git, harn
from tests.kit.local_forges import OWNER, REPO, FakeGitHub
from tests.kit.workflow_repo import WF, config_text, setup

TOKEN = "ghp_l4ndpr0posalT0kenNeverWritten0123456"
ROADMAP = "# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n  Requires: 1.1\n- [ ] 1.3 Third\n"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[WF, FakeGitHub]]:
    placeholder = setup(tmp_path / "seed-world", roadmap=ROADMAP)
    bare = tmp_path / "forge" / OWNER / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--bare", str(placeholder.remote), str(bare))
    server = FakeGitHub(bare, TOKEN)
    agents = placeholder.agents
    workflow = f'stageTimeout = 30\nland = "pull-request"\nforge = "github"\nforgeUrl = "{server.api}"\n'
    other = tmp_path / "configure"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    (other / ".harn" / "workflow.toml").write_text(config_text(agents, workflow=workflow))
    git(other, "commit", "-q", "-am", "land by pull request")
    git(other, "push", "-q", "origin", "main")
    git(placeholder.work, "remote", "set-url", "origin", str(bare))
    git(placeholder.work, "fetch", "-q", "origin")
    wf = WF(tmp_path, bare, placeholder.work, agents)
    try:
        yield wf, server
    finally:
        server.close()


def _run(wf: WF) -> dict:
    done = wf.run("--json", env={"GH_TOKEN": TOKEN, "GITHUB_TOKEN": ""})
    assert done.code == 0, (done.err, done.out[-2000:])
    doc = done.json()
    assert_valid(doc, "workflow-result")
    return doc


def _merge(wf: WF, server: FakeGitHub, number: int) -> None:
    """The maintainer merges pull request ``number`` on the forge (a merge commit)."""
    pull = server.find(number)
    assert pull is not None
    clone = wf.tmp / "maintainer"
    if not clone.exists():
        git(wf.tmp, "clone", "-q", str(wf.remote), str(clone))
        git(clone, "config", "user.name", "Maintainer")
        git(clone, "config", "user.email", "maintainer@example.invalid")
    git(clone, "fetch", "-q", "origin")
    git(clone, "switch", "-q", "-C", "main", "origin/main")
    git(clone, "merge", "-q", "--no-ff", "-m", f"Merge pull request #{number}", f"origin/{pull['head_ref']}")
    git(clone, "push", "-q", "origin", "main")
    server.head_sha(pull)  # the request merged with the head its branch held then
    pull.update(state="closed", merged=True, merge_commit_sha=git(clone, "rev-parse", "HEAD"),
                closed_at="2026-12-07T12:00:00Z")


def _everything_written(wf: WF) -> bytes:
    """Every object of the clone (records, notes, commits), every file under
    its .git and the worktrees, and what the agents were given."""
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=wf.work,
                             capture_output=True, check=True).stdout
    files = b""
    for root in (wf.work / ".git", wf.tmp / "worktrees", wf.agents):
        if root.exists():
            files += b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file() and "objects" not in p.parts)
    return objects + files


def test_one_pull_request_per_task_and_the_forge_s_word_read_back(world: tuple[WF, FakeGitHub]) -> None:
    wf, server = world
    before = git(wf.remote, "rev-parse", "main")
    first = _run(wf)
    by_id = {t["taskId"]: t for t in first["tasks"]}
    assert sorted(by_id) == ["1.1", "1.3"] and all(t["status"] == "proposed" for t in by_id.values())
    assert len(server.posts()) == 2 and git(wf.remote, "rev-parse", "main") == before
    assert by_id["1.1"]["proposal"]["url"].endswith("/pull/1") or by_id["1.1"]["proposal"]["number"] == 1

    held = _run(wf)
    assert held["tasks"] == [] and len(server.posts()) == 2  # found, never opened twice

    _merge(wf, server, by_id["1.1"]["proposal"]["number"])
    pull_3 = server.find(by_id["1.3"]["proposal"]["number"])
    assert pull_3 is not None
    pull_3.update(state="closed", closed_at="2026-12-07T12:00:00Z")  # closed unmerged on the forge
    second = _run(wf)
    became = {p["taskId"]: p["became"] for p in second["proposals"]}
    assert became == {"1.1": "done", "1.3": "refused"}, second["proposals"]
    assert [(t["taskId"], t["status"]) for t in second["tasks"]] == [("1.2", "proposed")]
    assert git(wf.work, "rev-parse", "-q", "--verify", "roadmap-1.3", check=False)  # kept as a survivor
    assert git(wf.remote, "rev-parse", "-q", "--verify", "harnery/land/1.3", check=False)  # landing branch kept

    page = wf.tmp / "page.html"
    assert harn(wf.work, "workflow", "report", "-o", str(page)).code == 0
    html = page.read_text()
    assert "Proposals reconciled" in html and "refused" in html  # the page names each request and its fate
    assert f'href="{by_id["1.1"]["proposal"]["url"]}"' in html
    listed = harn(wf.work, "workflow", "list", env={"GH_TOKEN": TOKEN})
    shown = harn(wf.work, "workflow", "show", first["workflowId"], env={"GH_TOKEN": TOKEN})
    written = _everything_written(wf) + page.read_bytes() + listed.out.encode() + shown.out.encode()
    assert TOKEN.encode() not in written  # [T5]
    assert b"harnery/land/1.1" in written  # what was searched holds what the runs wrote


def test_auto_merge_asks_the_forge_to_merge_each_request_once_its_checks_pass(
        world: tuple[WF, FakeGitHub]) -> None:
    wf, server = world
    done = wf.run("--json", "--auto-merge", env={"GH_TOKEN": TOKEN})
    assert done.code == 0, done.err
    tasks = done.json()["tasks"]
    assert tasks and all(t["proposal"]["autoMerge"]["enabled"] for t in tasks), tasks
    assert all(p["auto_merge"] is not None for p in server.pulls)


def test_a_request_merged_with_a_head_nobody_judged_is_not_done(world: tuple[WF, FakeGitHub]) -> None:
    """Someone with push access (an agent of another task, say) moves
    harnery/land/<id> on the remote after git-harn pushed the judged squash;
    the request follows it and is merged: the forge says merged, with a head
    that is not the squash. The task is not done, nothing is kept as landed,
    and the run says why [T4] [F2]."""
    wf, server = world
    first = _run(wf)
    pull = next(t["proposal"] for t in first["tasks"] if t["taskId"] == "1.1")
    hostile = wf.tmp / "hostile"
    git(wf.tmp, "clone", "-q", str(wf.remote), str(hostile))
    git(hostile, "switch", "-q", "-c", "evil", "origin/harnery/land/1.1")
    (hostile / "backdoor.txt").write_text("never judged\n")
    git(hostile, "add", "backdoor.txt")
    git(hostile, "-c", "user.name=H", "-c", "user.email=h@example.invalid", "commit", "-q", "-m", "unjudged")
    git(hostile, "push", "-q", "origin", "HEAD:refs/heads/harnery/land/1.1")
    _merge(wf, server, pull["number"])

    second = _run(wf)
    seen = {p["taskId"]: p for p in second["proposals"]}
    assert seen["1.1"]["became"] == "halted", seen
    assert pull["head"][:12] in seen["1.1"]["how"] and "not the judged squash" in seen["1.1"]["how"]
    assert not git(wf.work, "for-each-ref", "refs/harnery/integrated/1.1")  # nothing kept as landed
    third = _run(wf)  # and it stays so: held for a person, never done by a later reading
    assert {p["taskId"]: p["became"] for p in third["proposals"]}["1.1"] == "halted"


def test_the_token_reaches_no_notifier_and_no_agent_s_input(world: tuple[WF, FakeGitHub]) -> None:
    """The run holds the operator's GH_TOKEN to open the requests; the
    notifier told of each proposal gets neither it nor its name, and no
    agent's input holds it (tests/trust/test_trust_env.py: no agent or gate
    environment holds a *TOKEN* variable) [T5]."""
    import shlex
    import sys

    wf, _server = world
    told = wf.tmp / "told"
    told.mkdir()
    keeper = wf.tmp / "keeper.py"
    keeper.write_text("import json, os, sys, time\n"
                      f"open(os.path.join({str(told)!r}, str(time.time_ns()) + '.json'), 'w').write("
                      "json.dumps({'event': sys.stdin.read(), 'env': dict(os.environ)}))\n")
    done = wf.run("--json", "--notify", shlex.join([sys.executable, str(keeper)]), env={"GH_TOKEN": TOKEN})
    assert done.code == 0, done.err
    assert [t["status"] for t in done.json()["tasks"]] == ["proposed", "proposed"]
    deadline = time.monotonic() + 20
    while len(list(told.glob("*.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    seen = [p.read_text() for p in told.glob("*.json")]
    assert len(seen) >= 3 and any("proposed" in s for s in seen)  # two proposals and the run's end
    assert all(TOKEN not in s and "GH_TOKEN" not in s for s in seen)
    given = b"".join(p.read_bytes() for p in (wf.agents / "inputs").rglob("*") if p.is_file())
    assert given and TOKEN.encode() not in given  # every agent's stdin and HARN_ environment



def _plant(wf: WF, state: str, forge_url: str) -> str:
    """What a stage agent in flight can do: write refs/harnery/proposals/1.1
    (a record it made up) in the shared git dir. Its head: the base's tip."""
    head = git(wf.work, "rev-parse", "origin/main")
    doc = {"key": "1.1", "taskId": "1.1", "addendum": None, "state": state, "remote": "origin", "base": "main",
           "branch": "roadmap-1.1", "landingBranch": "harnery/land/1.1", "forge": "github",
           "url": f"{forge_url}/pull/7", "number": 7, "forgeName": "github", "forgeUrl": forge_url,
           "autoMerge": False, "head": head, "judged": head, "tip": head, "baseOid": head, "title": "t",
           "body": "b", "words": "", "schemaVersion": 1}
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=wf.work, input=json.dumps(doc), text=True,
                          capture_output=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=wf.work, input=f"100644 blob {blob}\tproposal.json\n", text=True,
                          capture_output=True, check=True).stdout.strip()
    git(wf.work, "update-ref", "refs/harnery/proposals/1.1", git(wf.work, "commit-tree", tree, "-m", state))
    return head


@pytest.mark.parametrize("state", ["proposing", "open"])
def test_a_proposal_record_nobody_but_git_harn_may_write_is_believed_only_when_its_mac_verifies(
        world: tuple[WF, FakeGitHub], state: str) -> None:
    """A stage agent in flight writes refs/harnery/proposals/1.1: a record
    whose forgeUrl is its own server. 'workflow list' (run by the operator
    beside the run) and the next run reconcile every live proposal: neither
    sends the token there, nor pushes the record's head, nor takes the
    record for a request of git-harn's [T5] [T4] [F2]."""
    wf, server = world
    evil = FakeGitHub(wf.remote, "not-the-operator-s-token")
    try:
        _plant(wf, state, evil.api)
        listed = harn(wf.work, "workflow", "list", "--json", env={"GH_TOKEN": TOKEN})
        assert listed.code == 0, listed.err
        assert not evil.requests, evil.requests  # [T5]
        assert not git(wf.remote, "rev-parse", "-q", "--verify", "harnery/land/1.1", check=False)
        assert "evil" not in listed.out and evil.api not in listed.out
        done = _run(wf)
        assert not evil.requests and [p["taskId"] for p in done["proposals"]] == []
        first = next(t for t in done["tasks"] if t["taskId"] == "1.1")  # proposed for real, on the real forge
        assert first["status"] == "proposed" and first["proposal"]["url"].startswith(server.root), first
    finally:
        evil.close()
