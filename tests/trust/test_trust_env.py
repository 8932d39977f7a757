"""Every child gets a scrubbed environment built in one place: git's
location and config variables never, the operator's secrets only where the
configuration names them (issue 28, item 6) [P5]."""

from __future__ import annotations

import json
import sys
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.kit.adapter_fakes import PLAN_OK, agent, claude_ok, codex_ok, install
from tests.kit.harn import assert_valid, git, harn, make_repo
from tests.kit.task_repo import task_branch, task_repo
from tests.kit.workflow_repo import config_text, setup

# What an operator's shell holds: secrets of every kind, git location and
# config variables (as a hook or `git -c` exports them), and ordinary ones.
OPERATOR = {
    "ANTHROPIC_API_KEY": "sk-ant-secret", "OPENAI_API_KEY": "sk-openai-secret", "GH_TOKEN": "ghp_secret",
    "GITHUB_TOKEN": "ghs_secret", "AWS_SECRET_ACCESS_KEY": "aws-secret", "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",
    "NPM_TOKEN": "npm-secret", "DB_PASSWORD": "hunter2", "MY_SERVICE_API_KEY": "svc-secret",
    "GIT_INDEX_FILE": "/nonexistent/index", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "harn.probe",
    "GIT_CONFIG_VALUE_0": "yes", "TERM": "xterm-256color", "LANG": "C.UTF-8", "PROJECT_MODE": "ci",
}
SECRETS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GH_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
           "SSH_AUTH_SOCK", "NPM_TOKEN", "DB_PASSWORD", "MY_SERVICE_API_KEY")
