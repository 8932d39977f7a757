"""Integrate several task branches, one after another, in one process [I1].

Each branch is integrated exactly as ``git harn integrate <branch>`` would
(same attempts, report, note, crash marker), in the order given. Every
branch is validated before anything changes [P7]. The batch stops at the
first task that does not land cleanly: what follows a conflict or a refusal
was built on an assumption that no longer holds, so it is left for the
operator and named as not attempted.

The merge lock is taken once per task, not once for the batch: a sibling
integrator then waits for at most one task, so ``harn.mergeLockTimeout``
keeps its meaning, and a batch of many tasks cannot starve it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from git_harn.errors import BadInput, HarnError
from git_harn.git import Repo
from git_harn.integrate.land import integrate_target
from git_harn.integrate.report import IntegrationReport
from git_harn.integrate.target import Request, Target, resolve_target, slug
from git_harn.results import Result
from git_harn.text import jsonable

SCHEMA = "integration-batch"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class BatchError:
    """An error (not a report) that stopped the batch at ``branch``."""

    branch: str
    message: str
    exitCode: int


@dataclass
class BatchResult(Result):
    SCHEMA: ClassVar[str] = "integration-batch"

    reports: list[IntegrationReport] = field(default_factory=list)
    notAttempted: list[str] = field(default_factory=list)
    error: BatchError | None = None

    @property
    def exit_code(self) -> int:
        """The first non-zero task exit code (an error counts), else 0."""
        for report in self.reports:
            if report.exit_code != 0:
                return report.exit_code
        return self.error.exitCode if self.error is not None else 0

    def document(self) -> dict[str, Any]:
        """The ``--json`` document (``schemas/integration-batch.schema.json``)."""
        doc: dict[str, Any] = {"schemaVersion": SCHEMA_VERSION, "reports": [r.document() for r in self.reports],
                               "notAttempted": list(self.notAttempted)}
        if self.error is not None:
            doc["error"] = jsonable(self.error)
        return doc


def resolve_batch(repo: Repo, requests: Sequence[Request]) -> list[Target]:
    """Every branch checked, and none twice, before anything changes [P7]."""
    if not requests:
        raise BadInput("name at least one task branch")
    if len(requests) > 1:
        for option, given in (("--task", any(r.task_id is not None for r in requests)),
                              ("--resume-after-crash", any(r.resume_after_crash for r in requests))):
            if given:
                raise BadInput(f"{option} needs exactly one task branch")
    targets = [resolve_target(repo, request) for request in requests]
    seen: dict[str, str] = {}
    for target in targets:
        key = slug(target.task_id, target.addendum)
        if key in seen:
            raise BadInput(f"{target.branch} and {seen[key]} are the same task; name it once")
        seen[key] = target.branch
    return targets


def integrate_batch(repo: Repo, requests: Sequence[Request]) -> BatchResult:
    """Integrate each request in turn; stop at the first that does not land."""
    targets = resolve_batch(repo, requests)
    result = BatchResult()
    for index, (request, target) in enumerate(zip(requests, targets, strict=True)):
        try:
            report = integrate_target(repo, target, request.resume_after_crash)
        except HarnError as exc:  # shown with the reports so far, not instead of them
            result.error = BatchError(target.branch, exc.message, exc.exit_code)
            stopped = True
        else:
            result.reports.append(report)
            stopped = report.exit_code != 0
        if stopped:
            result.notAttempted = [later.branch for later in targets[index + 1:]]
            break
    return result


def integrate_branches(repo: Repo, requests: Sequence[Request]) -> IntegrationReport | BatchResult:
    """``git harn integrate``: one branch gives its report, several a batch."""
    if len(requests) == 1:
        return integrate_target(repo, resolve_batch(repo, requests)[0], requests[0].resume_after_crash)
    return integrate_batch(repo, requests)
