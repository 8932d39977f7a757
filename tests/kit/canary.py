"""A canary program for the trust-boundary tests [T1] [T2]: an agent plants it
where git would run it (an fsmonitor, a filter, a merge driver, an ssh
command, a credential helper …). Each time it runs it logs its parent chain,
so a test can tell who ran it: the agent (an ancestor is the agent's script)
or the host (no ancestor is)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

CANARY = r'''
import json, os, sys

def chain():
    out, pid = [], os.getpid()
    while pid > 1 and len(out) < 64:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        except OSError:
            break
        out.append({"pid": pid, "argv": argv})
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the ppid, past a comm that may hold spaces
    return out

try:
    with open(LOG, "a") as f:
        f.write(json.dumps({"argv": sys.argv[1:], "chain": chain()}) + "\n")
except OSError:
    pass  # a sandbox that keeps the log's folder read-only: the agent's own run, not the host's
if len(sys.argv) > 1 and sys.argv[1] in ("clean", "smudge", "textconv"):
    sys.stdout.buffer.write(sys.stdin.buffer.read())  # a filter passes content through
'''


def plant_canary(folder: Path) -> Path:
    """An executable canary in ``folder`` that logs to ``folder/canary.log``."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "canary.py"
    log = folder / "canary.log"
    script.write_text(f"#!{sys.executable}\nLOG = {str(log)!r}\n" + CANARY)
    script.chmod(0o755)
    return script


def canary_runs(folder: Path) -> list[dict[str, object]]:
    """Every logged run of the canary in ``folder``: its argv and parent chain."""
    log = folder / "canary.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def run_by_host(run: dict[str, object], agent_marker: str) -> bool:
    """Whether no process in the run's parent chain is an agent: an agent is
    a process one of whose argv words contains ``agent_marker`` (the path
    of the test's agent script, say)."""
    chain = run.get("chain")
    assert isinstance(chain, list)
    return not any(agent_marker in word for entry in chain for word in entry.get("argv", []))


def host_runs(folder: Path, agent_marker: str) -> list[dict[str, object]]:
    """The canary's runs that the host started, not an agent."""
    return [run for run in canary_runs(folder) if run_by_host(run, agent_marker)]
