"""Scripted implement agent for ``git harn demo --workflow`` (stdlib only).

Run as ``python implement.py`` with the task worktree as the working
directory. It reads ``HARN_TASK_ID``, ``HARN_TASK_TITLE`` and ``HARN_REPORT``
from the environment and the task context JSON from stdin. First round: it
adds ``work/<id>.txt``, sets the ExecPlan's status line to
``Status: COMPLETE`` and commits both. A further round (the context lists
review ``findings``): it appends a note to that file and commits again. It
writes ``{"ok": true, "summary": …}`` to ``$HARN_REPORT``. The title reaches
git only through the commit message on stdin (``-F -``), never argv.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

AS_AGENT = ("-c", "user.name=demo implement agent", "-c", "user.email=implement-agent@example.invalid")


def git(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], input=stdin, capture_output=True, text=True, check=check)


def findings_of(raw: str) -> list[Any]:
    """The review findings to address, from the JSON context (none when stdin is the prompt)."""
    try:
        context = json.loads(raw)
    except ValueError:
        return []
    found = context.get("findings", context.get("reviewFindings")) if isinstance(context, dict) else None
    return found if isinstance(found, list) else []


def main() -> int:
    task_id, report = os.environ["HARN_TASK_ID"], Path(os.environ["HARN_REPORT"])
    if not re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,9}){0,9}", task_id):
        raise SystemExit(f"implement agent: refusing task id {task_id!r}")
    title = " ".join(os.environ.get("HARN_TASK_TITLE", "").split())
    findings = findings_of(sys.stdin.read())
    work = Path("work") / f"{task_id}.txt"
    work.parent.mkdir(exist_ok=True)
    done = work.read_text() if findings and work.exists() else f"task {task_id}: {title}\n"
    work.write_text(done + (f"addressed {len(findings)} review finding(s)\n" if findings else ""))
    folder = git("config", "harn.execplans", check=False).stdout.strip() or "docs/execplans"
    plan = Path(folder) / f"{task_id}.md"
    text = plan.read_text() if plan.exists() else f"# ExecPlan {task_id}\n\nStatus: DRAFT\n"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(re.sub(r"^Status:.*$", "Status: COMPLETE", text, count=1, flags=re.MULTILINE))
    git("add", "--", str(work), str(plan))
    what = f"Address {len(findings)} review finding(s) on task {task_id}" if findings else f"Implement task {task_id}"
    if git("diff", "--cached", "--quiet", check=False).returncode:
        git(*AS_AGENT, "commit", "-q", "-F", "-", stdin=f"{what}\n\n{title}\n")
    tip = git("rev-parse", "HEAD").stdout.strip()
    summary = f"{what}: {work.as_posix()} and plan COMPLETE at {tip[:12]}"
    report.write_text(json.dumps({"ok": True, "summary": summary}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
