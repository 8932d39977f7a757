"""Stage agents for the addendum and remediation tests, beside the ones in
``workflow_repo``: an addendum agent, a reviewer that writes advisory or blocking
findings, and an implement agent that can exit 75 (a provider fault)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.kit.workflow_repo import WF, setup

EXTRA_AGENT = r'''
import json, os, subprocess, sys

stage = sys.argv[-1]
task = os.environ["HARN_TASK_ID"]
branch = os.environ["HARN_BRANCH"]
reviewer = os.environ.get("HARN_REVIEWER", "")
here = os.path.dirname(os.path.abspath(__file__))
try:
    with open(os.path.join(here, "extra.json")) as f:
        script = json.load(f)
except FileNotFoundError:
    script = {}
what = script.get(f"{branch}:{stage}", script.get(f"{task}:{stage}", script.get(stage, "ok")))
with open(os.path.join(here, "extra.log"), "a") as f:
    f.write(json.dumps({"branch": branch, "stage": stage, "reviewer": reviewer, "what": what,
                        "stdin": json.loads(sys.stdin.read() or "null")}) + "\n")

def git(*args):
    subprocess.run(["git", *args], check=True, capture_output=True)

def report(doc):
    with open(os.environ["HARN_REPORT"], "w") as f:
        json.dump(doc, f)

if what == "exit75":
    sys.exit(75)
if stage == "implement":
    os.execv(sys.executable, [sys.executable, os.path.join(here, "agent.py"), "implement"])
if stage == "addendum":
    if what != "nothing":
        name = branch.replace("roadmap-", "addendum-") + ".txt"
        with open(name, "a") as f:
            f.write(f"{branch} {os.environ['HARN_ATTEMPT']}\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"work for {branch}")
    items = [{"id": "1", "done": True}, {"id": "2", "done": what != "item-open"}]
    ok = {"ok": True, "mmr": False, "item-open": False, "nothing": True, "no-ok": None}.get(what, True)
    doc = {"summary": f"{branch}: {what}", "workItems": items, "gatesGreen": True, "openIssues": []}
    if ok is not None:
        doc["ok"] = ok
    report(doc)
elif stage == "review":
    findings, verdict = [], "approve"
    if what == "advisory":
        findings = [{"severity": "advisory", "text": f"consider naming {task} better", "path": "work.txt"}]
    elif what == "block":
        verdict = "changes-requested"
        findings = [{"severity": "blocking", "text": f"{task} breaks the build\nreally", "path": "x.py"},
                    {"severity": "advisory", "text": "nit"}]
    report({"verdict": verdict, "summary": f"review {reviewer}: {what}", "findings": findings})
'''


def config(wf_agents: Path, workflow: str = "stageTimeout = 30\n", addendum: bool = True) -> str:
    py = json.dumps(sys.executable)
    plain = json.dumps(str(wf_agents / "agent.py"))
    extra = json.dumps(str(wf_agents / "extra.py"))
    text = (f"[workflow]\n{workflow}\n"
            f"[agents.plan]\ncommand = [{py}, {plain}, \"plan\"]\n\n"
            f"[agents.implement]\ncommand = [{py}, {extra}, \"implement\"]\n\n"
            f"[agents.review]\ncommand = [{py}, {extra}, \"review\"]\n\n"
            "[agents.integrate]\ncommand = \"builtin\"\n\n")
    if addendum:
        text += f"[agents.addendum]\ncommand = [{py}, {extra}, \"addendum\"]\n\n"
    return text + "[gates]\ncommands = [[\"sh\", \"-c\", \"test ! -e broken\"]]\n"


def make(tmp: Path, roadmap: str, workflow: str = "stageTimeout = 30\n", addendum: bool = True) -> WF:
    """A workflow repository whose config uses the agents above."""
    agents = tmp / "agents"
    wf = setup(tmp, roadmap=roadmap, config=config(agents, workflow, addendum))
    (agents / "extra.py").write_text(EXTRA_AGENT)
    return wf


def script(wf: WF, mapping: dict[str, str]) -> None:
    (wf.agents / "extra.json").write_text(json.dumps(mapping))


def extra_log(wf: WF) -> list[dict[str, object]]:
    path = wf.agents / "extra.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
