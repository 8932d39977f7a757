"""Adapters in a whole run: `[agents.<stage>] adapter = "claude" | "codex"`,
its settings, usage per task and for the run, and the logs in the result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_harn.errors import BadInput
from git_harn.tasks.config import parse_toml, workflow_settings
from tests.kit.adapter_fakes import PLAN_OK, claude_init, claude_result, codex_ok, created, fake_cli_env
from tests.kit.harn import assert_valid
from tests.kit.workflow_repo import setup

APPROVE = {"verdict": "approve", "summary": "fine", "findings": []}


def settings(text: str) -> object:
    return workflow_settings(parse_toml(text.encode(), "t"), "t")


def test_adapter_settings_are_read_and_checked() -> None:
    parsed = settings('[workflow]\nidleTimeout = 90\n'
                      '[agents.plan]\nadapter = "claude"\nmodel = "opus"\nmaxTurns = 40\nmaxBudgetUsd = 3\n'
                      'args = ["--permission-mode", "acceptEdits"]\n'
                      '[agents.review]\nadapter = "codex"\ncommand = ["/opt/codex/bin/codex"]\nidleTimeout = 30\n')
    plan = parsed.agents["plan"]  # type: ignore[attr-defined]
    assert (plan.adapter, plan.command, plan.model, plan.maxTurns, plan.maxBudgetUsd, plan.stdin) == (
        "claude", ["claude"], "opus", 40, 3.0, "prompt")
    assert plan.args == ("--permission-mode", "acceptEdits")
    review = parsed.agents["review"]  # type: ignore[attr-defined]
    assert (review.adapter, review.command, review.idleTimeout) == ("codex", ["/opt/codex/bin/codex"], 30.0)
    assert parsed.idleTimeout == 90.0  # type: ignore[attr-defined]
    assert review.shown()["adapter"] == "codex"


@pytest.mark.parametrize(("text", "message"), [
    ('[agents.plan]\nadapter = "gemini"\n', "agents.plan.adapter must be one of"),
    ('[agents.plan]\ncommand = ["a"]\nmodel = "x"\n', 'agents.plan.model applies only with adapter'),
    ('[agents.plan]\nadapter = "codex"\nmaxTurns = 3\n', "codex exec has neither"),
    ('[agents.plan]\nadapter = "claude"\nargs = "--x"\n', "agents.plan.args must be a list"),
    ('[agents.plan]\nadapter = "claude"\nstdin = "json"\n', 'is always "prompt"'),
    ('[agents.plan]\nadapter = "claude"\nmaxBudgetUsd = -1\n', "maxBudgetUsd must be a positive amount"),
    ('[agents.plan]\nadapter = "claude"\nmodel = "--dangerously-skip-permissions"\n', "must be a model name"),
    ('[workflow]\nidleTimeout = 0\n', "workflow.idleTimeout must be a positive number"),
    ('[agents.assess]\nadapter = "claude"\n', "agents.assess.adapter applies to the stage agents"),
])
def test_bad_adapter_settings_name_the_key(text: str, message: str) -> None:
    with pytest.raises(BadInput) as caught:
        settings(text)
    assert message in caught.value.message and "\n" not in caught.value.message


def _fake_bin(tmp: Path) -> dict[str, str]:
    return fake_cli_env(tmp)[0]


CONFIG = '''[workflow]
stageTimeout = 60

[agents.plan]
adapter = "claude"
args = ["--permission-mode", "acceptEdits"]

[agents.implement]
adapter = "claude"
maxTurns = 50

[agents.review]
adapter = "codex"
args = ["--sandbox", "read-only"]

[agents.integrate]
command = "builtin"

[gates]
commands = [["sh", "-c", "test -e work-9.1.txt"]]
'''


def test_a_run_with_claude_and_codex_agents_lands_and_counts_usage(tmp_path: Path) -> None:
    env = _fake_bin(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 Adapted\n", config=CONFIG)
    (Path(env["FAKE_CLI_DIR"]) / "scenario.json").write_text(json.dumps({
        "stage:plan": [claude_init(), {"work": "plan"}, claude_result(PLAN_OK)],
        "stage:implement": [claude_init(), {"work": "implement"}, claude_result({"ok": True, "summary": "built"})],
        "stage:review": codex_ok(APPROVE),
    }))
    done = wf.run("--json", env=env)
    doc = done.json()
    assert done.code == 0, (done.err, [(t["status"], t["stage"], t["detail"]) for t in doc["tasks"]])
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert task["status"] == "done"
    assert "- [x] 9.1" in wf.remote_file("docs/roadmap.md")
    assert wf.remote_file("work-9.1.txt") == "done by claude"
    # two claude runs and two codex reviewers
    assert task["usage"] == {"inputTokens": 2 * 1000 + 2 * 2000, "outputTokens": 2 * 200 + 2 * 300,
                             "cachedInputTokens": 2 * 75 + 2 * 500, "costUsd": 0.0246, "runs": 4,
                             # codex reports no cost and no [prices.<model>] prices it: unknown, not nothing
                             "unknownRuns": 2, "stages": {"plan": {"costUsd": 0.0123, "runs": 1, "unknownRuns": 0},
                                                          "implement": {"costUsd": 0.0123, "runs": 1, "unknownRuns": 0},
                                                          "review": {"costUsd": None, "runs": 2, "unknownRuns": 2}}}
    assert doc["usage"] == task["usage"]
    assert task["stages"]["plan"]["agentRun"]["adapter"] == "claude"
    assert {r["agentRun"]["adapter"] for r in task["review"]["reviews"]} == {"codex"}
    assert len(task["agentLogs"]) == 4 and all(Path(p).is_file() for p in task["agentLogs"])
    assert doc["agents"]["implement"]["adapter"] == "claude" and doc["agents"]["implement"]["maxTurns"] == 50
    assert doc["settings"]["idleTimeout"] == 600


def test_a_provider_fault_in_a_run_ends_the_task_provider_fault_and_keeps_its_log(tmp_path: Path) -> None:
    env = _fake_bin(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.2 Rate limited\n", config=CONFIG.replace("9.1", "9.2"))
    (Path(env["FAKE_CLI_DIR"]) / "scenario.json").write_text(json.dumps({
        "stage:plan": [claude_init(), claude_result(is_error=True, subtype="success", status=429,
                                                    text="API Error: 429 rate_limit_error")],
    }))
    done = wf.run("--json", "--idle-timeout", "5", env=env)
    assert done.code == 3
    doc = done.json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert (task["status"], task["stage"], task["fault"]) == ("provider-fault", "plan", "provider"), task
    assert "HTTP 429" in task["detail"]
    assert task["assessment"] is None and doc["remediationSuppressed"] is True  # never judged, no roadmap work
    assert doc["faultMetrics"] == {"infraRetries": 0, "infraFaults": 0, "providerFaults": 1, "authFaults": 0,
                                   "configFaults": 0, "tamperFaults": 0}
    assert Path(task["stages"]["plan"]["agentRun"]["log"]).read_text().count("\n") == 2
    assert doc["settings"]["idleTimeout"] == 5


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_a_run_without_a_login_stops_after_one_auth_line_with_nothing_created(tmp_path: Path, cli: str) -> None:
    env = _fake_bin(tmp_path)
    calls = Path(env["FAKE_CLI_DIR"])
    (calls / "logged-out").write_text("")
    config = CONFIG if cli == "claude" else CONFIG.replace('adapter = "claude"', 'adapter = "codex"').replace(
        "maxTurns = 50\n", "")
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.3 Needs a login\n", config=config)
    before = created(wf.work)
    human = wf.run(env=env)
    assert human.code == 3, human.err
    said = [line for line in (human.out + human.err).splitlines() if line.strip()]
    check = "claude auth status --text" if cli == "claude" else "codex login status"
    words = "Not logged in. Run claude auth login to authenticate." if cli == "claude" else "Not logged in"
    # the run's header, the one auth line with the CLI's own words, its next step (issue 21), the summary
    assert len(said) == 5 and said[0].startswith("workflow wf-"), said
    assert said[1] == f"halted: auth preflight {check} exited with 1: {words}; nothing was started"
    assert said[2] == "next: git harn workflow run" and "credential" in said[3]
    assert said[4] == "0 tasks: blocked: auth-preflight-failed"
    assert created(wf.work) == before  # no record, branch, worktree or scratch file
    assert not (calls / "calls").exists()  # no agent ran
    done = wf.run("--json", env=env)
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert (done.code, doc["blocked"], doc["tasks"]) == (3, "auth-preflight-failed", [])
    assert [(c["adapter"], c["ok"]) for c in doc["preflight"]["commands"]] == [(cli, False)]
    assert "WARNING" not in doc["halted"]
    assert created(wf.work) == before
    logins = (calls / "logins.log").read_text().splitlines()
    assert logins == [check] * 2  # one check per run, however many stages use the CLI


def test_a_logged_in_cli_passes_its_own_check_and_codex_api_key_needs_none(tmp_path: Path) -> None:
    env = _fake_bin(tmp_path)
    calls = Path(env["FAKE_CLI_DIR"])
    done_roadmap = "# R\n\n- [x] 9.4 Logged in\n"  # nothing to start: only the preflight runs
    wf = setup(tmp_path, roadmap=done_roadmap, config=CONFIG)
    doc = wf.run("--json", "--dry-run", env=env).json()
    assert doc["preflight"] is None and not (calls / "logins.log").exists()  # a dry run checks nothing
    doc = wf.run("--json", env=env).json()
    assert [(c["argv"][1:], c["adapter"], c["ok"]) for c in doc["preflight"]["commands"]] == [
        (["auth", "status", "--text"], "claude", True), (["login", "status"], "codex", True)]
    (calls / "logged-out").write_text("")
    doc = wf.run("--json", env={**env, "CODEX_API_KEY": "sk-test"}).json()
    assert doc["blocked"] == "auth-preflight-failed"  # claude still says not logged in
    assert [c["adapter"] for c in doc["preflight"]["commands"]] == ["claude"]
    off = CONFIG + "\n[agents.preflight]\nadapterChecks = false\n"
    wf2 = setup(tmp_path / "off", roadmap=done_roadmap, config=off)
    doc = wf2.run("--json", env=env).json()
    assert doc["preflight"] is None and doc["blocked"] is None
