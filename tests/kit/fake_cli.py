"""A fake `claude` / `codex` for the adapter tests: it replays a recorded
event stream from a scenario file, the way the real CLI prints it.

FAKE_CLI_DIR holds ``scenario.json``: {"runs": [[step, …], …]} (the n-th
call plays runs[n], the last one again after that) or {"stage:<stage>":
[step, …]} keyed by HARN_STAGE (``task:<id>:stage:<stage>`` first). Each call is recorded in
``calls/<n>.json`` (argv, stdin, cwd, HARN_* environment). Steps:
{"event": {...}} prints one JSONL line ("$SESSION" is replaced by the
session id); {"raw": "text"} prints a line as is; {"stderr": "text"};
{"sleep": seconds}; {"await": name} waits (at most two minutes) until the test
writes FAKE_CLI_DIR/<name>, so that a test sets the pace; {"answer": {...}} writes codex's -o file;
{"work": "plan"|"implement"} commits like a real agent; {"kill": signal number};
{"exit": code}; {"write": {"path", "text", "mode"}} writes a file in the
worktree (committed by the next "work"); {"link": {"at", "to", "hard"}}
plants a symlink (or a hard link) at "at", where "$HARN_REPORT", "$OWN" (the
stage attempt's own folder, $HARN_REPORT's) and "$RUN" (the run folder, two
above it) are replaced, as a hostile agent would for the host to write
through ("fresh": only where nothing is yet).

``claude auth status --text`` and ``codex login status`` answer as the real
ones do (Claude Code 2.1.197, codex-cli 0.171.0): logged in, exit 0, unless
FAKE_CLI_DIR holds a file ``logged-out``: then the real CLI's words on the
real stream (claude: stdout, codex: stderr after its WARNING line), exit 1.
Each is logged in ``logins.log``, not as a call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

here = Path(os.environ["FAKE_CLI_DIR"])
name = Path(sys.argv[0]).name
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print(f"{name} 9.9.9 (fake)")
    sys.exit(0)
if args[:2] in (["auth", "status"], ["login", "status"]):
    with open(here / "logins.log", "a") as log:
        log.write(" ".join([name, *args]) + "\n")
    if not (here / "logged-out").exists():
        print("Login method: Claude API key" if name == "claude" else "Logged in using an API key")
        sys.exit(0)
    if name == "claude":
        print("Not logged in. Run claude auth login to authenticate.")
    else:
        print('WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper '
              'binaries under temporary dir "/tmp"', file=sys.stderr)
        print("Not logged in", file=sys.stderr)
    sys.exit(1)
stdin = sys.stdin.read()  # to EOF: codex exec waits for it too
calls = here / "calls"
calls.mkdir(exist_ok=True)
number = len(list(calls.glob("*.json")))
while True:  # two reviewers start at once: each takes a number of its own (O_EXCL), never the same file
    try:
        slot = os.open(calls / f"{number}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        break
    except FileExistsError:
        number += 1
with os.fdopen(slot, "w") as call:
    call.write(json.dumps({
        "name": name, "pid": os.getpid(), "argv": sys.argv, "stdin": stdin, "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if k.startswith("HARN_")}, "envNames": sorted(os.environ)}))


def option(flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


if name == "claude":
    session = option("--resume") or option("--session-id") or "no-session"
else:
    session = args[args.index("resume") + 1] if "resume" in args else f"thread-{os.getpid()}"

if name == "codex" and option("-o") is not None and not os.path.lexists(str(option("-o"))):
    Path(str(option("-o"))).write_text("")  # the real one creates it empty at once (a planted link is the test's)
scenario = json.loads((here / "scenario.json").read_text())
if "runs" in scenario:
    runs = scenario["runs"]
    steps = runs[min(number, len(runs) - 1)]
else:
    stage_key = f"stage:{os.environ.get('HARN_STAGE')}"
    steps = scenario.get(f"task:{os.environ.get('HARN_TASK_ID')}:{stage_key}",
                         scenario.get(stage_key, scenario.get("*", [])))


def fill(value: object) -> object:
    if isinstance(value, str):
        return value.replace("$SESSION", session)
    if isinstance(value, list):
        return [fill(v) for v in value]
    if isinstance(value, dict):
        return {k: fill(v) for k, v in value.items()}
    return value


def plant(spec: dict[str, object]) -> None:
    report = os.environ.get("HARN_REPORT", "")
    own = os.path.dirname(report)
    run = os.path.dirname(os.path.dirname(own))  # <run>/stages/<the attempt's own>/
    at = Path(str(spec["at"]).replace("$HARN_REPORT", report).replace("$OWN", own).replace("$RUN", run))
    if at.is_symlink() or at.exists():
        if spec.get("fresh"):
            return  # only paths the host has not written yet
        at.unlink()
    if spec.get("hard"):
        os.link(str(spec["to"]), at)
    else:
        at.symlink_to(str(spec["to"]))


def write(spec: dict[str, object]) -> None:
    path = Path(str(spec["path"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a" if spec.get("append") else "w") as handle:
        handle.write(str(spec["text"]))
    path.chmod(int(str(spec.get("mode", 0o644))))


def git(*words: str) -> None:
    subprocess.run(["git", *words], check=True, capture_output=True)


def work(kind: str) -> None:
    task = os.environ["HARN_TASK_ID"]
    os.makedirs("docs/execplans", exist_ok=True)
    status = "APPROVED" if kind == "plan" else "COMPLETE"
    Path(f"docs/execplans/{task}.md").write_text(f"# ExecPlan {task}\n\nStatus: {status}\n")
    if kind == "implement":
        Path(f"work-{task}.txt").write_text(f"done by {name}\n")
    git("add", "-A")
    git("commit", "-q", "-m", f"{kind} {task} by {name}")


code = 0
for step in steps:
    if "event" in step:
        print(json.dumps(fill(step["event"])), flush=True)
    elif "raw" in step:
        print(step["raw"], flush=True)
    elif "stderr" in step:
        print(step["stderr"], file=sys.stderr, flush=True)
    elif "sleep" in step:
        time.sleep(step["sleep"])
    elif "await" in step:
        until = time.monotonic() + 120
        while not (here / step["await"]).exists() and time.monotonic() < until:
            time.sleep(0.05)
    elif "answer" in step:
        out = option("-o")
        assert out is not None
        Path(out).unlink(missing_ok=True)  # a careful agent never writes through a link left there
        Path(out).write_text(json.dumps(step["answer"]))
    elif "work" in step:
        work(step["work"])
    elif "kill" in step:  # dies of a signal
        os.kill(os.getpid(), step["kill"])
    elif "link" in step:
        plant(step["link"])
    elif "write" in step:
        write(step["write"])
    elif "exit" in step:
        code = step["exit"]
        break
sys.exit(code)
