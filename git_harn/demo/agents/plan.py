"""Scripted plan agent for ``git harn demo --workflow`` (stdlib only).

Run as ``python plan.py`` with the task worktree as the working directory.
It reads ``HARN_TASK_ID``, ``HARN_TASK_TITLE`` and ``HARN_REPORT`` from the
environment (stdin, the task context, is read and not needed), writes the
ExecPlan ``<harn.execplans or docs/execplans>/<id>.md`` with
``Status: APPROVED``, commits it, and writes ``{"ok": true, "summary": …}``
to ``$HARN_REPORT``. Run again on the same branch, it commits nothing new.
Run as ``python plan.py --crash-first-attempt <id>``, it crashes (exit 1, no
report) on that task's first attempt: an infra fault the host retries in place.
The title is untrusted: it is flattened to one line below the status line
and reaches git only through the commit message on stdin (``-F -``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

AS_AGENT = ("-c", "user.name=demo plan agent", "-c", "user.email=plan-agent@example.invalid")


def git(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], input=stdin, capture_output=True, text=True, check=check)


def main() -> int:
    task_id, report = os.environ["HARN_TASK_ID"], Path(os.environ["HARN_REPORT"])
    if not re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,9}){0,9}", task_id):
        raise SystemExit(f"plan agent: refusing task id {task_id!r}")
    flaky = sys.argv[sys.argv.index("--crash-first-attempt") + 1:][:1] if "--crash-first-attempt" in sys.argv else []
    if task_id in flaky and os.environ.get("HARN_ATTEMPT") == "1":
        # an infra fault: the process dies without a report; the host retries it in place
        sys.stderr.write("plan agent: simulated crash on the first attempt (--crash-first-attempt)\n")
        return 1
    title = " ".join(os.environ.get("HARN_TASK_TITLE", "").split())
    sys.stdin.read()
    folder = git("config", "harn.execplans", check=False).stdout.strip() or "docs/execplans"
    plan = Path(folder) / f"{task_id}.md"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(f"# ExecPlan {task_id}\n\nStatus: APPROVED\n\nTask: {title}\n\n"
                    f"1. Add work/{task_id}.txt.\n2. Set this plan to COMPLETE.\n")
    git("add", "--", str(plan))
    if git("diff", "--cached", "--quiet", check=False).returncode:
        git(*AS_AGENT, "commit", "-q", "-F", "-", stdin=f"Plan task {task_id}\n\n{title}\n")
    tip = git("rev-parse", "HEAD").stdout.strip()
    summary = f"committed {plan.as_posix()} with Status: APPROVED at {tip[:12]}"
    report.write_text(json.dumps({"ok": True, "summary": summary}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
