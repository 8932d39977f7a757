"""Dual review: the review agent run twice, in parallel, on the exact tip.

Both must approve. An ``approve`` that carries a blocking finding is not an
approval. The findings of a round go back to the implement agent.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from git_harn.clock import precise_iso
from git_harn.tasks.config import AgentSettings
from git_harn.text import one_line
from git_harn.workflow.agents.retries import run_in_place
from git_harn.workflow.agents.stages import StageOutcome, TaskContext

REVIEWERS = (1, 2)
NOTED_FINDINGS = 20  # blocking findings kept in the review note on the tip


@dataclass
class Verdict:
    round: int
    outcomes: list[StageOutcome]

    @property
    def fault(self) -> str | None:
        return next((o.fault for o in self.outcomes if o.fault is not None), None)

    @property
    def detail(self) -> str:
        return next((o.detail for o in self.outcomes if o.fault is not None), "")

    @staticmethod
    def approves(outcome: StageOutcome) -> bool:
        report = outcome.report or {}
        blocking = [f for f in report.get("findings", []) if f.get("severity") == "blocking"]
        return outcome.ok and outcome.exitCode == 0 and not blocking

    @property
    def approved(self) -> bool:
        return all(self.approves(o) for o in self.outcomes)

    def findings(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for outcome in self.outcomes:
            for finding in (outcome.report or {}).get("findings", []):
                found.append({**finding, "reviewer": outcome.reviewer, "round": self.round})
            if not self.approves(outcome) and not (outcome.report or {}).get("findings"):
                found.append({"severity": "blocking", "text": outcome.summary or outcome.detail,
                              "reviewer": outcome.reviewer, "round": self.round})
        return found

    def summary(self) -> str:
        parts = []
        for o in self.outcomes:
            verdict = (o.report or {}).get("verdict", o.fault or "?")
            parts.append(f"reviewer {o.reviewer}: {verdict}" + (f" ({one_line(o.summary, 160)})" if o.summary else ""))
        return "; ".join(parts)

    def note(self, workflow_id: str, tip: str) -> dict[str, Any]:
        """What the review note on ``tip`` keeps for a later assessment: each
        verdict and the blocking findings (bounded; untrusted text as data)."""
        blocking = [{"reviewer": f.get("reviewer"), "text": one_line(str(f.get("text") or ""), 500),
                     "path": f.get("path") if isinstance(f.get("path"), str) else None}
                    for f in self.findings() if f.get("severity") == "blocking"][:NOTED_FINDINGS]
        return {"workflowId": workflow_id, "commit": tip, "round": self.round, "approved": self.approved,
                "verdicts": [{"reviewer": o.reviewer, "verdict": (o.report or {}).get("verdict"),
                              "approved": self.approves(o)} for o in self.outcomes],
                "blocking": blocking}

    def entries(self) -> list[dict[str, Any]]:
        return [{"round": self.round, "reviewer": o.reviewer,
                 "verdict": (o.report or {}).get("verdict"), "approved": self.approves(o),
                 "summary": o.summary, "findings": list((o.report or {}).get("findings", [])),
                 "fault": o.fault, "detail": o.detail, "seconds": round(o.seconds, 3), "tries": o.tries,
                 **({"startedAt": o.startedAt, "finishedAt": o.finishedAt} if o.startedAt else {}),
                 **({"agentRun": o.agentRun} if o.agentRun is not None else {})}
                for o in self.outcomes]


def dual_review(ctx: TaskContext, agent: AgentSettings, round_no: int, timeout: float,
                extra: dict[str, Any]) -> Verdict:
    with ThreadPoolExecutor(max_workers=len(REVIEWERS)) as pool:
        futures = [pool.submit(_timed_review, ctx, agent, round_no, timeout, extra, reviewer)
                   for reviewer in REVIEWERS]
        return Verdict(round_no, [f.result() for f in futures])


def _timed_review(ctx: TaskContext, agent: AgentSettings, round_no: int, timeout: float,
                  extra: dict[str, Any], reviewer: int) -> StageOutcome:
    """One reviewer's part of the round, retries included, with its start and end."""
    started = precise_iso()
    outcome = run_in_place(ctx, agent, round_no, timeout, extra, reviewer)
    outcome.startedAt, outcome.finishedAt = started, precise_iso()
    return outcome
