"""Advice executes in pull-request mode [L4] [F1]: a next step a
pull-request run prints carries the flags that made it land as it did
(--land, --forge, --forge-url), since ``git harn integrate`` reads no
workflow.toml. The forge here is a local GitLab stand-in (a bare repository
whose hooks take push options) named only by flag: its path says no forge,
so a step printed without them would push the landing branch and open no
request.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from tests.kit.harn import assert_valid, git
from tests.kit.local_forges import HOOKS, requests_of
from tests.kit.workflow_repo import WF, config_text, setup

URL = "https://gitlab.example"
FORGE = ("--land", "pull-request", "--forge", "gitlab", "--forge-url", URL)
NO_TOKENS = {"GITLAB_TOKEN": "", "GITEA_TOKEN": "", "FORGEJO_TOKEN": "", "GH_TOKEN": "", "GITHUB_TOKEN": ""}


def _gitlab(tmp: Path, workflow: str = "stageTimeout = 30\n") -> WF:
    wf = setup(tmp, roadmap="# R\n\n- [ ] 1.1 First\n", config=config_text(tmp / "agents", workflow=workflow))
    git(wf.remote, "config", "receive.advertisePushOptions", "true")
    for name, text in zip(("pre-receive", "post-receive"), HOOKS["gitlab"], strict=True):
        hook = wf.remote / "hooks" / name
        hook.write_text(text)
        hook.chmod(0o755)
    return wf


def _run(wf: WF, *flags: str) -> dict:
    done = wf.run("--json", *flags, env=NO_TOKENS)
    doc = done.json()
    assert_valid(doc, "workflow-result")
    return doc


def _as_printed(wf: WF, command: str) -> subprocess.CompletedProcess[str]:
    """The step run exactly as printed: split as a shell would, run as argv, no shell."""
    return subprocess.run(shlex.split(command), cwd=wf.work, capture_output=True, text=True, timeout=180,
                          check=False, env={**os.environ, **NO_TOKENS})


def _drop_injected_line(wf: WF, branch: str) -> None:
    """The operator's check: the roadmap line the plan agent added is taken out, in a commit of its own."""
    index = wf.tmp / "operator.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    blob = git(wf.work, "rev-parse", "origin/main:docs/roadmap.md")
    for args in (["read-tree", branch], ["update-index", "--cacheinfo", f"100644,{blob},docs/roadmap.md"]):
        subprocess.run(["git", *args], cwd=wf.work, env=env, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=wf.work, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()
    commit = git(wf.work, "commit-tree", tree, "-p", branch, "-m", "operator: drop the injected task")
    git(wf.work, "update-ref", f"refs/heads/{branch}", commit)


def test_a_halted_pull_request_task_s_integrate_step_runs_as_printed_on_a_forge_named_by_flag(
        tmp_path: Path) -> None:
    wf = _gitlab(tmp_path)
    wf.script({"1.1:plan": "edit-roadmap"})  # a change to the roadmap beyond its box: integration halts
    first = _run(wf, *FORGE)
    [task] = first["tasks"]
    assert (task["state"], task["stage"]) == ("halted", "integrate"), task["detail"]
    command = task["next"]["command"]
    assert command == ("git harn integrate roadmap-1.1 --land pull-request --forge gitlab "
                       f"--forge-url {URL}"), command
    assert requests_of(wf.remote) == []
    _drop_injected_line(wf, "roadmap-1.1")
    before = git(wf.remote, "rev-parse", "main")
    ran = _as_printed(wf, command)
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    [request] = requests_of(wf.remote)  # the forge opened the request: the step named it
    assert request["source"] == "harnery/land/1.1" and request["target"] == "main", request
    assert git(wf.remote, "rev-parse", "main") == before  # and nothing was pushed onto the base
    again = _run(wf, *FORGE)  # the next run on that state holds it as proposed: no same advice again
    assert again["tasks"] == [] and [s["taskId"] for s in again["skipped"] if s["reason"] == "proposed"] == ["1.1"]
    assert len(requests_of(wf.remote)) == 1


def test_a_pull_request_run_whose_file_names_the_forge_prints_integrate_with_flags_not_keys(
        tmp_path: Path) -> None:
    wf = _gitlab(tmp_path, f'stageTimeout = 30\nland = "pull-request"\nforge = "gitlab"\nforgeUrl = "{URL}"\n')
    wf.script({"1.1:plan": "edit-roadmap"})
    [task] = _run(wf)["tasks"]
    assert task["state"] == "halted"
    # integrate reads no workflow.toml: without these flags it would push onto the base
    assert task["next"]["command"] == (f"git harn integrate roadmap-1.1 --land pull-request --forge gitlab "
                                       f"--forge-url {URL}"), task["next"]
    _drop_injected_line(wf, "roadmap-1.1")
    before = git(wf.remote, "rev-parse", "main")
    ran = _as_printed(wf, task["next"]["command"])
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    assert git(wf.remote, "rev-parse", "main") == before and len(requests_of(wf.remote)) == 1


def test_the_remediation_branch_gets_a_request_of_its_own_on_the_forge(tmp_path: Path) -> None:
    wf = _gitlab(tmp_path)
    wf.script({"1.1:review": "never-approve"})  # its blocking findings become an addendum
    before = git(wf.remote, "rev-parse", "main")
    doc = _run(wf, *FORGE)
    rem = doc["remediation"]
    branch = f"harnery/land/remediation-{doc['workflowId']}"
    assert rem["state"] == "proposed" and git(wf.remote, "rev-parse", branch) == rem["commit"], rem
    [request] = requests_of(wf.remote)  # opened from the remediation branch, to the base
    assert (request["source"], request["target"]) == (branch, "main"), request
    assert "Roadmap addenda" in request["title"] and "review finding" in request["description"], request
    assert rem["request"] == {"forge": "gitlab", "number": request["iid"],
                              "url": f"{URL}/octo/hello/-/merge_requests/{request['iid']}"}, rem
    assert git(wf.remote, "rev-parse", "main") == before  # never the base [F1]


def test_an_unknown_forge_or_a_bad_forge_url_by_flag_is_one_line_of_bad_input_and_changes_nothing(
        tmp_path: Path) -> None:
    wf = _gitlab(tmp_path)
    refs = git(wf.work, "for-each-ref")
    for flags in (("--forge", "bitbucket"), ("--forge-url", "https://user:secret@gitlab.example")):
        done = wf.run("--land", "pull-request", *flags, env=NO_TOKENS)
        assert done.code != 0 and done.err.startswith("git harn: error: "), done.err
        assert len(done.err.strip().splitlines()) == 1 and "secret" not in done.err, done.err
    assert git(wf.work, "for-each-ref") == refs and requests_of(wf.remote) == []
