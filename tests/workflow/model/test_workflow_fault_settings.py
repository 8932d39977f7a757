"""The fault-handling settings: stageAttempts, schemaRetries,
assessPartialBranches, [agents.preflight] and [agents.assess]; flags over
the file; every bad one named with nothing created [P7] (issue 13)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.kit.harn import all_refs
from tests.kit.workflow_repo import setup

PY = json.dumps(sys.executable)
AGENTS = (f'[agents.plan]\ncommand = [{PY}, "x"]\n[agents.implement]\ncommand = [{PY}, "x"]\n'
          f'[agents.review]\ncommand = [{PY}, "x"]\n')
GATES = '[gates]\ncommands = [["true"]]\n'


@pytest.mark.parametrize(("text", "named"), [
    ("[workflow]\nstageAttempts = 0\n" + AGENTS + GATES, "workflow.stageAttempts"),
    ("[workflow]\nstageAttempts = 11\n" + AGENTS + GATES, "workflow.stageAttempts"),
    ("[workflow]\nschemaRetries = -1\n" + AGENTS + GATES, "workflow.schemaRetries"),
    ("[workflow]\nschemaRetries = true\n" + AGENTS + GATES, "workflow.schemaRetries"),
    ('[workflow]\nassessPartialBranches = "yes"\n' + AGENTS + GATES, "workflow.assessPartialBranches"),
    (AGENTS + "[agents.preflight]\ntimeout = 5\n" + GATES, "agents.preflight.command"),
    (AGENTS + '[agents.preflight]\ncommand = "check-auth"\n' + GATES, "agents.preflight.command"),
    (AGENTS + '[agents.preflight]\ncommands = ["check-auth"]\n' + GATES, "agents.preflight.commands"),
    (AGENTS + '[agents.preflight]\ncommand = ["a"]\nstdin = "json"\n' + GATES, "agents.preflight.stdin"),
    (AGENTS + '[agents.plan2]\ncommand = ["a"]\n' + GATES, "unknown setting agents.plan2"),
    (AGENTS + 'commands = [["a"]]\n' + GATES, "unknown setting agents.review.commands"),
    (AGENTS + "[agents.assess]\ntimeout = 3\n" + GATES, "agents.assess.command"),
])
def test_bad_fault_settings_are_named_and_nothing_is_created(tmp_path: Path, text: str, named: str) -> None:
    wf = setup(tmp_path, config=text)
    before = all_refs(wf.work)
    done = wf.run()
    assert done.code == 2, done.err
    assert named in done.err and done.err.count("\n") == 1, done.err
    assert all_refs(wf.work) == before


@pytest.mark.parametrize("flags", [("--stage-attempts", "0"), ("--stage-attempts", "11"),
                                   ("--schema-retries", "-1"), ("--stage-attempts", "x")])
def test_bad_fault_flags_are_usage_errors(tmp_path: Path, flags: tuple[str, str]) -> None:
    wf = setup(tmp_path)
    done = wf.run(*flags)
    assert done.code == 2 and flags[0] in done.err, done.err


def test_flags_override_the_file_and_the_defaults_are_shown(tmp_path: Path) -> None:
    text = ("[workflow]\nstageAttempts = 5\nschemaRetries = 0\nassessPartialBranches = false\n" + AGENTS + GATES
            + f'[agents.preflight]\ncommand = [{PY}, "-c", "pass"]\n')
    wf = setup(tmp_path, config=text)
    shown = wf.run("--dry-run", "--json").json()["settings"]
    assert (shown["stageAttempts"], shown["schemaRetries"], shown["assessPartialBranches"]) == (5, 0, False)
    flagged = wf.run("--dry-run", "--json", "--stage-attempts", "1", "--schema-retries", "4",
                     "--assess-partial-branches").json()
    assert (flagged["settings"]["stageAttempts"], flagged["settings"]["schemaRetries"],
            flagged["settings"]["assessPartialBranches"]) == (1, 4, True)
    assert flagged["agents"]["preflight"]["commands"] == [[sys.executable, "-c", "pass"]]
    plain = setup(tmp_path / "plain").run("--dry-run", "--json").json()["settings"]
    assert (plain["stageAttempts"], plain["schemaRetries"], plain["assessPartialBranches"]) == (3, 2, True)
