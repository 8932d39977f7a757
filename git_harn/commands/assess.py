"""assess, gates run, salvage-artefacts: judging surviving task branches [A1]-[A4]."""

from __future__ import annotations

from typing import Any

import click
import pygit2

from git_harn.assess.artefacts import SALVAGE_CLASSIFICATIONS, SalvageResult, salvage
from git_harn.assess.assessor import assess as judge
from git_harn.assess.assessor import external_assessor
from git_harn.assess.evidence import collect
from git_harn.assess.gates import GatesResult, gate_timeout, run_gates
from git_harn.commands.common import json_option, repository
from git_harn.commands.render import emit_json
from git_harn.commands.report import read_json_input
from git_harn.errors import BadInput
from git_harn.store import notes
from git_harn.tasks.branches import resolve_base, resolve_branch
from git_harn.text import printable_path


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
    repo = repository()
    external = external_assessor(repo, assessor)
    evidence = collect(repo, branch, base, task_id)
    assessment = judge(evidence, external)
    if record:
        notes.merge_note(repo, pygit2.Oid(hex=evidence.tip), "assessment", assessment)
    if as_json:
        emit_json(assessment)
    else:
        _show_assessment(assessment)
    return 0


def _show_assessment(doc: dict[str, Any]) -> None:
    ev = doc["evidence"]
    task = f"task {doc['taskId']}" if doc["taskId"] else "no task id"
    click.echo(f"{doc['branch']}: {doc['classification']} ({task}, {doc['assessor']['kind']} assessor)")
    click.echo(f"  reasons   {', '.join(doc['reasons'])}")
    for label, items in (("missing", doc["missingEvidence"]), ("risk", doc["residualRisk"])):
        for item in items:
            click.echo(f"  {label:<9} {item}")
    if ev.get("ahead") is not None:
        click.echo(f"  tip       {ev['tip'][:12]} ({ev['ahead']} ahead, {ev['behind']} behind {ev['base']['rev']})")
    if ev.get("worktree"):
        dirty = ev["worktree"]["dirtyCount"]
        click.echo(f"  worktree  {printable_path(ev['worktree']['path'])} ({dirty} dirty)")
    if ev.get("execPlan") and ev["execPlan"]["path"]:
        plan = ev["execPlan"]
        click.echo(f"  execplan  {plan['path']}: {plan['status'] or plan['worktreeStatus'] or 'no status'}")
    gates = ev.get("validation")
    click.echo(f"  gates     {'none recorded' if gates is None else 'passed' if gates['passed'] else 'failed'}"
               " on the tip")


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
def gates_run(branch: str, base: str | None, timeout: float | None, as_json: bool) -> int:
    """Run the gates on BRANCH's tip and note the outcome on that commit.

    Exit 0 when every gate passed, 3 when one failed.
    """
    repo = repository()
    result = run_gates(repo, resolve_branch(repo, branch), resolve_base(repo, base), gate_timeout(repo, timeout))
    if as_json:
        emit_json(result)
    else:
        _show_gates(result)
    return 0 if result.passed else 3


def _show_gates(result: GatesResult) -> None:
    click.echo(f"gates {'passed' if result.passed else 'FAILED'} on {result.branch} at {result.commit[:12]} "
               f"({result.where} checkout; commands from {result.source})")
    for gate in result.commands:
        outcome = gate.error or f"exit {gate.exitCode}"
        click.echo(f"  {outcome:<12} {gate.seconds:7.2f}s  {' '.join(gate.argv)}")


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
    result = salvage(repository(), branch, classification, assessment, worktree)
    if as_json:
        emit_json(result)
    else:
        _show_salvage(result)
    return 0


def _show_salvage(result: SalvageResult) -> None:
    if result.committed:
        assert result.sha is not None
        click.echo(f"salvaged ExecPlans onto {result.branch} at {result.sha[:12]} ({result.classification})")
    else:
        click.echo(f"{'skipped' if result.skipped else 'nothing committed'} on {result.branch} "
                   f"({result.classification})")
    click.echo(f"  {result.detail}")
