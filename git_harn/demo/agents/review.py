"""Scripted review agent for ``git harn demo --workflow`` (stdlib only).

Run as ``python review.py`` with the task worktree as the working directory;
read-only. It reads ``HARN_TASK_ID``, ``HARN_REVIEWER`` (1 or 2) and
``HARN_REPORT`` from the environment (stdin, the task context, is read and
not needed), names the tip it reviewed (``git rev-parse HEAD``) and writes
``{"verdict", "summary", "findings"}`` to ``$HARN_REPORT``.

It approves, except for a task whose id is listed in ``HARN_DEMO_REJECT``
(comma-separated ids, e.g. ``1.3,2.1``): then it requests changes with one
blocking finding, on every round, so that task never passes review, and
from the second round on (``HARN_ROUND``; the demo has two) it also,
misbehaving on purpose, appends its notes to the task's ExecPlan without
committing them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def _note_in_plan(task_id: str, reviewer: str) -> None:
    """The misbehaviour the demo needs: the refusing reviewer also writes its
    notes into the ExecPlan, uncommitted. In the last round the refusal ends
    the task and the host names the notes beside it; the run's assessment
    sees a dirty plan and artefact salvage commits it onto the task branch."""
    folder = subprocess.run(["git", "config", "harn.execplans"], capture_output=True, text=True,
                            check=False).stdout.strip() or "docs/execplans"
    plan = Path(folder) / f"{task_id}.md"
    if plan.is_file() and not plan.is_symlink():
        with plan.open("a") as handle:
            handle.write(f"\n## Review notes (reviewer {reviewer})\n\n- rename in smaller steps\n")


def main() -> int:
    task_id, report = os.environ["HARN_TASK_ID"], Path(os.environ["HARN_REPORT"])
    reviewer = os.environ.get("HARN_REVIEWER", "?")
    sys.stdin.read()
    tip = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    rejected = {part.strip() for part in os.environ.get("HARN_DEMO_REJECT", "").split(",") if part.strip()}
    findings: list[dict[str, Any]] = []
    if task_id in rejected:
        verdict = "changes-requested"
        findings.append({"severity": "blocking", "path": f"work/{task_id}.txt",
                         "text": f"task {task_id} is listed in HARN_DEMO_REJECT: this reviewer never approves it"})
        summary = f"reviewer {reviewer} requests changes on {tip[:12]}"
        if int(os.environ.get("HARN_ROUND", "1")) >= 2:
            _note_in_plan(task_id, reviewer)
    else:
        verdict = "approve"
        summary = f"reviewer {reviewer} approves {tip[:12]}"
    report.write_text(json.dumps({"verdict": verdict, "summary": summary, "findings": findings}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
