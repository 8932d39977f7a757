"""Workflow records for the report page's tests and bench, made without
running any agent: a run of ``n`` tasks with every member the page draws
(stage attempts with a crash and its retry, two review rounds with findings,
waits, gates, usage, next steps), valid against the result schema."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from git_harn.clock import parse_iso, precise_iso

T0 = 1_800_000_000.0  # 2027-01-15: any fixed moment
OID = "0123456789abcdef0123456789abcdef01234567"
WORKFLOW_ID = "wf-20270115T080000000Z-abcdef"


def _span(stage: str, attempt: int, start: float, seconds: float, outcome: str = "ok",
          fault: str | None = None, kind: str | None = None) -> dict[str, Any]:
    return {"kind": "stage", "stage": stage, "attempt": attempt, "startedAt": precise_iso(start),
            "finishedAt": precise_iso(start + seconds), "outcome": outcome, "fault": fault, "faultKind": kind}


def _review(round_no: int, reviewer: int, start: float, approved: bool) -> dict[str, Any]:
    findings = [{"severity": "advisory" if approved else "blocking", "path": f"src/module_{n}.py",
                 "text": f"finding {n} of reviewer {reviewer}: the error path leaks the handle opened at line {40 + n}"}
                for n in range(3)]
    return {"round": round_no, "reviewer": reviewer, "verdict": "approve" if approved else "changes-requested",
            "approved": approved, "summary": f"reviewer {reviewer}, round {round_no}", "findings": findings,
            "fault": None, "detail": "", "seconds": 60.0, "tries": 1, "startedAt": precise_iso(start),
            "finishedAt": precise_iso(start + 60.0 + reviewer)}


def task_doc(n: int, start: float) -> dict[str, Any]:
    """Task 1.<n>: plan crashes once, review asks for changes once, then it lands."""
    at, timeline = start, [_span("workspace", 1, start, 2.0)]
    for stage, attempt, seconds, outcome in (("plan", 1, 30, "retried"), ("plan", 2, 90, "ok"),
                                            ("implement", 1, 600, "ok"), ("gates", 1, 45, "ok"),
                                            ("review", 1, 70, "changes-requested"), ("implement", 2, 300, "ok"),
                                            ("gates", 2, 45, "ok"), ("review", 2, 70, "ok"),
                                            ("integrate", 1, 20, "ok"), ("cleanup", 1, 3, "ok")):
        at += 2.0 if stage == "plan" and attempt == 1 else 0.0
        fault = ("infra", "crash") if outcome == "retried" else (None, None)
        timeline.append(_span(stage, attempt, at, seconds, outcome, *fault))
        if stage == "integrate":
            timeline.append({"kind": "wait", "reason": "merge-lock", "detail": "another task of this run is "
                             "integrating", "startedAt": precise_iso(at), "finishedAt": precise_iso(at + 5)})
        at += seconds
    rounds = [s for s in timeline if s.get("stage") == "review"]
    reviews = [_review(r, who, start_of(rounds[r - 1]), r == 2) for r in (1, 2) for who in (1, 2)]
    key = f"1.{n}"
    return {
        "taskId": key, "title": f"Task {n}: make the widget frobnicate", "branch": f"roadmap-{key}",
        "runId": f"{WORKFLOW_ID}-{key}", "status": "done", "state": "done", "stage": "done",
        "detail": f"roadmap-{key} landed on origin/main", "attempts": {"workspace": 1, "plan": 2, "implement": 2,
                                                                     "gates": 2, "review": 2, "integrate": 1},
        "stages": {"plan": {"attempt": 2, "ok": True, "summary": "committed the ExecPlan", "seconds": 90.0},
                   "implement": {"attempt": 2, "ok": True, "summary": "addressed 6 findings", "seconds": 300.0}},
        "review": {"rounds": 2, "approved": True, "tip": OID, "reviews": reviews},
        "gates": {"passed": True, "commit": OID, "commands": [{"argv": ["make", "test"], "exitCode": 0,
                                                                "seconds": 45.0}]},
        "integration": {"ok": True, "rebased": True, "squashMerged": True, "pushed": True,
                        "roadmapMarkedDone": True, "summary": "landed", "commit": OID},
        "tip": OID, "integratedRef": f"refs/harnery/integrated/{key}",
        "workspace": {"state": "released", "reason": "worktree removed"}, "fault": None, "faultKind": None,
        "infraRetries": 1, "assessment": None, "salvage": None, "baseOid": OID,
        "startedAt": precise_iso(start)[:19] + "Z", "finishedAt": precise_iso(at)[:19] + "Z",
        "usage": {"inputTokens": 120_000 + n, "outputTokens": 9_000, "cachedInputTokens": 80_000,
                  "costUsd": 1.25, "runs": 9},
        "agentLogs": [], "addendum": None, "next": {"command": None, "why": "landed"}, "timeline": timeline,
    }


def start_of(span: dict[str, Any]) -> float:
    found = parse_iso(span["startedAt"])
    assert found is not None
    return found


def run_doc(count: int, parallel: int = 4) -> dict[str, Any]:
    """A finished run of ``count`` tasks, ``parallel`` at a time."""
    lanes = [T0] * parallel
    tasks = []
    for n in range(1, count + 1):
        lane = min(range(parallel), key=lambda i: lanes[i])
        doc = task_doc(n, lanes[lane] + 1.0)
        lanes[lane] = start_of({"startedAt": doc["timeline"][-1]["finishedAt"]})
        tasks.append(doc)
    end = max(lanes)
    return {
        "schemaVersion": 1, "workflowId": WORKFLOW_ID, "base": "main", "remote": "origin", "baseOid": OID,
        "baseOidAfter": OID.replace("0", "f"), "dryRun": False, "startedAt": precise_iso(T0)[:19] + "Z",
        "finishedAt": precise_iso(end + 2)[:19] + "Z", "selected": [t["taskId"] for t in tasks], "skipped": [],
        "unparsed": [], "tasks": tasks, "agents": {}, "settings": {"parallel": parallel},
        "faultMetrics": {"infraRetries": count, "infraFaults": 0, "providerFaults": 0, "authFaults": 0,
                         "configFaults": 0, "tamperFaults": 0},
        "claims": None, "recovery": None, "assessments": [], "salvages": [], "remediation": None,
        "summary": f"{count} tasks: {count} done", "halted": None, "interrupted": False, "finished": True,
        "usage": {"inputTokens": sum(t["usage"]["inputTokens"] for t in tasks), "outputTokens": 9_000 * count,
                  "cachedInputTokens": 80_000 * count, "costUsd": 1.25 * count, "runs": 9 * count},
        "blocked": None, "preflight": None, "next": None, "waits": [], "outcome": "workflow-done",
        "remediationSuppressed": False,
    }


def store_record(repo: Path, body: dict[str, Any]) -> str:
    """Keep ``body`` as the workflow record ``refs/harnery/workflows/<its id>``,
    as git-harn's writer would (one commit holding ``workflow.json``), with plain git."""
    def git(*args: str, stdin: str = "") -> str:
        return subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, text=True,
                              check=True).stdout.strip()

    blob = git("hash-object", "-w", "--stdin", stdin=json.dumps(body, indent=2, sort_keys=True) + "\n")
    tree = git("mktree", stdin=f"100644 blob {blob}\tworkflow.json\n")
    commit = git("commit-tree", tree, "-m", f"finish: {body.get('summary')}")
    git("update-ref", f"refs/harnery/workflows/{body['workflowId']}", commit)
    return commit
