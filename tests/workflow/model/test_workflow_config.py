"""Workflow configuration: read from <remote>/<base> only [P5], every bad key
named with nothing created [P7], and a dry run that changes nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.kit.harn import all_refs, assert_valid, git, harn
from tests.kit.workflow_repo import config_text, setup


def _state(wf: object) -> tuple[dict[str, str], str, list[str]]:
    work = wf.work  # type: ignore[attr-defined]
    tmp = wf.tmp  # type: ignore[attr-defined]
    worktrees = sorted(str(p) for p in (tmp / "worktrees").rglob("*")) if (tmp / "worktrees").exists() else []
    return all_refs(work), git(work, "worktree", "list", "--porcelain"), worktrees


PY = json.dumps(sys.executable)
GOOD_AGENTS = (f'[agents.plan]\ncommand = [{PY}, "x"]\n[agents.implement]\ncommand = [{PY}, "x"]\n'
               f'[agents.review]\ncommand = [{PY}, "x"]\n')
GATES = '[gates]\ncommands = [["true"]]\n'


@pytest.mark.parametrize(("text", "named"), [
    ("[workflow]\nparallel = 0\n" + GOOD_AGENTS + GATES, "workflow.parallel"),
    ('[workflow]\nparallel = "3"\n' + GOOD_AGENTS + GATES, "workflow.parallel"),
    ("[workflow]\nmaxTasks = -1\n" + GOOD_AGENTS + GATES, "workflow.maxTasks"),
    ("[workflow]\nstageTimeout = 0\n" + GOOD_AGENTS + GATES, "workflow.stageTimeout"),
    ("[workflow]\nreviewRounds = 0\n" + GOOD_AGENTS + GATES, "workflow.reviewRounds"),
    ('[workflow]\nbase = "-x"\n' + GOOD_AGENTS + GATES, "workflow.base"),
    ("[workflow]\nremote = 5\n" + GOOD_AGENTS + GATES, "workflow.remote"),
    ("[workflow]\ncolour = 1\n" + GOOD_AGENTS + GATES, "unknown setting workflow.colour"),
    ("[deploy]\nx = 1\n" + GOOD_AGENTS + GATES, "unknown setting deploy"),
    (GOOD_AGENTS.replace("[agents.plan]", "[agents.planx]") + GATES, "agents.planx"),
    (GOOD_AGENTS.split("[agents.implement]")[1].join(["[agents.implement]", ""]) + GATES, "agents.plan"),
    (GOOD_AGENTS.replace(f'command = [{PY}, "x"]', 'command = "sh -c x"', 1) + GATES, "agents.plan.command"),
    (GOOD_AGENTS + "timeout = -1\n" + GATES, "agents.review.timeout"),
    (GOOD_AGENTS + 'stdin = "xml"\n' + GATES, "agents.review.stdin"),
    (GOOD_AGENTS + "colour = 2\n" + GATES, "agents.review.colour"),
    (GOOD_AGENTS + '[agents.integrate]\ncommand = ["sh"]\ntimeout = "soon"\n' + GATES, "agents.integrate.timeout"),
    (GOOD_AGENTS, "gates.commands"),
    (GOOD_AGENTS + '[gates]\ncommands = "make"\n', "[gates] commands"),
    (GOOD_AGENTS + GATES + "[gates.extra]\n", "gates"),
    ("[workflow\n", "cannot read .harn/workflow.toml"),
])
def test_bad_configuration_names_the_key_and_creates_nothing(tmp_path: Path, text: str, named: str) -> None:
    wf = setup(tmp_path, config=text)
    before = _state(wf)
    for args in ((), ("--dry-run",)) if named == "workflow.parallel" else ((),):
        done = wf.run(*args)
        assert done.code == 2, done.err
        assert named in done.err, done.err
        assert done.err.startswith("git harn: error: ") and done.err.count("\n") == 1
    assert _state(wf) == before
    assert not (wf.agents / "agent.log").exists()


def test_missing_configuration_file_and_bad_flags(tmp_path: Path) -> None:
    wf = setup(tmp_path, config="")
    git(wf.work, "rm", "-q", ".harn/workflow.toml")
    git(wf.work, "commit", "-qm", "no config")
    git(wf.work, "push", "-q", "origin", "HEAD:main")
    done = wf.run()
    assert done.code == 2 and "origin/main has no .harn/workflow.toml" in done.err
    wf2 = setup(tmp_path / "second")
    assert wf2.run("--parallel", "0").code == 2
    assert wf2.run("--max-tasks", "0").code == 2
    assert "unknown remote" in wf2.run("--remote", "nowhere").err
    assert "has no branch" in wf2.run("--base", "nowhere").err


def test_configuration_and_roadmap_come_from_the_base_only(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 11.1 Real task\n- [ ] 11.2 Edits the roadmap\n")
    evil = config_text(wf.agents).replace('"review"]', '"review-evil"]').replace('"plan"]', '"plan-evil"]')
    # the operator's own main: a committed but unpushed roadmap task and config change ...
    (wf.work / "docs" / "roadmap.md").write_text("# R\n\n- [ ] 11.1 Real task\n- [ ] 11.2 Edits the roadmap\n"
                                                 "- [ ] 11.8 Local commit only\n")
    (wf.work / ".harn" / "workflow.toml").write_text(evil)
    git(wf.work, "commit", "-qam", "local only")
    # ... and uncommitted edits in the working tree
    (wf.work / "docs" / "roadmap.md").write_text("# R\n\n- [ ] 11.1 Real task\n- [ ] 11.9 Working tree only\n")
    # the task's own plan agent rewrites the reviewers on its branch; another adds a task to the roadmap
    wf.script({"11.1:plan": "edit-config", "11.2:plan": "edit-roadmap"})
    done = wf.run("--json")
    doc = done.json()
    assert doc["selected"] == ["11.1", "11.2"]
    first, second = doc["tasks"]
    assert first["status"] == "done", first
    assert (second["status"], second["stage"]) == ("halted", "integrate")
    assert "beyond the checkbox" in second["detail"]
    assert "11.7" not in wf.remote_file("docs/roadmap.md")
    assert not list(wf.agents.glob("evil-*"))  # neither the local nor the branch's agents ran
    assert doc["agents"]["review"]["command"][-1] == "review"


def test_dry_run_creates_nothing_and_runs_no_agent(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    git(wf.work, "branch", "roadmap-1.4", "origin/main")
    wf.push_change({"a.txt": "moved\n"})  # the remote is ahead of the local tracking ref
    git(wf.work, "update-ref", "refs/remotes/origin/main", "origin/main~1")
    before = _state(wf)
    done = wf.run("--dry-run", "--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert doc["dryRun"] is True and doc["outcome"] == "workflow-dry-run"
    assert [(t["taskId"], t["status"], t["branch"]) for t in doc["tasks"]] == [
        ("1.1", "planned", "roadmap-1.1"), ("1.3", "planned", "roadmap-1.3")]
    assert {(s["taskId"], s["reason"]) for s in doc["skipped"]} == {
        ("1.4", "surviving-branch"), ("1.2", "waiting-for-requirements")}
    assert doc["baseOid"] == git(wf.remote, "rev-parse", "main")
    assert doc["agents"]["integrate"]["command"] == "builtin"
    assert _state(wf) == before
    assert not (wf.agents / "agent.log").exists()
    human = wf.run("--dry-run")
    assert human.code == 0 and "agent plan: " in human.out and "roadmap-1.1" in human.out
    assert _state(wf) == before


def test_flags_override_the_file_and_the_file_may_name_its_remote(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    wf = setup(tmp_path, config=config_text(agents, workflow='maxTasks = 1\nparallel = 2\nremote = "upstream"\n'))
    git(wf.work, "remote", "add", "upstream", str(wf.remote))
    sub = wf.work / "docs"  # any subdirectory works
    plan = harn(sub, "workflow", "run", "--dry-run", "--json").json()
    assert plan["remote"] == "upstream" and plan["selected"] == ["1.1"]
    assert plan["settings"]["parallel"] == 2 and plan["settings"]["maxTasks"] == 1
    assert ("1.3", "max-tasks") in {(s["taskId"], s["reason"]) for s in plan["skipped"]}
    wider = harn(sub, "workflow", "run", "--dry-run", "--json", "--max-tasks", "3", "--parallel", "1",
                 "--remote", "origin").json()
    assert wider["remote"] == "origin" and wider["selected"] == ["1.1", "1.3", "1.4"]
    assert wider["settings"]["parallel"] == 1
