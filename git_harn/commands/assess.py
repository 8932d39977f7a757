"""assess, gates run, salvage-artefacts: judging surviving task branches [A1]-[A4]."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

import click

from git_harn.assess.artefacts import SALVAGE_CLASSIFICATIONS, SalvageResult, salvage
from git_harn.assess.assessor import AssessResult, assess_branch
from git_harn.assess.gates import GatesResult, gates_run
from git_harn.commands.common import json_option, repository
from git_harn.commands.render import show
from git_harn.errors import BadInput
from git_harn.files import read_json_input
from git_harn.proc import exit_status
from git_harn.text import clip, last_lines, one_line, printable_path


@click.command()
@click.argument("branch")
@click.option("--base", metavar="REV", help="Judge against this revision (default: harn.base, else main).")
@click.option("--task", "task_id", metavar="ID", help="The task id (default: from roadmap-<id>).")
@click.option("--assessor", metavar="builtin|COMMAND",
              help="builtin, or a command that reads evidence JSON and prints an assessment.")
@json_option
@click.option("--record", is_flag=True, help="Attach the assessment to the tip as a note.")
def assess(branch: str, base: str | None, task_id: str | None, assessor: str | None,
           as_json: bool, record: bool) -> int:
    """Judge a task branch: adopt-complete, adopt-partial, continue-manual or discard.

    Report-only: changes nothing except, with --record, the note on the tip.
    """
    return show(assess_branch(repository(), branch, base, task_id, assessor, record), as_json, _assessment_lines)


def _assessment_lines(result: AssessResult) -> Iterator[str]:
    doc = result.assessment
    ev = doc["evidence"]
    task = f"task {doc['taskId']}" if doc["taskId"] else "no task id"
    yield f"{doc['branch']}: {doc['classification']} ({task}, {doc['assessor']['kind']} assessor)"
    yield f"  reasons   {', '.join(doc['reasons'])}"
    assessor = doc["assessor"]
    for error in assessor.get("errors") or []:  # every attempt the external assessor got wrong
        yield f"  assessor  {one_line(str(error), 300)}"
    if assessor.get("fault"):
        yield f"  assessor  {one_line(str(assessor['fault']), 300)}"
    for label, items in (("missing", doc["missingEvidence"]), ("risk", doc["residualRisk"])):
        for item in items:
            yield f"  {label:<9} {item}"
    if ev.get("ahead") is not None:
        yield f"  tip       {ev['tip'][:12]} ({ev['ahead']} ahead, {ev['behind']} behind {ev['base']['rev']})"
    if ev.get("worktree"):
        dirty = ev["worktree"]["dirtyCount"]
        yield f"  worktree  {printable_path(ev['worktree']['path'])} ({dirty} dirty)"
    if ev.get("execPlan") and ev["execPlan"]["path"]:
        plan = ev["execPlan"]
        yield f"  execplan  {plan['path']}: {plan['status'] or plan['worktreeStatus'] or 'no status'}"
    yield f"  gates     {_gates_word(ev)} on the tip"


def _gates_word(ev: dict[str, Any]) -> str:
    gates = ev.get("validation")
    if gates is not None:
        return "passed" if gates["passed"] else "failed"
    return "unverified here (not believed)" if ev.get("validationUnverified") else "none recorded"


@click.group()
def gates() -> None:
    """Validation evidence: gate commands run on a branch tip."""


@gates.command("run")
@click.argument("branch")
@click.option("--base", metavar="REV",
              help="Read the gate commands from this revision (default: harn.base, else main).")
@click.option("--timeout", type=float, metavar="SECONDS",
              help="Time limit per command (default: harn.gateTimeout, else 900).")
@json_option
def gates_run_command(branch: str, base: str | None, timeout: float | None, as_json: bool) -> int:
    """Run the gates on BRANCH's tip and note the outcome on that commit.

    Exit 0 when every gate passed, 3 when one failed.
    """
    return show(gates_run(repository(), branch, base, timeout), as_json, _gates_lines)


def _gates_lines(result: GatesResult) -> Iterator[str]:
    yield (f"gates {'passed' if result.passed else 'FAILED'} on {result.branch} at {result.commit[:12]} "
           f"({result.where} checkout; commands from {result.source})")
    for gate in result.commands:
        outcome = gate.error or exit_status(gate.exitCode)
        yield f"  {outcome:<17} {gate.seconds:7.2f}s  {clip(shlex.join(gate.argv), 150)}"
        if gate.exitCode != 0:  # the end of its output says why
            yield from (f"      | {line}" for line in last_lines(gate.outputTail))


@click.command("salvage-artefacts")
@click.argument("branch")
@click.option("--classification", type=click.Choice(SALVAGE_CLASSIFICATIONS),
              help="The branch's classification (or infra-fault).")
@click.option("--assessment", "assessment_source", metavar="FILE|-", help="An assessment JSON document.")
@click.option("--worktree", metavar="PATH", help="The branch's worktree (default: where it is checked out).")
@json_option
def salvage_artefacts(branch: str, classification: str | None, assessment_source: str | None,
                      worktree: str | None, as_json: bool) -> int:
    """Commit the dirty ExecPlans of BRANCH onto it, as the machine identity.

    Always exits 0 when it ran, whether it committed or skipped.
    """
    assessment = read_json_input(assessment_source) if assessment_source else None
    if assessment is not None and not isinstance(assessment, dict):
        raise BadInput("the assessment must be a JSON object")
    return show(salvage(repository(), branch, classification, assessment, worktree), as_json, _salvage_lines)


def _salvage_lines(result: SalvageResult) -> Iterator[str]:
    if result.committed:
        assert result.sha is not None
        yield f"salvaged ExecPlans onto {result.branch} at {result.sha[:12]} ({result.classification})"
    else:
        yield f"{'skipped' if result.skipped else 'nothing committed'} on {result.branch} ({result.classification})"
    yield f"  {result.detail}"
