"""Hooks an agent committed never run in the host's own git commands
(issue 28, item 2) [P5].

With a relative ``core.hooksPath`` (``.githooks``, husky's ``.husky/_``),
git looks for hooks in the worktree it runs in, which the implement agent
writes and commits to. Every git git-harn runs turns hooks off."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.kit.harn import assert_valid, git, harn, record
from tests.kit.victims import CLIENT_HOOKS, hook_files
from tests.kit.workflow_repo import WF, config_text, setup

HOOK_WRITER = r'''
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "hooks.json")) as f:
    for path, text in json.load(f).items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as out:
            out.write(text)
        os.chmod(path, 0o755)
os.execv(sys.executable, [sys.executable, os.path.join(here, "agent.py"), *sys.argv[1:]])
'''


def hooked(tmp: Path, roadmap: str) -> tuple[WF, Path]:
    """A workflow whose implement agent commits every client hook under
    ``.githooks``, the operator's relative core.hooksPath; (workflow, marks folder)."""
    marks = tmp / "marks"
    marks.mkdir()
    agents = tmp / "agents"
    wf = setup(tmp, roadmap=roadmap,
               config=config_text(agents).replace('agent.py", "implement"', 'hooks.py", "implement"'))
    (agents / "hooks.py").write_text(HOOK_WRITER)
    (agents / "hooks.json").write_text(json.dumps(hook_files(marks)))
    git(wf.work, "config", "core.hooksPath", ".githooks")
    return wf, marks


def test_no_hook_an_implement_agent_commits_runs_during_a_whole_workflow(tmp_path: Path) -> None:
    wf, marks = hooked(tmp_path, "# R\n\n- [ ] 1.1 First thing\n- [ ] 1.2 Second\n  Requires: 1.1\n")
    wf.script({"1.2:review": "never-approve"})  # one task lands, one fails review and is preserved
    done = wf.run("--json")
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert [(t["taskId"], t["status"]) for t in doc["tasks"]] == [("1.1", "done"), ("1.2", "failed")], doc
    assert sorted(os.listdir(marks)) == [], {n: (marks / n).read_text() for n in os.listdir(marks)}
    # the hooks really were there for git to find: on the base, and in the preserved workspace
    assert git(wf.remote, "show", "main:.githooks/post-checkout").startswith("#!/bin/sh")
    preserved = Path(record(wf.work, doc["tasks"][1]["runId"])["path"])
    assert all((preserved / ".githooks" / name).is_file() for name in CLIENT_HOOKS)
    # ... and git would have run them: the operator's own switch there does
    git(preserved, "switch", "-q", "--detach")
    assert (marks / "post-checkout").is_file()


def test_the_hooks_of_a_task_worktree_stay_off_for_cleanup_and_salvage(tmp_path: Path) -> None:
    wf, marks = hooked(tmp_path, "# R\n\n- [ ] 1.1 First thing\n")
    wf.script({"implement": "dirty"})  # stray file left: the workspace is preserved, then discarded
    done = wf.run("--json")
    task = done.json()["tasks"][0]
    assert task["status"] == "failed" and task["workspace"]["state"] == "preserved_dirty", task
    discarded = harn(wf.work, "workflow", "discard", "1.1", "--yes", "--json")
    assert discarded.code == 0, discarded.err
    assert sorted(os.listdir(marks)) == [], {n: (marks / n).read_text() for n in os.listdir(marks)}


def test_every_git_but_the_ones_that_report_the_hooks_setting_runs_with_hooks_off() -> None:
    from git_harn.git.run import hooks_off

    assert hooks_off(["switch", "--detach"]) == ("-c", "core.hooksPath=/dev/null")
    assert hooks_off(["-c", "rebase.autoStash=false", "rebase", "x"]) == ("-c", "core.hooksPath=/dev/null")
    assert hooks_off(["config", "--show-scope", "--get", "core.hooksPath"]) == ()
    assert hooks_off(["rev-parse", "--git-path", "hooks"]) == ()