NEVER = ("GIT_INDEX_FILE", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0")
KEPT = ("PATH", "HOME", "TERM", "LANG", "PROJECT_MODE")

DUMPER = r'''
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
name = f"{os.environ['HARN_STAGE']}-{os.environ.get('HARN_REVIEWER', '0')}"
with open(os.path.join(here, f"env-{name}.json"), "w") as f:
    json.dump(sorted(os.environ), f)
os.execv(sys.executable, [sys.executable, os.path.join(here, "agent.py"), *sys.argv[1:]])
'''


def seen(folder: Path, name: str) -> set[str]:
    return set(json.loads((folder / f"env-{name}.json").read_text()))


def test_a_whole_run_gives_secrets_only_where_configured_and_git_variables_to_none(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    gate = f'[gates]\ncommands = [["sh", "-c", "env > {tmp_path}/gate.env; test ! -e broken"]]\n' \
           'env = ["NPM_TOKEN"]\n'
    text = config_text(agents).replace("agent.py", "dump.py").split("[gates]")[0] + gate
    text = text.replace('"review"]\n', '"review"]\nenv = ["ANTHROPIC_API_KEY", "MY_SERVICE_API_KEY"]\n')
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First thing\n", config=text)
    (agents / "dump.py").write_text(DUMPER)
    done = wf.run("--json", env=OPERATOR)
    doc = done.json()
    assert done.code == 0, (done.err, [(t["status"], t["detail"]) for t in doc["tasks"]])
    assert_valid(doc, "workflow-result")
    for stage in ("plan-0", "implement-0"):
        names = seen(agents, stage)
        assert not names & set(SECRETS) and not names & set(NEVER), (stage, names & {*SECRETS, *NEVER})
        assert set(KEPT) <= names
    for reviewer in ("review-1", "review-2"):
        names = seen(agents, reviewer)
        assert names & {*SECRETS, *NEVER} == {"ANTHROPIC_API_KEY", "MY_SERVICE_API_KEY"}
    gate_env = dict(line.split("=", 1) for line in (tmp_path / "gate.env").read_text().splitlines() if "=" in line)
    assert set(gate_env) & {*SECRETS, *NEVER} == {"NPM_TOKEN"} and gate_env["NPM_TOKEN"] == "npm-secret"
    assert gate_env["HARN_GATE_BRANCH"] == "roadmap-1.1" and gate_env["PROJECT_MODE"] == "ci"
    assert doc["agents"]["review"]["env"] == ["ANTHROPIC_API_KEY", "MY_SERVICE_API_KEY"]


def test_an_adapter_gets_its_own_login_variables_and_no_other_secret(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    for key, value in OPERATOR.items():
        monkeypatch.setenv(key, value)
    kit.scenario([claude_ok(PLAN_OK), codex_ok(PLAN_OK), claude_ok(PLAN_OK)])
    assert kit.run(agent("claude")).ok
    assert kit.run(agent("codex"), attempt=2).ok
    assert kit.run(agent("claude", env=("NPM_TOKEN", "GH_TOKEN")), attempt=3).ok
    claude, codex, named = (set(call["envNames"]) for call in kit.calls())
    assert claude & {*SECRETS, *NEVER} == {"ANTHROPIC_API_KEY"}
    assert codex & {*SECRETS, *NEVER} == {"OPENAI_API_KEY"}
    # a secret it names, but never a forge's token, whatever it names [T5]
    assert named & {*SECRETS, *NEVER} == {"ANTHROPIC_API_KEY", "NPM_TOKEN"}


@pytest.mark.parametrize(("setting", "words"), [
    ('[agents.plan]\ncommand = ["x"]\nenv = "ANTHROPIC_API_KEY"\n', "agents.plan.env must be a list"),
    ('[agents.plan]\ncommand = ["x"]\nenv = ["1BAD"]\n', "agents.plan.env must be a list"),
    ('[agents.plan]\ncommand = ["x"]\nenv = ["GIT_DIR"]\n', "agents.plan.env names GIT_DIR, which no child"),
    ('[agents.plan]\nadapter = "claude"\nenv = ["GIT_CONFIG_KEY_0"]\n', "names GIT_CONFIG_KEY_0"),
    ('[gates]\ncommands = [["true"]]\nenv = [3]\n', "gates.env must be a list"),
    ('[agents.integrate]\ncommand = "builtin"\nenv = ["NPM_TOKEN"]\n', "apply to an agent command"),
    ('[agents.plan]\ncommand = ["x"]\nenv = ["GH_TOKEN"]\n', "names GH_TOKEN, a forge's token"),
    ('[gates]\ncommands = [["true"]]\nenv = ["GITLAB_TOKEN"]\n', "names GITLAB_TOKEN, a forge's token"),
])
def test_a_bad_env_setting_is_one_line_exit_2_and_nothing_is_made(tmp_path: Path, setting: str, words: str) -> None:
    agents = tmp_path / "agents"
    base = config_text(agents)
    table = setting.split("]\n", 1)[0] + "]"
    kept = "\n\n".join(part for part in base.split("\n\n") if not part.startswith(table))
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First thing\n", config=kept + "\n" + setting)
    before = git(wf.work, "for-each-ref")
    done = wf.run()
    assert done.code == 2, done.err
    assert done.err.startswith("git harn: error: ") and done.err.count("\n") == 1 and words in done.err, done.err
    assert git(wf.work, "for-each-ref") == before
    assert not (wf.work / ".git" / "harnery" / "workflow").exists()


def test_gates_run_by_hand_hold_back_secrets_unless_git_config_names_them(tmp_path: Path) -> None:
    repo = task_repo(tmp_path, gates='[gates]\ncommands = [["sh", "-c", "env"]]\n')
    task_branch(repo)
    git(repo, "config", "--add", "harn.gateEnv", "NPM_TOKEN")
    result = harn(repo, "gates", "run", "roadmap-1.2", "--json", env=OPERATOR)
    assert result.code == 0, result.err
    output = result.json()["commands"][0]["outputTail"]
    names = {line.split("=", 1)[0] for line in output.splitlines() if "=" in line}
    assert names & {*SECRETS, *NEVER} == {"NPM_TOKEN"}
    git(repo, "config", "--add", "harn.gateEnv", "GH_TOKEN")  # a forge's token: not even by the operator's word [T5]
    token = harn(repo, "gates", "run", "roadmap-1.2", env=OPERATOR)
    assert token.code == 2 and "harn.gateEnv names GH_TOKEN, a forge's token" in token.err, token.err
    git(repo, "config", "--unset", "harn.gateEnv", "GH_TOKEN")
    git(repo, "config", "--add", "harn.gateEnv", "GIT_DIR")
    refused = harn(repo, "gates", "run", "roadmap-1.2", env=OPERATOR)
    assert refused.code == 2 and "harn.gateEnv names GIT_DIR" in refused.err, refused.err


def test_the_operators_own_command_keeps_their_secrets_but_not_gits_variables(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    out = tmp_path / "env.json"
    code = f"import json, os; json.dump(sorted(os.environ), open({str(out)!r}, 'w'))"
    result = harn(repo, "run", "r1", "--", sys.executable, "-c", code, env=OPERATOR)
    assert result.code == 0, result.err
    names = set(json.loads(out.read_text()))
    assert set(SECRETS) <= names and not names & set(NEVER)


@pytest.mark.parametrize("name", [*OPERATOR, "PATH", "HOME", "my_token", "api_key", "GIT_CONFIG", "GIT_CONFIGS",
                                  "GIT_CONFIG_KEY_", "XGIT_CONFIG_COUNT", "GH_", "GH", "SOME_KEY_IDS", "A_KEYS",
                                  "X_AUTH", "X_AUTHOR", "KRB5CCNAME_2", "a\nb_KEY", "_KEY"])
def test_the_filters_match_each_name_as_its_glob_patterns_do(name: str) -> None:
    """The secret and never-passed filters are one expression each; they must
    judge every name as the listed glob patterns do, one by one."""
    from git_harn.git.env import CONFIG_INJECTION, LOCATION_VARS, SECRET_PATTERNS, is_secret, never_passed

    assert is_secret(name) == any(fnmatchcase(name.upper(), p) for p in SECRET_PATTERNS)
    assert never_passed(name) == (name in LOCATION_VARS or any(fnmatchcase(name, p) for p in CONFIG_INJECTION))


@given(st.text(alphabet=st.sampled_from("ABCDEGHIKNOPRSTUWY_abk5\n."), max_size=24))
def test_the_filters_agree_with_the_glob_patterns_on_any_name(name: str) -> None:
    test_the_filters_match_each_name_as_its_glob_patterns_do(name)
