"""The host checks every stage itself: lying agents, review rounds, the I3
check of an integration agent, hostile text kept as data [P5]."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_harn.integrate.report import INCOMPLETE
from tests.kit.harn import all_refs, assert_valid, git, harn, ref
from tests.kit.workflow_repo import config_text, setup

TWO = "# R\n\n- [ ] 5.1 Misbehaving\n- [ ] 5.2 Well behaved\n"


@pytest.mark.parametrize(("stage", "behaviour", "detail"), [
    ("implement", "lie-nothing", "reported ok but committed nothing"),
    ("implement", "dirty", "uncommitted path(s): stray.txt"),
    ("implement", "not-complete", "has Status: APPROVED, not COMPLETE"),
    ("implement", "invalid-report", "does not match the implement report schema"),
    ("plan", "lie-nothing", "no ExecPlan docs/execplans/5.1.md is committed"),
    ("review", "invalid-report", "does not match the review report schema"),
    ("plan", "crash", "exited with 7 and no valid report"),
])
def test_a_lying_agent_is_refused_and_its_work_kept(tmp_path: Path, stage: str, behaviour: str,
                                                     detail: str) -> None:
    wf = setup(tmp_path, roadmap=TWO)
    wf.script({f"5.1:{stage}": behaviour})
    done = wf.run("--json")
    assert done.code == 3, done.err
    doc = done.json()
    assert_valid(doc, "workflow-result")
    bad, good = doc["tasks"]
    # a report it cannot get right, or a crash, is an infra fault, not a verdict on the work (issue 13)
    expected = "infra-fault" if behaviour in ("invalid-report", "crash") else "failed"
    assert (bad["status"], bad["stage"]) == (expected, stage), bad
    assert detail in bad["detail"]
    assert good["status"] == "done"  # a failed task does not stop its siblings
    assert doc["summary"] == f"2 tasks: 1 done, 1 {expected}"
    assert "- [ ] 5.1" in wf.remote_file("docs/roadmap.md")
    # left to cleanup, which preserves what is unfinished [P1]
    branch_tip = ref(wf.work, "refs/heads/roadmap-5.1")
    if behaviour in ("dirty",):
        assert bad["workspace"]["state"] == "preserved_dirty"
        assert (Path(bad["workspace"]["path"]) / "stray.txt").exists()
    elif bad["workspace"]["state"] == "preserved_unmerged":
        assert branch_tip is not None and Path(bad["workspace"]["path"]).exists()
    else:  # nothing was committed: nothing to keep
        assert bad["workspace"]["state"] == "released"
        assert branch_tip is None
    status = harn(wf.work, "status", "--json")
    assert status.code == 0


def test_blocked_plan_stops_the_task_as_blocked(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 6.1 Cannot be done\n")
    wf.script({"plan": "blocked"})
    doc = wf.run("--json").json()
    task = doc["tasks"][0]
    assert (task["status"], task["stage"]) == ("blocked", "plan")
    assert "Status: BLOCKED" in task["detail"]
    assert task["workspace"]["state"] == "preserved_unmerged"


def test_review_asks_for_changes_then_approves_on_round_two(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 7.1 Needs a second go\n")
    wf.script({"review": "changes-then-approve", "review-barrier": True})
    done = wf.run("--json")
    assert done.code == 0, done.err
    task = done.json()["tasks"][0]
    assert task["status"] == "done"
    assert task["review"]["rounds"] == 2 and task["review"]["approved"]
    assert task["attempts"]["implement"] == 2
    assert [(r["round"], r["reviewer"], r["verdict"]) for r in task["review"]["reviews"]] == [
        (1, 1, "changes-requested"), (1, 2, "changes-requested"), (2, 1, "approve"), (2, 2, "approve")]
    # the second implement got both reviewers' findings
    second = json.loads((wf.agents / "inputs" / "7.1-implement-2-0.stdin").read_text())
    assert sorted(f["text"] for f in second["findings"]) == ["reviewer 1: fix 7.1", "reviewer 2: fix 7.1"]
    assert second["round"] == 2
    # both reviewers of a round ran in parallel on the same tip: each waited for the other to start
    # (run one after the other, the first would end before the second began, and this would fail)
    reviews = [e for e in wf.log() if e["stage"] == "review" and e["attempt"] == 2]
    starts = sorted(e["t"] for e in reviews if e["event"] == "start")
    ends = sorted(e["t"] for e in reviews if e["event"] == "end")
    assert len(starts) == len(ends) == 2 and starts[1] < ends[0], (starts, ends)
    assert {e["reviewer"] for e in reviews} == {"1", "2"}


@pytest.mark.parametrize(("behaviour", "rounds", "detail"), [
    ("refuse-and-scribble", 1, "changes requested after 1 review round(s): reviewer 1: changes-requested"),
    ("refuse-and-scribble", 2, "after review the worktree has 2 uncommitted path(s): notes-1.txt, notes-2.txt"),
    ("approve-and-scribble", 1, "after review the worktree has 2 uncommitted path(s): notes-1.txt, notes-2.txt"),
])
def test_what_ends_a_review_is_what_the_detail_says_first(tmp_path: Path, behaviour: str, rounds: int,
                                                          detail: str) -> None:
    """A refusal in the last round ends the task whatever the reviewers left,
    and names what they left after it; earlier, the mess is what stops the
    next round (issue 23 item 14)."""
    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 7.3 Reviewed\n",
               config=config_text(agents, workflow=f"stageTimeout = 30\nreviewRounds = {rounds}\n"))
    wf.script({"review": behaviour})
    task = wf.run("--json").json()["tasks"][0]
    assert (task["status"], task["stage"], task["review"]["rounds"]) == ("failed", "review", 1)
    assert task["detail"].startswith(detail), task["detail"]
    if detail.startswith("changes requested"):
        assert task["detail"].endswith("; the reviewers also left 2 uncommitted path(s): notes-1.txt, notes-2.txt")
    assert task["workspace"]["state"] == "preserved_dirty"  # the notes are kept for salvage


def test_review_that_never_approves_fails_after_review_rounds(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 7.2 Never good enough\n")
    wf.script({"review": "never-approve"})
    done = wf.run("--json")
    assert done.code == 3
    task = done.json()["tasks"][0]
    assert (task["status"], task["stage"]) == ("failed", "review")
    assert task["detail"].startswith("changes requested after 2 review round(s)")
    assert task["attempts"]["implement"] == 2
    assert task["workspace"]["state"] == "preserved_unmerged"
    assert "- [ ] 7.2" in wf.remote_file("docs/roadmap.md")


@pytest.mark.parametrize(("report", "detail"), [
    ({"ok": True, "rebased": False, "squashMerged": True, "pushed": True, "roadmapMarkedDone": True,
      "summary": "squashed and pushed without a rebase"}, "squashed and pushed without a rebase"),
    ({"ok": False, "conflicts": "conflict in a.txt", "summary": "gave up"}, "conflict in a.txt"),
    ({"ok": True, "pushed": True}, INCOMPLETE),
])
def test_integration_agent_report_failing_i3_halts_with_the_exact_detail(
        tmp_path: Path, report: dict[str, object], detail: str) -> None:
    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 8.1 Integrated by an agent\n", config=config_text(
        agents, integrate=f'command = [{json.dumps(__import__("sys").executable)}, '
                          f'{json.dumps(str(agents / "agent.py"))}, "integrate"]'))
    (wf.agents / "integrate-report.json").write_text(json.dumps(report))
    done = wf.run("--json")
    assert done.code == 3
    task = done.json()["tasks"][0]
    assert (task["status"], task["stage"], task["detail"]) == ("halted", "integrate", detail)
    assert len(wf.remote_log()) == 1
    assert "refs/harnery/integrated/8.1" not in all_refs(wf.work)


def test_integration_agent_believed_only_when_the_base_shows_it(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 8.2 Claims to have landed\n", config=config_text(
        agents, integrate=f'command = [{json.dumps(__import__("sys").executable)}, '
                          f'{json.dumps(str(agents / "agent.py"))}, "integrate"]'))
    five = {k: True for k in ("ok", "rebased", "squashMerged", "pushed", "roadmapMarkedDone")}
    (wf.agents / "integrate-report.json").write_text(json.dumps({**five, "summary": "all done"}))
    task = wf.run("--json").json()["tasks"][0]
    assert (task["status"], task["stage"]) == ("halted", "integrate")
    assert "does not have task 8.2 ticked" in task["detail"]


HOSTILE = "$(touch pwned-a) `touch pwned-b`; touch pwned-c | sh -c 'touch pwned-d' \x1b[31m"


def test_hostile_titles_and_plans_are_never_executed(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=f"# R\n\n- [ ] 9.1 {HOSTILE}\n")
    wf.script({"plan": "hostile-plan", "implement": "hostile-plan"})
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    title = doc["tasks"][0]["title"]
    assert title == HOSTILE.strip()
    assert not list(tmp_path.rglob("pwned-*"))
    env = json.loads((wf.agents / "inputs" / "9.1-plan-1-0.env").read_text())
    assert env["HARN_TASK_TITLE"].startswith("$(touch pwned-a) `touch pwned-b`")
    stdin = json.loads((wf.agents / "inputs" / "9.1-plan-1-0.stdin").read_text())
    assert stdin["task"]["title"] == title
    prompt = Path(env["HARN_PROMPT"]).read_text()
    assert "BEGIN UNTRUSTED TASK CONTEXT" in prompt and json.dumps(title, ensure_ascii=False)[1:20] in prompt
    subject = git(wf.remote, "log", "-1", "--format=%s", "main")
    assert "\x1b" not in subject
    assert "pwned-plan" in wf.remote_file("docs/execplans/9.1.md")  # carried as data, landed as text


def test_stage_inputs_are_valid_and_name_everything(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [x] 0.9 Done before\n- [ ] 9.2 Checked inputs\n  Requires: 0.9\n")
    done = wf.run("--json")
    assert done.code == 0, done.err
    inputs = sorted((wf.agents / "inputs").glob("*.stdin"))
    assert len(inputs) == 4  # plan, implement, two reviewers
    for path in inputs:
        document = json.loads(path.read_text())
        assert_valid(document, "stage-input")
        env = json.loads(path.with_suffix(".env").read_text())
        assert env["HARN_STAGE"] == document["stage"] and env["HARN_TASK_ID"] == "9.2"
        assert env["HARN_REPORT"] == document["report"]
        assert not document["report"].startswith(env["HARN_WORKTREE"])  # outside the worktree
        assert env["HARN_BASE"] == document["base"]["oid"]
        assert document["task"]["requires"] == ["0.9"]
        assert env.get("HARN_REVIEWER", "") == (str(document["reviewer"]) if document["reviewer"] else "")
        for name in ("HARN_WORKFLOW_ID", "HARN_TASK_TITLE", "HARN_ATTEMPT", "HARN_PROMPT"):
            assert env[name]
    review = json.loads((wf.agents / "inputs" / "9.2-review-1-2.stdin").read_text())
    assert review["earlier"]["plan"] == "plan for 9.2" and review["reviewer"] == 2


@pytest.mark.usefixtures("unsandboxed")  # it reads the agent's pid, its own PID namespace's under the sandbox
def test_stage_timeout_kills_the_agent_group(tmp_path: Path) -> None:
    from tests.kit.workflow_repo import config_text as text

    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 13.1 Hangs\n",
               config=text(agents, workflow="stageTimeout = 1\n"))
    wf.script({"plan": "hang"})
    done = wf.run("--json")
    assert done.code == 3
    task = done.json()["tasks"][0]
    assert (task["status"], task["stage"], task["fault"], task["faultKind"]) == (
        "infra-fault", "plan", "infra", "timeout")
    assert "timed out after 1s" in task["detail"]
    hanging = [e for e in wf.log() if e["event"] == "hanging"]
    assert hanging
    try:
        state = Path(f"/proc/{hanging[0]['pid']}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        state = "gone"
    assert state in ("gone", "Z", "X")  # the agent's process group was killed


def test_prompt_on_stdin_from_the_template_at_the_base(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    config = config_text(agents).replace('"plan"]\n', '"plan"]\nstdin = "prompt"\n', 1)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 13.2 Prompted\n", config=config,
               files={".harn/prompts/plan.md": "OUR PLAN TEMPLATE\n"})
    (wf.work / ".harn" / "prompts").mkdir(parents=True, exist_ok=True)
    (wf.work / ".harn" / "prompts" / "plan.md").write_text("A WORKING TREE EDIT\n")
    done = wf.run("--json")
    assert done.code == 0, done.err
    stdin = (wf.agents / "inputs" / "13.2-plan-1-0.stdin").read_text()
    assert stdin.startswith("OUR PLAN TEMPLATE")
    assert "A WORKING TREE EDIT" not in stdin
    assert '"title": "Prompted"' in stdin and "END UNTRUSTED TASK CONTEXT" in stdin
    implement = json.loads((wf.agents / "inputs" / "13.2-implement-1-0.stdin").read_text())
    assert implement["stage"] == "implement"  # the other stages still get JSON


def test_nothing_selectable_is_done(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [x] 14.1 Done\n- [ ] 14.2 Waits\n  Requires: 14.3\n- [ ] 14.3 W\n"
               "  Requires: 14.2\n")
    done = wf.run("--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert doc["tasks"] == [] and doc["summary"] == "0 tasks: nothing selectable"
    assert {s["reason"] for s in doc["skipped"]} == {"waiting-for-requirements"}


def test_a_failed_gate_reads_well_in_the_task_and_the_run(tmp_path: Path) -> None:
    """The command, its exit, and the end of its output cut at line
    boundaries, not the middle of a FAILED list (issue 23 item 8)."""
    agents = tmp_path / "agents"
    failing = json.dumps(["sh", "-c", "i=0; while [ $i -lt 300 ]; do echo \"FAILED tests/test_mod_$i.py::test_case"
                          " - AssertionError: assert 1 == 2\"; i=$((i+1)); done; echo '=== 300 failed in 1.25s ==='; "
                          "exit 1"])
    config = config_text(agents).replace('[["sh", "-c", "test ! -e broken"]]', f"[{failing}]")
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 8.1 Breaks the tests\n", config=config)
    doc = wf.run("--json").json()
    assert_valid(doc, "workflow-result")
    task = doc["tasks"][0]
    assert (task["status"], task["stage"]) == ("failed", "gates"), task["detail"]
    head, _, shown = task["detail"].partition(f" exited with 1 on {task['tip'][:12]}: ")
    assert head.startswith("gate sh -c 'i=0; while [ $i -lt 300 ]"), head  # the command as typed
    assert shown.startswith("FAILED tests/test_mod_") and shown.endswith(" | === 300 failed in 1.25s ===")
    assert all(part.startswith("FAILED tests/test_mod_") and part.endswith("assert 1 == 2")
               for part in shown.split(" | ")[:-1])
    gate = task["gates"]["commands"][0]
    kept = gate["outputTail"].splitlines()
    assert len(kept) == 10 and kept[-1] == "=== 300 failed in 1.25s ==="
    assert all(line.startswith("FAILED tests/test_mod_2") for line in kept[:-1])
    human = harn(wf.work, "workflow", "show").out
    assert "gate of 8.1 failed: sh -c 'i=0; while" in human and "(exit 1)" in human
    assert "  | === 300 failed in 1.25s ===" in human


@pytest.mark.parametrize(("raw", "why"), [
    (b'{"ok": true, "summary": "\\ud800"}', "summary holds a lone surrogate"),
    (b'{"ok": true, "summary": "s", "cost": NaN}', "NaN is not a JSON number"),
    (b'{"ok": true, "ok": false, "summary": "s"}', "duplicate key 'ok'"),
])
def test_a_stage_report_every_reader_would_not_read_alike_is_invalid(tmp_path: Path, raw: bytes, why: str) -> None:
    """Such a report could not be recorded as JSON, nor mean one thing to all [P5]."""
    from git_harn.workflow.agents.stages import read_report

    path = tmp_path / "r.report.json"
    path.write_bytes(raw)
    document, problem = read_report(path, "plan")
    assert document is None and problem.startswith("the report is not JSON (") and why in problem
