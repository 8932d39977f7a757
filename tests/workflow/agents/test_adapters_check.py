"""`git harn workflow init --agent claude|codex` and `git harn workflow check [--live]`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from git_harn.tasks.config import parse_toml, workflow_settings
from tests.kit.adapter_fakes import PLAN_OK, claude_init, claude_result, codex_failed, codex_started
from tests.kit.harn import assert_valid, harn, make_repo
from tests.kit.workflow_repo import setup
from tests.workflow.agents.adapters.test_adapters_workflow import CONFIG, _fake_bin


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_init_with_an_agent_writes_a_starter_that_uses_its_adapter(tmp_path: Path, cli: str) -> None:
    repo = make_repo(tmp_path / "r")
    done = harn(repo, "workflow", "init", "--agent", cli, "--json")
    assert done.code == 0, done.err
    assert_valid(done.json(), "workflow-init")
    text = (repo / ".harn" / "workflow.toml").read_text()
    parsed = workflow_settings(parse_toml(text.encode(), "starter"), "starter")
    assert {s: a.adapter for s, a in parsed.agents.items()} == {
        "plan": cli, "implement": cli, "review": cli, "integrate": "command"}
    assert parsed.agents["integrate"].builtin and parsed.gates
    review = parsed.agents["review"].args
    assert ("read-only" in review) if cli == "codex" else ("Edit" in review and "default" in review)
    assert "dangerously" not in " ".join(a for s in parsed.agents.values() for a in s.args)
    assert "security-and-permissions.md" in text


def test_init_refuses_an_unknown_agent_and_writes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    done = harn(repo, "workflow", "init", "--agent", "gemini")
    assert done.code == 2 and not (repo / ".harn").exists()


def test_check_finds_each_agent_and_its_version(tmp_path: Path) -> None:
    env = _fake_bin(tmp_path)
    wf = setup(tmp_path, config=CONFIG)
    done = harn(wf.work, "workflow", "check", "--json", env=env)
    assert done.code == 0, done.out + done.err
    doc = done.json()
    assert_valid(doc, "workflow-check")
    by_stage = {a["stage"]: a for a in doc["agents"]}
    assert by_stage["plan"]["version"] == "claude 9.9.9 (fake)"
    assert by_stage["review"]["version"] == "codex 9.9.9 (fake)"
    assert by_stage["integrate"]["command"] == "builtin" and doc["ok"] is True
    assert not (Path(env["FAKE_CLI_DIR"]) / "calls").exists()  # no prompt without --live
    human = harn(wf.work, "workflow", "check", env=env)
    assert human.code == 0 and "every agent can run" in human.out


def test_check_says_what_is_missing(tmp_path: Path) -> None:
    wf = setup(tmp_path, config=CONFIG)
    bare = {"PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                    if not (Path(p) / "claude").exists() and not (Path(p) / "codex").exists())}
    done = harn(wf.work, "workflow", "check", env=bare)
    assert done.code == 3
    assert "plan: claude is not an executable on PATH" in done.out
    assert "review: codex is not an executable on PATH" in done.out


def test_check_of_a_missing_configuration_is_bad_input(tmp_path: Path) -> None:
    wf = setup(tmp_path, config="")
    done = harn(wf.work, "workflow", "check")
    assert done.code == 2 and done.err.startswith("git harn: error:") and done.err.count("\n") == 1


def test_live_check_sends_a_noop_prompt_outside_the_repository_and_classifies(tmp_path: Path) -> None:
    env = _fake_bin(tmp_path)
    wf = setup(tmp_path, config=CONFIG)
    (Path(env["FAKE_CLI_DIR"]) / "scenario.json").write_text(json.dumps({
        "stage:plan": [claude_init(), claude_result(PLAN_OK)],
        "stage:implement": [claude_init(), claude_result(PLAN_OK)],
        "stage:review": [codex_started(), codex_failed("unexpected status 401 Unauthorized"), {"exit": 1}],
    }))
    done = harn(wf.work, "workflow", "check", "--live", "--json", env=env)
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-check")
    by_stage = {a["stage"]: a for a in doc["agents"]}
    assert by_stage["plan"]["live"]["ok"] is True and by_stage["implement"]["ok"] is True
    assert by_stage["review"]["live"]["fault"] == "auth" and not by_stage["review"]["ok"]
    assert "auth fault" in by_stage["review"]["problems"][0]
    calls = [json.loads(p.read_text()) for p in (Path(env["FAKE_CLI_DIR"]) / "calls").glob("*.json")]
    assert len(calls) == 3
    for call in calls:
        assert not Path(call["cwd"]).resolve().is_relative_to(wf.work.resolve())
        assert "preflight check" in call["stdin"]
    codex = next(c for c in calls if c["name"] == "codex")
    assert "--skip-git-repo-check" in codex["argv"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal applies to root only")
@pytest.mark.parametrize(("args", "shown"), [
    ('["--dangerously-skip-permissions"]', "--dangerously-skip-permissions"),
    ('["--permission-mode", "bypassPermissions"]', "--permission-mode bypassPermissions"),
    ('["--permission-mode=bypassPermissions"]', "--permission-mode bypassPermissions"),
    ('["--allow-dangerously-skip-permissions"]', "--allow-dangerously-skip-permissions"),
])
def test_check_warns_that_claude_refuses_every_bypass_as_root(tmp_path: Path, args: str, shown: str) -> None:
    env = _fake_bin(tmp_path)
    config = CONFIG.replace('args = ["--permission-mode", "acceptEdits"]', f"args = {args}")
    wf = setup(tmp_path, config=config)
    for sandbox in ("", "yes", "true"):  # Claude Code accepts only IS_SANDBOX=1
        done = harn(wf.work, "workflow", "check", env={**env, "IS_SANDBOX": sandbox})
        assert done.code == 3 and f"plan: config fault: claude refuses {shown} as root" in done.out, done.out
    assert harn(wf.work, "workflow", "check", env={**env, "IS_SANDBOX": "1"}).code == 0


def test_check_runs_each_clis_own_login_check(tmp_path: Path) -> None:
    env = _fake_bin(tmp_path)
    calls = Path(env["FAKE_CLI_DIR"])
    (calls / "logged-out").write_text("")
    wf = setup(tmp_path, config=CONFIG)
    done = harn(wf.work, "workflow", "check", "--live", "--json", env=env)
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-check")
    by_stage = {a["stage"]: a for a in doc["agents"]}
    assert by_stage["plan"]["problems"] == [
        "auth fault: claude is not logged in (auth status --text: exited with 1: Not logged in. Run claude auth "
        "login to authenticate.)"]
    assert by_stage["review"]["problems"] == [
        "auth fault: codex is not logged in (login status: exited with 1: Not logged in)"]
    assert by_stage["review"]["live"]["fault"] == "auth" and by_stage["review"]["live"]["signal"] == "login check"
    assert not (calls / "calls").exists()  # no prompt was sent to a CLI that is not logged in
    human = harn(wf.work, "workflow", "check", env={**env, "CODEX_API_KEY": "sk-test"})
    assert "review: auth fault" not in human.out and "plan: auth fault: claude is not logged in" in human.out
