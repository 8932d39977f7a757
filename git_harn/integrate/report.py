"""The integration report [I2] and when to believe one [I3].

The report is what any integrator (``git harn integrate`` or an agent)
writes. It is only believed when all five of ``ok``, ``rebased``,
``squashMerged``, ``pushed`` and ``roadmapMarkedDone`` are true; a missing
one counts as false. The text in it is untrusted [P5]: it is validated and
quoted, never acted on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from git_harn.errors import BadInput
from git_harn.results import CheckResult, Result
from git_harn.schemas import schema_errors
from git_harn.tasks.config import Stage

if TYPE_CHECKING:
    from git_harn.integrate.target import Target

SCHEMA = "integration-report"
INTEGRATOR_REPORT = "integratorReport"  # what any integrator writes; the top level is git-harn's own report
STAGE = Stage.INTEGRATE
FIVE = ("ok", "rebased", "squashMerged", "pushed", "roadmapMarkedDone")
INCOMPLETE = "integration incomplete (need ok+rebased+squashMerged+pushed+roadmapMarkedDone)"

# What happened, for people and scripts; not one of the five.
LANDED = "landed"
ALREADY_INTEGRATED = "already-integrated"
CONFLICT = "conflict"
NEEDS_OPERATOR = "needs-operator"
PUSH_FAILED = "push-failed"
RETRIES_EXHAUSTED = "retries-exhausted"
NOTHING_TO_INTEGRATE = "nothing-to-integrate"
REFUSED = "refused"
PROPOSED = "proposed"  # workflow.land = pull-request: the squash waits in a request, nothing landed [F1]


@dataclass
class IntegrationReport(Result):
    SCHEMA: ClassVar[str] = "integration-report"

    taskId: str
    branch: str
    base: str
    remote: str
    ok: bool = False
    rebased: bool = False
    squashMerged: bool = False
    pushed: bool = False
    roadmapMarkedDone: bool = False
    conflicts: str = ""
    conflictPaths: list[str] = field(default_factory=list)
    summary: str = ""
    commit: str | None = None
    attempts: int = 0
    outcome: str = ""
    judged: str | None = None  # the commit that was judged, and the only one this integration lands [T4]
    rebasedTip: str | None = None  # its rebase onto the base, when the base had moved
    proposal: dict[str, Any] | None = None  # the request it waits in (outcome proposed) [F1]



def new_report(target: Target, attempts: int = 0, **fields: Any) -> IntegrationReport:
    """A report of ``target`` with ``fields`` set: outcomes are built, never patched."""
    return IntegrationReport(taskId=target.task_id, branch=target.branch, base=target.base,
                             remote=target.remote, attempts=attempts, **fields)


def check_integration(document: Any) -> CheckResult:
    """Schema first, then all five fields; the detail a halted task shows [I3]."""
    if not isinstance(document, dict):
        raise BadInput("an integration report must be a JSON object")
    errors = schema_errors(document, SCHEMA, INTEGRATOR_REPORT)  # nothing required: missing counts as false
    if errors:
        return CheckResult(False, STAGE, f"report does not match the {SCHEMA} schema: {errors[0]}")
    if all(document.get(name) is True for name in FIVE):
        return CheckResult(True, None, "all five of " + "+".join(FIVE) + " are true")
    return CheckResult(False, STAGE, halt_detail(document))


def halt_detail(document: dict[str, Any]) -> str:
    """The report's conflicts text if set, else its summary, else the generic line.

    "Set" is the word of [I3]: any non-empty string, even one of blanks, is
    what the integrator wrote and is shown as written."""
    for name in ("conflicts", "summary"):
        value = document.get(name)
        if isinstance(value, str) and value != "":
            return value
    return INCOMPLETE
