"""A run's spending limit (issue 47 item 3): ``--max-cost-usd`` and
``workflow.maxCostUsd``, the cost of each stage run summed as it ends,
``[prices.<model>]`` for agents that report tokens only, the halt at the
limit that loses no work, and the relaunch its advice names."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from git_harn.errors import BadInput
from git_harn.tasks.config import Price, parse_toml, workflow_settings
from git_harn.workflow.agents.spend import priced
from git_harn.workflow.model.state import Where, budget_advice
from git_harn.workflow.run.notify import halt_reason
from tests.kit.adapter_fakes import PLAN_OK, claude_init, claude_result, codex_ok, fake_cli_env
from tests.kit.harn import assert_valid, git, harn, make_repo
from tests.kit.workflow_repo import WF, setup

APPROVE = {"verdict": "approve", "summary": "fine", "findings": []}
ROADMAP = "# R\n\n- [ ] 9.1 First\n- [ ] 9.2 Second\n- [ ] 9.3 Third\n"


def config(review: str = 'adapter = "claude"', workflow: str = "", extra: str = "") -> str:
    return (f"[workflow]\nstageTimeout = 60\n{workflow}\n"
            '[agents.plan]\nadapter = "claude"\n\n[agents.implement]\nadapter = "claude"\n\n'
            f"[agents.review]\n{review}\n\n[agents.integrate]\ncommand = \"builtin\"\n\n"
            '[gates]\ncommands = [["sh", "-c", "true"]]\n' + extra)


def scenario(calls: Path, plan: float = 1.0, implement: float = 1.0, review: float = 0.5,
             codex_review: bool = False) -> None:
    """Every plan and implement run costs what is given; each of the two reviewers ``review``."""
    (calls / "scenario.json").write_text(json.dumps({
        "stage:plan": [claude_init(), {"work": "plan"}, claude_result(PLAN_OK, cost=plan)],
        "stage:implement": [claude_init(), {"work": "implement"},
                            claude_result({"ok": True, "summary": "built"}, cost=implement)],
        "stage:review": codex_ok(APPROVE) if codex_review else [claude_init(), claude_result(APPROVE, cost=review)],
    }))


def stages_run(calls: Path) -> list[tuple[str, str]]:
    """(task, stage) of every agent run, in the order they started."""
    found = sorted((calls / "calls").glob("*.json"), key=lambda p: int(p.stem))
    runs = [json.loads(p.read_text())["env"] for p in found]
    return [(env["HARN_TASK_ID"], env["HARN_STAGE"]) for env in runs]


def show(wf: WF, workflow_id: str) -> dict[str, Any]:
    done = harn(wf.work, "workflow", "show", workflow_id, "--json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def next_command(out: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith("next: ")]
    assert len(lines) == 1, out
    return lines[0].removeprefix("next: ")


def test_a_limit_reached_mid_run_stops_new_stages_at_the_crossing_keeps_the_work_and_the_advice_goes_on(
        tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    scenario(calls)
    wf = setup(tmp_path, roadmap=ROADMAP, config=config())
    first = wf.run("--max-cost-usd", "4", env=env)
    assert first.code == 3, (first.out, first.err)
    # 9.1: plan $1, implement $1, two reviewers $0.50 each, lands ($3); 9.2: plan $1 reaches $4: nothing after it
    assert stages_run(calls) == [("9.1", "plan"), ("9.1", "implement"), ("9.1", "review"), ("9.1", "review"),
                                 ("9.2", "plan")]
    workflow_id = first.out.split()[1]
    doc = show(wf, workflow_id)
    assert_valid(doc, "workflow-result")
    by_id = {t["taskId"]: t for t in doc["tasks"]}
    assert by_id["9.1"]["status"] == "done"
    halted = by_id["9.2"]
    assert (halted["status"], halted["stage"], halted["faultKind"]) == ("halted", "implement", "budget"), halted
    assert "spending limit ($4.00) was reached before implement" in halted["detail"]
    assert halted["usage"]["costUsd"] == 1.0 and halted["usage"]["stages"] == {
        "plan": {"costUsd": 1.0, "runs": 1, "unknownRuns": 0}}
    assert by_id["9.1"]["usage"]["stages"]["review"] == {"costUsd": 1.0, "runs": 2, "unknownRuns": 0}
    # no work lost: the plan 9.2 paid for is on its branch
    assert "plan 9.2 by claude" in git(wf.work, "log", "--format=%s", "roadmap-9.2")
    assert [(s["taskId"], s["reason"]) for s in doc["skipped"]] == [("9.3", "budget")]
    spending = doc["breakers"]["spending"]
    assert spending == {"limitUsd": 4.0, "spentUsd": 4.0, "hard": False, "runs": 5, "unknownRuns": 0,
                        "reached": {"taskId": "9.2", "stage": "plan", "spentUsd": 4.0}}
    assert doc["usage"]["costUsd"] == 4.0
    assert doc["halted"].startswith("spending limit reached: $4.00 spent of $4.00 (at plan of task 9.2)")
    # measured cost per task and per stage: show, list and the page
    shown = harn(wf.work, "workflow", "show", workflow_id).out
    assert "cost of 9.1: plan $1.00, implement $1.00, review $1.00" in shown
    assert "cost of 9.2: plan $1.00" in shown and "cost of the run: $4.00" in shown
    assert "spent $4.00 of the $4.00 limit, reached at plan of task 9.2" in shown
    header = next(line for line in shown.splitlines() if line.startswith("TASK"))
    row = next(line for line in shown.splitlines() if line.startswith("9.1 "))
    assert "COST" in header and row[header.index("COST"):].startswith("$3.00")
    listed = harn(wf.work, "workflow", "list")
    row = next(line for line in listed.out.splitlines() if line.startswith(workflow_id))
    assert "$4.00" in row, listed.out
    listing = json.loads(harn(wf.work, "workflow", "list", "--json").out)
    assert_valid(listing, "workflow-list")
    assert listing["workflows"][0]["usage"]["costUsd"] == 4.0
    page = tmp_path / "page.html"
    assert harn(wf.work, "workflow", "report", workflow_id, "--output", str(page)).code == 0
    html = page.read_text()
    assert "spent $4.00 of the $4.00 limit" in html and "plan $1.00, implement $1.00, review $1.00" in html
    command = next_command(first.out)
    assert command == ("git harn workflow run --resume-partial-branches --resume-mode continue "
                       "--max-cost-usd 8")
    # the advice, run exactly as printed: 9.2 goes on from its plan, 9.3 runs, everything lands
    words = shlex.split(command)
    assert words[:2] == ["git", "harn"]
    second = harn(wf.work, *words[2:], env=env)
    assert second.code == 0, (second.out, second.err)
    assert "next: " + command not in second.out
    assert "- [x] 9.1" in wf.remote_file("docs/roadmap.md") and "- [x] 9.2" in wf.remote_file("docs/roadmap.md")
    assert "- [x] 9.3" in wf.remote_file("docs/roadmap.md")
    again = stages_run(calls)[5:]
    assert ("9.2", "plan") not in again and again.count(("9.2", "implement")) == 1  # resumed, not started afresh
    assert again.count(("9.3", "plan")) == 1


def test_the_limit_in_the_configuration_and_prices_for_codex(tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    scenario(calls, plan=0.25, implement=0.25, codex_review=True)
    # codex reports 2000 input tokens (500 of them cached) and 300 output tokens a reviewer
    prices = '[prices.codex]\ninput = 100\ncached = 10\noutput = 1000\n'
    wf = setup(tmp_path, roadmap=ROADMAP, config=config('adapter = "codex"', "maxCostUsd = 1.5\n", prices))
    done = wf.run("--json", env=env)
    doc = json.loads(done.out)
    assert done.code == 3, (done.err, doc["tasks"])
    assert_valid(doc, "workflow-result")
    reviewer = (1500 * 100 + 500 * 10 + 300 * 1000) / 1_000_000  # 0.455 each
    task = doc["tasks"][0]
    assert task["usage"]["stages"]["review"]["costUsd"] == pytest.approx(2 * reviewer)
    assert task["usage"]["costUsd"] == pytest.approx(0.5 + 2 * reviewer)  # 1.41: under the limit, goes on
    # 9.2's plan reaches 1.66 >= 1.5: its implement never starts
    assert stages_run(calls)[-1] == ("9.2", "plan")
    assert doc["breakers"]["spending"]["limitUsd"] == 1.5
    assert doc["breakers"]["spending"]["reached"]["stage"] == "plan"
    assert doc["settings"]["maxCostUsd"] == 1.5


def test_unknown_costs_are_said_and_never_counted_as_nothing(tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    scenario(calls, codex_review=True)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 Only\n", config=config('adapter = "codex"'))
    done = wf.run("--json", "--max-cost-usd", "100", env=env)
    doc = json.loads(done.out)
    assert done.code == 0, (done.err, doc["tasks"])
    assert "the cost of these stages is unknown and not counted: review (codex reports tokens only and " \
           "[prices.codex] is not set)" in done.err
    task = doc["tasks"][0]
    assert task["usage"]["stages"]["review"] == {"costUsd": None, "runs": 2, "unknownRuns": 2}
    assert task["usage"]["unknownRuns"] == 2 and task["usage"]["costUsd"] == 2.0
    assert doc["breakers"]["spending"]["unknownRuns"] == 2 and doc["breakers"]["spending"]["spentUsd"] == 2.0
    shown = harn(wf.work, "workflow", "show").out
    assert "cost of 9.1: plan $1.00, implement $1.00, review unknown" in shown
    assert "cost of the run: $2.00 + 2 runs unknown" in shown
    assert "2 stage run(s) of unknown cost not counted" in shown


def test_prices_and_limits_are_checked() -> None:
    def settings(text: str) -> Any:
        return workflow_settings(parse_toml(text.encode(), "t"), "t")

    parsed = settings('[workflow]\nmaxCostUsd = 20\n[prices.gpt-5]\ninput = 1.25\ncached = 0.125\noutput = 10\n')
    assert parsed.maxCostUsd == 20.0 and parsed.prices == {"gpt-5": Price(1.25, 0.125, 10.0)}
    for text, message in [("[workflow]\nmaxCostUsd = 0\n", "workflow.maxCostUsd must be a positive amount"),
                          ("[prices.x]\ninput = 1\ncached = 1\n", "missing setting prices.x.output"),
                          ("[prices.x]\ninput = 1\ncached = 1\noutput = -1\n", "prices.x.output must be"),
                          ("[prices.x]\ninput = 1\ncached = 1\noutput = 1\nper = 2\n", "unknown setting prices.x.per"),
                          ("prices = 3\n", "setting prices must be a table")]:
        with pytest.raises(BadInput) as caught:
            settings(text)
        assert message in caught.value.message, (text, caught.value.message)


@pytest.mark.parametrize(("flags", "message"), [
    (("--max-cost-usd", "0"), "--max-cost-usd must be a positive amount"),
    (("--max-cost-usd", "nan"), "--max-cost-usd must be a positive amount"),
    (("--hard-limit",), "--hard-limit needs a spending limit"),
])
def test_bad_limit_flags_are_one_line_errors_that_change_nothing(tmp_path: Path, flags: tuple[str, ...],
                                                                 message: str) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP, config=config())
    before = git(wf.work, "for-each-ref")
    done = wf.run(*flags)
    assert done.code != 0
    assert done.err.count("\n") == 1 and done.err.startswith("git harn: error: ") and message in done.err, done.err
    assert git(wf.work, "for-each-ref") == before


def test_the_price_of_tokens_and_the_advice_are_one_function_each() -> None:
    run = {"adapter": "codex", "usage": {"inputTokens": 2_000_000, "cachedInputTokens": 1_000_000,
                                         "outputTokens": 500_000}}
    assert priced(run, Price(2.0, 0.5, 8.0)) == 2.0 + 0.5 + 4.0
    assert priced({**run, "adapter": "claude"}, Price(2.0, 0.5, 8.0)) == 4.0 + 0.5 + 4.0  # cached counted apart
    assert priced(run, None) is None
    step = budget_advice(2.5, 2.75, Where("origin", "main", ("--base", "main")), survivors=False)
    assert step.command == "git harn workflow run --base main --max-cost-usd 5"
    assert "$2.75 of its $2.50 limit" in step.why


def test_a_hard_limit_stops_the_stage_still_running_at_the_crossing(tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    (calls / "scenario.json").write_text(json.dumps({
        # 9.1's plan costs $5 after 9.2's plan has begun; 9.2's would run for a minute
        "task:9.1:stage:plan": [claude_init(), {"work": "plan"}, {"sleep": 3}, claude_result(PLAN_OK, cost=5.0)],
        "task:9.2:stage:plan": [claude_init(), {"sleep": 60}, claude_result(PLAN_OK, cost=5.0)],
    }))
    wf = setup(tmp_path, roadmap=ROADMAP, config=config())
    started = time.monotonic()
    done = wf.run("--json", "--parallel", "2", "--max-cost-usd", "1", "--hard-limit", env=env)
    took = time.monotonic() - started
    doc = json.loads(done.out)
    assert done.code == 3, (done.err, doc["tasks"])
    assert_valid(doc, "workflow-result")
    assert took < 40, took  # the sleeping plan was stopped, not waited for
    by_id = {t["taskId"]: t for t in doc["tasks"]}
    stopped = by_id["9.2"]
    assert (stopped["status"], stopped["stage"], stopped["faultKind"]) == ("halted", "plan", "budget"), stopped
    assert stopped["detail"].startswith("the run's spending limit was reached (--hard-limit): ")
    assert (by_id["9.1"]["status"], by_id["9.1"]["faultKind"]) == ("halted", "budget")
    assert "plan 9.1 by claude" in git(wf.work, "log", "--format=%s", "roadmap-9.1")  # its paid work stays
    assert doc["breakers"]["spending"]["hard"] is True and doc["breakers"]["spending"]["spentUsd"] == 5.0
    assert [(s["taskId"], s["reason"]) for s in doc["skipped"]] == [("9.3", "budget")]
    assert doc["interrupted"] is False and doc["halted"].startswith("spending limit reached: $5.00 spent of $1.00")
    assert doc["next"]["command"].endswith("--max-cost-usd 2")


def test_under_a_hard_limit_each_claude_session_may_spend_at_most_what_is_left(tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    scenario(calls)  # $1 a plan, $1 an implement, $0.50 a reviewer
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 Only\n", config=config(workflow="maxCostUsd = 10\n"))
    done = wf.run("--json", "--hard-limit", env=env)
    assert done.code == 0, done.err
    found = sorted((calls / "calls").glob("*.json"), key=lambda p: int(p.stem))
    budgets = [(call["env"]["HARN_STAGE"], call["argv"][call["argv"].index("--max-budget-usd") + 1])
               for call in map(lambda p: json.loads(p.read_text()), found)]
    # what was left as each stage started: 10, then 9 after the plan, then 8 for both reviewers
    assert budgets == [("plan", "10"), ("implement", "9"), ("review", "8"), ("review", "8")]


def test_the_starter_shows_the_limit_and_a_codex_price_table_that_read_once_uncommented(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    done = harn(repo, "workflow", "init", "--agent", "codex")
    assert done.code == 0, done.err
    text = (repo / ".harn" / "workflow.toml").read_text()
    for line in ("# maxCostUsd = 20", "# [prices.codex]", "# input = 1.25", "# cached = 0.125", "# output = 10"):
        assert line in text, line
        text = text.replace(line, line.removeprefix("# "))
    parsed = workflow_settings(parse_toml(text.encode(), "t"), "t")
    assert parsed.maxCostUsd == 20.0 and parsed.prices == {"codex": Price(1.25, 0.125, 10.0)}


def test_a_stage_running_at_the_crossing_finishes_and_is_counted_without_a_hard_limit(tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    (calls / "scenario.json").write_text(json.dumps({
        "task:9.1:stage:plan": [claude_init(), {"work": "plan"}, claude_result(PLAN_OK, cost=5.0)],
        "task:9.2:stage:plan": [claude_init(), {"sleep": 4}, {"work": "plan"}, claude_result(PLAN_OK, cost=1.0)],
    }))
    wf = setup(tmp_path, roadmap=ROADMAP, config=config())
    done = wf.run("--json", "--parallel", "2", "--max-cost-usd", "1", env=env)
    doc = json.loads(done.out)
    assert done.code == 3, (done.err, doc["tasks"])
    by_id = {t["taskId"]: t for t in doc["tasks"]}
    # 9.2's plan was running when 9.1's crossed the limit: it finished, was counted, and its work kept
    assert by_id["9.2"]["usage"]["stages"]["plan"] == {"costUsd": 1.0, "runs": 1, "unknownRuns": 0}
    assert "plan 9.2 by claude" in git(wf.work, "log", "--format=%s", "roadmap-9.2")
    assert {(t, by_id[t]["stage"], by_id[t]["faultKind"]) for t in by_id} == {
        ("9.1", "implement", "budget"), ("9.2", "implement", "budget")}
    assert doc["breakers"]["spending"]["spentUsd"] == 6.0 and doc["breakers"]["spending"]["reached"]["spentUsd"] == 5.0
    assert stages_run(calls).count(("9.1", "plan")) == 1 and len(stages_run(calls)) == 2  # nothing started after


def test_a_negative_cost_an_agent_reports_is_never_subtracted(tmp_path: Path) -> None:
    """A hostile agent CLI says each plan cost -$1000, to buy room under the
    limit: the run counts that cost unknown (never $0, never below), the
    others as they come, and stops at the limit all the same."""
    env, calls = fake_cli_env(tmp_path)
    scenario(calls, plan=-1000.0)
    wf = setup(tmp_path, roadmap=ROADMAP, config=config())
    done = wf.run("--json", "--max-cost-usd", "2", env=env)
    doc = json.loads(done.out)
    assert done.code == 3, (done.err, doc["tasks"])
    assert stages_run(calls) == [("9.1", "plan"), ("9.1", "implement"), ("9.1", "review"), ("9.1", "review")]
    spending = doc["breakers"]["spending"]
    assert (spending["spentUsd"], spending["unknownRuns"]) == (2.0, 1), spending
    assert doc["tasks"][0]["usage"]["stages"]["plan"] == {"costUsd": None, "runs": 1, "unknownRuns": 1}


def test_a_token_count_too_large_for_a_float_is_counted_never_a_crash(tmp_path: Path) -> None:
    """A hostile agent CLI (codex, priced by its tokens) says a reviewer read
    10**400 input tokens, a number no float holds: the run neither crashes
    nor counts it as nothing; it is a cost past any limit, and the limit stops the run."""
    from tests.kit.adapter_fakes import codex_completed

    env, calls = fake_cli_env(tmp_path)
    scenario(calls, plan=0.25, implement=0.25, codex_review=True)
    doc = json.loads((calls / "scenario.json").read_text())
    huge = codex_completed()
    huge["event"]["usage"]["input_tokens"] = 10 ** 400
    doc["stage:review"] = [huge if step == codex_completed() else step for step in doc["stage:review"]]
    (calls / "scenario.json").write_text(json.dumps(doc))
    prices = '[prices.codex]\ninput = 100\ncached = 10\noutput = 1000\n'
    wf = setup(tmp_path, roadmap=ROADMAP, config=config('adapter = "codex"', "maxCostUsd = 1000\n", prices))
    done = wf.run("--json", env=env)
    assert done.code == 3, (done.err, done.out[-1500:])
    result = json.loads(done.out)
    assert_valid(result, "workflow-result")
    assert [t["status"] for t in result["tasks"]] == ["done"], [(t["status"], t["detail"]) for t in result["tasks"]]
    reached = result["breakers"]["spending"]["reached"]
    assert (reached["taskId"], reached["stage"]) == ("9.1", "review"), reached
    assert result["breakers"]["spending"]["spentUsd"] >= 1000
    assert ("9.2", "plan") not in stages_run(calls)


def test_a_limit_reached_by_the_last_stage_the_run_needed_stops_nothing_and_the_run_finishes(
        tmp_path: Path) -> None:
    """The one task costs exactly the limit: the limit is reached at its last
    review, after which no stage was wanted. Nothing was halted or left out,
    so the run finished (exit 0), with no halt and no relaunch to advise."""
    env, calls = fake_cli_env(tmp_path)
    scenario(calls)  # $1 a plan, $1 an implement, $0.50 a reviewer: $3
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 9.1 Only\n", config=config())
    done = wf.run("--json", "--max-cost-usd", "3", env=env)
    doc = json.loads(done.out)
    assert done.code == 0, (done.err, doc["halted"], doc["next"])
    assert_valid(doc, "workflow-result")
    assert doc["tasks"][0]["status"] == "done"
    assert doc["halted"] is None and doc["next"] is None and doc["outcome"] == "workflow-done"
    assert doc["breakers"]["spending"]["reached"] == {"taskId": "9.1", "stage": "review", "spentUsd": 3.0}
    assert "spent $3.00 of the $3.00 limit, reached at review of task 9.1" in harn(wf.work, "workflow", "show").out
    assert halt_reason(doc) == (None, None)  # a notifier is told run-finished
