"""Stage agents that fault on purpose, for the fault-handling tests (issue 13).

``faults.py`` sits beside the ordinary scripted agent of ``workflow_repo`` and runs
in its place: it counts its own runs per task and stage, logs what the host
passed it (attempt, schema error), and either misbehaves as ``faults.json``
says for that run or hands over to ``agent.py`` with the same stdin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.kit.workflow_repo import WF, config_text, setup

FAULT_AGENT = r'''
import json, os, subprocess, sys, time

here = os.path.dirname(os.path.abspath(__file__))
stage, task = os.environ["HARN_STAGE"], os.environ["HARN_TASK_ID"]
reviewer = os.environ.get("HARN_REVIEWER", "")
raw = sys.stdin.read()
key = f"{task}:{stage}" + (f":{reviewer}" if reviewer else "")
counter = os.path.join(here, "runs-" + key.replace(":", "_"))
run = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(run))
script = {}
if os.path.exists(os.path.join(here, "faults.json")):
    script = json.load(open(os.path.join(here, "faults.json")))
what = script.get(key, script.get(f"{task}:{stage}", script.get(stage, "pass")))
if isinstance(what, dict):
    what = what.get(str(run), what.get("*", "pass"))
try:
    given = json.loads(raw).get("schemaError")
except ValueError:
    given = None
with open(os.path.join(here, "faults.log"), "a") as f:
    f.write(json.dumps({"task": task, "stage": stage, "reviewer": reviewer, "run": run, "what": what,
                        "attempt": int(os.environ["HARN_ATTEMPT"]), "pid": os.getpid(),
                        "envSchemaError": os.environ.get("HARN_SCHEMA_ERROR"), "stdinSchemaError": given,
                        "t": time.time()}) + "\n")

def report(doc):
    with open(os.environ["HARN_REPORT"], "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))

def fault(klass, status, message):
    report({"fault": {"class": klass, "httpStatus": status, "message": message, "resetAt": None}})

def hang():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(os.path.join(here, "children.log"), "a") as f:
        f.write(f"{child.pid}\n")
    time.sleep(120)

if what == "exit75":
    sys.exit(75)
if what == "exit77":
    sys.exit(77)
if what == "exit78":  # a refusal of its own command line, as a CLI prints it
    print("error: unknown option '--no-such-flag'", file=sys.stderr)
    sys.exit(78)
if what == "fault-provider":
    fault("provider", 529, "overloaded")
elif what == "fault-auth":
    fault("auth", 401, "token expired")
elif what == "fault-config":
    fault("config", None, "--dangerously-skip-permissions cannot be used with root/sudo privileges")
elif what == "lock-record":  # once the other task's agent runs, hold this run's record ref's lock
    deadline = time.time() + 20
    while time.time() < deadline and not any(json.loads(line)["task"] != task for line in
                                             open(os.path.join(here, "faults.log"))):
        time.sleep(0.1)
    common = subprocess.run(["git", "rev-parse", "--git-common-dir"], check=True, capture_output=True,
                            text=True).stdout.strip()
    open(os.path.join(common, "refs", "harnery", "workflows", os.environ["HARN_WORKFLOW_ID"] + ".lock"), "w").close()
    fault("auth", 401, "token expired")
elif what == "fault-infra":
    fault("infra", None, "disk full")
elif what == "fault-class-only":  # only the member the protocol requires
    report({"fault": {"class": "auth"}})
elif what == "fault-status-only":
    report({"ok": False, "fault": {"class": "provider", "httpStatus": 429}})
elif what == "garbage":
    report("{not json")
elif what == "sigterm":
    import signal
    os.kill(os.getpid(), signal.SIGTERM)
elif what == "crash":
    sys.exit(9)
elif what == "hang":
    hang()
elif what == "hang-plan":  # an uncommitted ExecPlan edit, then hang
    os.makedirs("docs/execplans", exist_ok=True)
    with open(f"docs/execplans/{task}.md", "a") as f:
        f.write("\n## Progress\n\n- [x] half of it, not yet committed\n")
    hang()
elif what == "partial":  # commits a slice, leaves the plan edit uncommitted, says it failed
    with open(f"work-{task}.txt", "a") as f:
        f.write("a coherent half\n")
    plan = f"docs/execplans/{task}.md"
    text = open(plan).read().replace("Status: APPROVED", "Status: IN PROGRESS")
    open(plan, "w").write(text)
    subprocess.run(["git", "add", "-A"], check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"half of {task}"], check=True)
    open(plan, "a").write("\n## Surprises\n\n- the second half needs a decision\n")
    report({"ok": False, "summary": "half done; the rest needs a decision"})
else:
    done = subprocess.run([sys.executable, os.path.join(here, "agent.py"), stage], input=raw, text=True)
    sys.exit(done.returncode)
'''


def fault_setup(tmp: Path, roadmap: str, workflow: str = "stageTimeout = 30\n", extra: str = "",
                integrate: str = 'command = "builtin"') -> WF:
    agents = tmp / "agents"
    text = config_text(agents, extra=extra, workflow=workflow, integrate=integrate)
    wf = setup(tmp, roadmap=roadmap, config=text.replace("agent.py", "faults.py"))
    (wf.agents / "faults.py").write_text(FAULT_AGENT)
    return wf


def faults(wf: WF, mapping: dict[str, Any]) -> None:
    (wf.agents / "faults.json").write_text(json.dumps(mapping))


def runs(wf: WF) -> list[dict[str, Any]]:
    path = wf.agents / "faults.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
