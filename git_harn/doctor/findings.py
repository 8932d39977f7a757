"""What doctor reports: findings, each with its kind, what it is, why it
matters, its disk use, and the exact command that fixes it.

A finding is ``fixable`` when ``--fix`` applies its command: only what loses
nothing and what another git-harn command would do anyway. Every other
finding is listed with its command and left to the operator.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, ClassVar

from git_harn.results import Result

# The kinds, in the order the report groups them.
WORKSPACE, LOCK, WORKFLOW, LEFTOVER, SETUP = "workspace", "lock", "workflow", "leftover", "setup"
KINDS = (WORKSPACE, LOCK, WORKFLOW, LEFTOVER, SETUP)


@dataclass
class Finding:
    kind: str
    code: str  # what was found, as one word: workspace-preserved, lock-dead …
    what: str  # the thing itself: a run, a path, a ref
    why: str  # why it matters, and what the command does
    fix: str | None  # the exact command that fixes it; None when only its owner can (another host)
    fixable: bool = False  # --fix applies ``fix``
    diskBytes: int | None = None
    ageSeconds: int | None = None
    subject: dict[str, Any] = field(default_factory=dict)  # ids the fix needs: runId, path, ref …


@dataclass
class Applied:
    """One fix --fix applied, and what became of it."""

    code: str
    what: str
    fix: str
    ok: bool
    detail: str


@dataclass
class DoctorReport(Result):
    SCHEMA: ClassVar[str] = "doctor"

    findings: list[Finding]
    notes: list[str] = field(default_factory=list)  # what was seen and needs nothing (other hosts' runs)
    records: dict[str, int] = field(default_factory=dict)
    gitVersion: str = ""
    fixed: list[Applied] | None = None  # None: --fix was not asked for

    @property
    def outcome(self) -> str:
        return "doctor-findings" if self.findings else "doctor-clean"

    @property
    def summary(self) -> dict[str, int]:
        return {"findings": len(self.findings), "fixable": sum(f.fixable for f in self.findings),
                "workspaceDiskBytes": sum(f.diskBytes or 0 for f in self.findings if holds_worktrees(f))}

    def document(self) -> dict[str, Any]:
        return {**super().document(), "summary": self.summary, "outcome": self.outcome}


# Findings of another kind whose disk use is worktrees: a dead run's (its
# workspaces, the gates' checkouts it kept), counted in the workspace disk use.
WORKTREE_FINDINGS = frozenset({"workflow-runner-gone"})


def holds_worktrees(finding: Finding) -> bool:
    return finding.kind == WORKSPACE or finding.code in WORKTREE_FINDINGS


def grouped(findings: list[Finding]) -> list[tuple[str, list[Finding]]]:
    """The findings by kind, in report order; within a kind the largest
    first, then the oldest, then those of no known age, then by what they
    are. An unknown age is not taken as zero: the order of two findings
    must not flip as the clock passes a second between two doctor runs."""
    out = []
    for kind in KINDS:
        mine = [f for f in findings if f.kind == kind]
        if mine:
            mine.sort(key=lambda f: (-(f.diskBytes or 0), f.ageSeconds is None, -(f.ageSeconds or 0), f.what))
            out.append((kind, mine))
    return out


def command(verb: str, *words: str) -> str:
    """An advised command: ``verb`` as written, then each word quoted for a
    shell, so that a path with spaces is copied and run as one word."""
    return " ".join([verb, *(shlex.quote(w) for w in words)])
