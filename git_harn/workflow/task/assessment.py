"""Assessment and artefact salvage of failed tasks, inside the run [R4]
([A1]-[A4]).

When a task fails or halts after its worktree exists, and
``assessPartialBranches`` is true (the default), the host judges the
surviving branch read-only before cleanup: the builtin assessor, or
``[agents.assess]`` as an external assessor [A3] (evidence JSON on stdin, an
assessment JSON on stdout, validated, invalid output retried
``harn.assessorRetries`` times). The verdict is noted on the tip and kept as
the task's ``assessment``. Then the dirty ExecPlans are salvaged onto the
task branch exactly as ``git harn salvage-artefacts`` does [A4]: after
``adopt-partial`` and ``continue-manual``, skipped (and said so) after the
other verdicts; the task's ``salvage`` says which.

Not assessed: provider and auth faults, ``infra-fault`` (salvaged with that
classification instead, no assessor spawned), tasks halted by an
interruption, worktree-creation failures (never called), dry runs, tasks
that landed, and any status this module does not know (``manual-merge-ready``).
Nothing here merges, pushes, ticks a box or raises: a failure to judge is
kept in the result and cleanup still runs.
"""

from __future__ import annotations

from typing import Any

from git_harn.assess import artefacts
from git_harn.assess.assessor import DEFAULT_RETRIES, DEFAULT_TIMEOUT, MAX_RETRIES, ExternalAssessor, assess
from git_harn.assess.evidence import collect
from git_harn.errors import HarnError
from git_harn.git import Repo, to_oid
from git_harn.store.notes import merge_note
from git_harn.tasks.config import Stage
from git_harn.text import jsonable, one_line
from git_harn.workflow.model.config import Effective
from git_harn.workflow.model.result import TaskResult, WorkflowResult
from git_harn.workflow.model.state import Ending

SALVAGE_MEMBERS = ("classification", "committed", "skipped", "sha", "detail")


def before_cleanup(repo: Repo, eff: Effective, tr: TaskResult, ending: Ending, stopping: bool) -> str:
    """Judge and salvage a task that did not land; the caller cleans up
    after. Returns what to add to the detail ("" when nothing went wrong)."""
    if not eff.assessPartialBranches or stopping:
        return ""
    if ending.state.salvaged_as_infra:
        tr.salvage = _salvage(repo, tr, artefacts.INFRA_FAULT, None)
    elif ending.assessable:
        tr.assessment, problem = _assess(repo, eff, tr)
        if tr.assessment is not None:
            tr.salvage = _salvage(repo, tr, None, tr.assessment)
        return problem
    return ""


def _assess(repo: Repo, eff: Effective, tr: TaskResult) -> tuple[dict[str, Any] | None, str]:
    try:
        evidence = collect(repo, tr.branch, eff.upstream, tr.taskId)
        judged = assess(evidence, external(repo, eff))
        merge_note(repo, to_oid(evidence.tip), "assessment", judged)
    except (HarnError, OSError) as exc:
        return None, f" (not assessed: {one_line(str(exc), 200)})"
    return judged, ""


def external(repo: Repo, eff: Effective) -> ExternalAssessor | None:
    """``[agents.assess]`` as an external assessor [A3]; None: the builtin."""
    agent = eff.agents.get(Stage.ASSESS)
    if agent is None or agent.command is None:
        return None
    retries = repo.config_int("harn.assessorRetries", DEFAULT_RETRIES)
    retries = min(max(retries, 0), MAX_RETRIES)
    timeout = agent.timeout or float(repo.config_int("harn.assessorTimeout", DEFAULT_TIMEOUT))
    return ExternalAssessor(list(agent.command), retries, timeout, repo.workdir or repo.common_dir, agent.secrets,
                            eff.sandbox)


def _salvage(repo: Repo, tr: TaskResult, classification: str | None,
             assessment: dict[str, Any] | None) -> dict[str, Any]:
    try:
        done = artefacts.salvage(repo, tr.branch, classification, assessment, None)
    except (HarnError, OSError) as exc:
        chosen = classification or str((assessment or {}).get("classification"))
        return {"classification": chosen, "committed": False, "skipped": True, "sha": None,
                "detail": f"skipped: {one_line(str(exc), 200)}", "paths": []}
    shown: dict[str, Any] = jsonable(done)
    return {**{key: shown[key] for key in SALVAGE_MEMBERS}, "paths": shown["paths"]}


def summarise(result: WorkflowResult) -> None:
    """The top-level ``assessments`` and ``salvages`` arrays, from the tasks."""
    result.assessments = [
        {"taskId": t.taskId, "branch": t.branch, "status": t.status,
         "classification": t.assessment["classification"], "reasons": list(t.assessment["reasons"]),
         "missingEvidence": list(t.assessment["missingEvidence"]),
         "residualRisk": list(t.assessment["residualRisk"])}
        for t in result.tasks if t.assessment is not None]
    result.salvages = [{"taskId": t.taskId, "branch": t.branch, **t.salvage}
                       for t in result.tasks if t.salvage is not None]

