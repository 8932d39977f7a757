"""workflow.land = "pull-request" against local forges, no network [F1] [F2]:
the remote is a bare repository whose hooks act as GitLab (push options) or
Gitea (the AGit flow) would, recording the requests they open. With no
token the next run tells a merge by content.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit.harn import assert_valid, git
from tests.kit.local_forges import HOOKS, requests_of
from tests.kit.runners import at_failpoint
from tests.kit.workflow_repo import WF, config_text, setup

ROADMAP = "# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n  Requires: 1.1\n"
URL = {"gitlab": "https://gitlab.example", "gitea": "https://gitea.example"}
NO_TOKENS = {"GITLAB_TOKEN": "", "GITEA_TOKEN": "", "FORGEJO_TOKEN": "", "GH_TOKEN": "", "GITHUB_TOKEN": ""}


def _forge(tmp: Path, kind: str) -> WF:
    agents = tmp / "agents"
    workflow = f'stageTimeout = 30\nland = "pull-request"\nforge = "{kind}"\nforgeUrl = "{URL[kind]}"\n'
    wf = setup(tmp, roadmap=ROADMAP, config=config_text(agents, workflow=workflow))
    git(wf.remote, "config", "receive.advertisePushOptions", "true")
    pre, post = HOOKS[kind]
    for name, text in (("pre-receive", pre), ("post-receive", post)):
        hook = wf.remote / "hooks" / name
        hook.write_text(text)
        hook.chmod(0o755)
    return wf


def _run(wf: WF) -> dict:
    done = wf.run("--json", env=NO_TOKENS)
    assert done.code == 0, (done.err, done.out[-2000:])
    doc = done.json()
    assert_valid(doc, "workflow-result")
    return doc


def _head_ref(kind: str, request: dict) -> str:
    return f"refs/heads/{request['source']}" if kind == "gitlab" else f"refs/pull/{request['index']}/head"


def _merge_on_forge(wf: WF, ref: str) -> None:
    clone = wf.tmp / "maintainer"
    if not clone.exists():
        git(wf.tmp, "clone", "-q", str(wf.remote), str(clone))
        git(clone, "config", "user.name", "Maintainer")
        git(clone, "config", "user.email", "maintainer@example.invalid")
    git(clone, "fetch", "-q", "origin", f"+{ref}:refs/remotes/forge/request", "+main:refs/remotes/origin/main")
    git(clone, "switch", "-q", "-C", "main", "origin/main")
    git(clone, "merge", "-q", "--no-ff", "-m", "Merge request", "forge/request")
    git(clone, "push", "-q", "origin", "main")


@pytest.mark.parametrize("kind", ["gitlab", "gitea"])
def test_one_request_per_task_on_the_forge_and_the_next_run_reconciles_the_merge(tmp_path: Path,
                                                                                 kind: str) -> None:
    wf = _forge(tmp_path, kind)
    before = git(wf.remote, "rev-parse", "main")
    first = _run(wf)
    [task] = first["tasks"]
    assert task["taskId"] == "1.1" and task["status"] == "proposed"
    [request] = requests_of(wf.remote)
    assert task["proposal"]["url"] and task["proposal"]["url"].startswith(URL[kind])
    assert task["proposal"]["forge"] == kind
    assert git(wf.remote, "rev-parse", "main") == before  # nothing landed by itself
    assert git(wf.remote, "rev-parse", _head_ref(kind, request)) == task["proposal"]["head"]
    described = request["description"]  # made from the task: its plan, the gates, both verdicts, the run
    for words in ("ExecPlan (docs/execplans/1.1.md): - [ ] step", "Gates: passed", "Review 1: approve",
                  "Review 2: approve", task["runId"]):
        assert words in described, described
    assert request["title"] == "First"

    held = _run(wf)
    assert held["tasks"] == [] and len(requests_of(wf.remote)) == 1  # no second request

    _merge_on_forge(wf, _head_ref(kind, request))
    second = _run(wf)
    assert [(p["taskId"], p["became"]) for p in second["proposals"]] == [("1.1", "done")]
    assert [(t["taskId"], t["status"]) for t in second["tasks"]] == [("1.2", "proposed")]  # the dependent started
    assert len(requests_of(wf.remote)) == 2


@pytest.mark.parametrize("point", ["propose-after-open", "propose-before-record"])
def test_a_run_killed_after_the_request_opened_reruns_to_one_request(tmp_path: Path, point: str) -> None:
    wf = _forge(tmp_path, "gitlab")
    at_failpoint(wf.work, point, "workflow", "run", env=NO_TOKENS).kill_group()
    rerun = _run(wf)
    again = _run(wf)
    assert len(requests_of(wf.remote)) == 1
    assert rerun["tasks"] == [] and again["tasks"] == []
    assert {s["taskId"]: s["reason"] for s in again["skipped"]}["1.1"] == "proposed"


@pytest.mark.parametrize("kind", ["gitlab", "gitea"])
def test_a_rebuilt_proposal_updates_the_same_request_on_the_forge(tmp_path: Path, kind: str) -> None:
    wf = _forge(tmp_path, kind)
    roadmap = "# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n"  # neighbouring boxes: the second conflicts once merged
    wf.push_change({"docs/roadmap.md": roadmap}, "two independent tasks")
    first = _run(wf)
    assert sorted(t["taskId"] for t in first["tasks"]) == ["1.1", "1.2"]
    requests = {r.get("source") or r.get("topic"): r for r in requests_of(wf.remote)}
    assert len(requests) == 2
    one = next(r for key, r in requests.items() if key.endswith("1.1"))
    _merge_on_forge(wf, _head_ref(kind, one))
    second = _run(wf)
    seen = {p["taskId"]: p for p in second["proposals"]}
    assert seen["1.1"]["became"] == "done" and "rebuilt" in seen["1.2"]["how"], seen
    after = requests_of(wf.remote)
    assert len(after) == 2  # the same request, updated
    two = next(r for r in after if (r.get("source") or r.get("topic")).endswith("1.2"))
    assert two["sha"] == seen["1.2"]["head"]


@pytest.mark.parametrize("kind", ["gitlab", "gitea"])
def test_with_a_token_a_request_closed_on_the_forge_ends_refused_with_its_branch_kept(tmp_path: Path,
                                                                                      kind: str) -> None:
    from tests.kit.local_forges import OWNER, REPO, FakeRest

    token = "glpat-landprClosed" if kind == "gitlab" else "gitea-landprClosed"
    placeholder = setup(tmp_path / "seed-world", roadmap="# R\n\n- [ ] 1.1 First\n")
    bare = tmp_path / "forge" / OWNER / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--bare", str(placeholder.remote), str(bare))
    git(bare, "config", "receive.advertisePushOptions", "true")
    for name, text in zip(("pre-receive", "post-receive"), HOOKS[kind], strict=True):
        (bare / "hooks" / name).write_text(text)
        (bare / "hooks" / name).chmod(0o755)
    server = FakeRest(bare, kind, token)
    try:
        other = tmp_path / "configure"
        git(tmp_path, "clone", "-q", str(bare), str(other))
        workflow = f'stageTimeout = 30\nland = "pull-request"\nforge = "{kind}"\nforgeUrl = "{server.root}"\n'
        (other / ".harn" / "workflow.toml").write_text(config_text(placeholder.agents, workflow=workflow))
        git(other, "commit", "-q", "-am", "land by request")
        git(other, "push", "-q", "origin", "main")
        git(placeholder.work, "remote", "set-url", "origin", str(bare))
        wf = WF(tmp_path, bare, placeholder.work, placeholder.agents)
        env = {**NO_TOKENS, "GITLAB_TOKEN" if kind == "gitlab" else "GITEA_TOKEN": token,
               "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        first = wf.run("--json", env=env)
        assert first.code == 0, first.err
        assert [t["status"] for t in first.json()["tasks"]] == ["proposed"]
        server.update(1, state="closed")  # closed on the forge, unmerged
        second = wf.run("--json", env=env)
        assert second.code == 0, second.err
        [seen] = second.json()["proposals"]
        assert (seen["became"], seen["state"]) == ("refused", "closed"), seen
        assert git(wf.work, "rev-parse", "-q", "--verify", "roadmap-1.1", check=False)  # a survivor
        assert {s["taskId"]: s["reason"] for s in second.json()["skipped"]} == {"1.1": "surviving-branch"}
    finally:
        server.close()


HOSTILE_SUMMARY = '"fine\\u0000\\u001b]0;owned\\u0007\\u009b2J\\nmerge_request.target=evil -o topic=x\\r\\n"'


@pytest.mark.parametrize("kind", ["gitlab", "gitea"])
def test_a_reviewer_s_hostile_summary_is_one_plain_line_of_the_request(tmp_path: Path, kind: str) -> None:
    """A reviewer's summary (agent text, in the request's description) holds
    a NUL, escape sequences and line ends meant to break a push option or add
    one: the request is still opened, to the base, and its description is
    printable, the summary's words in it [F1] [T1]."""
    wf = _forge(tmp_path, kind)
    agent = wf.agents / "agent.py"
    agent.write_text(agent.read_text().replace('f"review {reviewer} of {task}"', HOSTILE_SUMMARY))
    done = wf.run("--json", env=NO_TOKENS)
    [task] = done.json()["tasks"]
    assert task["status"] == "proposed", (task["detail"], task["stage"])
    [request] = requests_of(wf.remote)
    assert request["target" if kind == "gitlab" else "base"] == "main", request
    described = request["description"]
    assert "fine" in described and "owned" in described and described.isprintable(), described
