"""Checks behind ``git harn report check <kind>``: is a report to be believed?

Each kind maps to a function that takes the parsed JSON document and returns
a CheckResult. Schema violations and rule failures are ``ok=False`` (exit 3);
input that is not JSON never gets here (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class CheckResult:
    ok: bool
    stage: str | None
    detail: str


Checker = Callable[[Any], CheckResult]


def _integration(document: Any) -> CheckResult:
    # Imported on use: the checker module imports CheckResult from here.
    from git_harn.integrate.report import check_integration

    return check_integration(document)


def _assessment(document: Any) -> CheckResult:
    from git_harn.assess.assessor import assessment_problems

    problems = assessment_problems(document)
    return CheckResult(not problems, "assess" if problems else None, "; ".join(problems) or "assessment ok")


# kind -> checker; each area adds its own (assessment, integration, …).
CHECKS: dict[str, Checker] = {
    "assessment": _assessment,
    "integration": _integration,
}
