"""Issue 43, items 3 and 4, in real ``git harn workflow run``s [T3]: a
hostile stage agent tries every write the sandbox allows or refuses and
logs each result; a gate does the same from its checkout; a daemon an agent
starts with ``setsid`` does not outlive its stage; a worktree grown past
``harn.stageDiskLimit`` ends its task with the work kept; a machine (or a
setting) without bubblewrap says so at the start of the run.

The runs use a global git config of their own, without the test session's
``harn.sandboxWritable`` (tests/conftest.py), so the sandbox is as strict as
an operator's. They skip, saying why, where bubblewrap cannot run."""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.kit.harn import assert_valid, git, harn
from tests.kit.sync_world import read_note
from tests.kit.workflow_repo import WF, setup

ROADMAP = "# Roadmap\n\n- [ ] 1.1 First thing\n"


def _bwrap_problem() -> str | None:
    from git_harn.workspace.sandbox import probe

    found, why = probe()
    return None if found else why


BWRAP_PROBLEM = _bwrap_problem()
needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bubblewrap cannot run: {BWRAP_PROBLEM}")

# Runs as the plan agent: each probe writes (or runs git) and logs ok / refused, then hands over
# to the honest scripted agent. The log goes to the report folder, which the stage may write.
PROBE = r'''
import json, os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
DAEMON = ("import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
          "time.sleep(float(sys.argv[2]))")
paths = json.load(open(os.path.join(here, "paths.json")))
def git(*args, check=True):
    return subprocess.run(["git", *args], check=check, capture_output=True, text=True)
common = os.path.abspath(git("rev-parse", "--git-common-dir").stdout.strip())
admin = os.path.abspath(git("rev-parse", "--git-dir").stdout.strip())
branch = git("rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
report_dir = os.path.dirname(os.environ["HARN_REPORT"])
home = os.environ["HOME"]
results = {}
def touch(name, path, make=True):
    path = os.path.abspath(path)
    existed = os.path.lexists(path)
    try:
        if make:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as f:
            f.write("")
        results[name] = "ok"
        if not existed:
            os.unlink(path)
    except OSError as exc:  # a read-only file system, not a missing folder
        results[name] = ("refused" if exc.errno in (30, 13, 1) else "hidden" if exc.errno == 2 and not make
                         else f"error {exc.errno}")
touch("worktree", "probe-file")
touch("admin folder", os.path.join(admin, "probe"))
touch("objects", os.path.join(common, "objects", "probe"))
touch("refs/heads", os.path.join(common, "refs", "heads", "probe.lock"))
touch("logs/refs/heads", os.path.join(common, "logs", "refs", "heads", "probe"))
touch("report folder", os.path.join(report_dir, "probe"))
touch("~/.claude", os.path.join(home, ".claude", "probe"))
touch("extra writable", os.path.join(paths["extra"], "probe"))
touch("private /tmp", "/tmp/" + paths["marker"])
touch(".git file", ".git")
touch("commondir", os.path.join(admin, "commondir"))
touch("gitdir", os.path.join(admin, "gitdir"))
touch("config", os.path.join(common, "config"))
touch("hooks/", os.path.join(common, "hooks", "probe"))
touch("info/", os.path.join(common, "info", "probe"))
touch("objects/info/", os.path.join(common, "objects", "info", "probe"))
touch("packed-refs", os.path.join(common, "packed-refs"))
touch("refs/remotes", os.path.join(common, "refs", "remotes", "probe"))
touch("refs/harnery", os.path.join(common, "refs", "harnery", "probe"))
touch("refs/replace", os.path.join(common, "refs", "replace", "probe"))
touch("other worktree", os.path.join(paths["other"], "README.md"), make=False)  # under /tmp: not even seen
touch("other admin folder", os.path.join(common, "worktrees", "other", "probe"))
touch("main checkout", os.path.join(paths["main"], "probe"))
touch("$HOME", os.path.join(home, "probe"))
results["git config"] = "ok" if git("config", "probe.key", "1", check=False).returncode == 0 else "refused"
# git add, commit, switch -c and a commit on the new branch; then back, and the new branch gone
steps = []
with open("probe-a.txt", "w") as f:
    f.write("a\n")
steps.append(git("add", "probe-a.txt", check=False).returncode)
steps.append(git("commit", "-q", "-m", "probe a", check=False).returncode)
steps.append(git("switch", "-q", "-c", "probe-branch", check=False).returncode)
with open("probe-b.txt", "w") as f:
    f.write("b\n")
steps.append(git("add", "probe-b.txt", check=False).returncode)
steps.append(git("commit", "-q", "-m", "probe b", check=False).returncode)
steps.append(git("switch", "-q", branch, check=False).returncode)
results["git add/commit/switch -c"] = "ok" if steps == [0] * len(steps) else f"failed {steps}"
# git branch -D takes packed-refs' lock, in the read-only common folder: the loose files go instead
results["git branch -D"] = "ok" if git("branch", "-q", "-D", "probe-branch", check=False).returncode == 0 else "refused"
for folder in ("refs", "logs/refs"):
    if os.path.exists(os.path.join(common, folder, "heads", "probe-branch")):
        os.unlink(os.path.join(common, folder, "heads", "probe-branch"))
# a daemon in a session of its own: it must not outlive the stage; while it lives it holds a lock on a
# file the test can see (its pid is one of the sandbox's own PID namespace, meaningless to the test)
subprocess.Popen(["setsid", sys.executable, "-c", DAEMON, os.path.join(paths["extra"], "daemon.lock"), "120"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.3)
with open("/proc/self/limits") as f:
    results["max processes"] = next(line.split()[2] for line in f if line.startswith("Max processes"))
results["pid namespace"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())[:1]
with open(os.path.join(report_dir, "probe-results.json"), "w") as f:
    json.dump(results, f)
os.execv(sys.executable, [sys.executable, os.path.join(here, "agent.py"), *sys.argv[1:]])
'''

# A gate that tries its own checkout, the repository's config, and says whether it has a network.
GATE = r'''
import json, os, subprocess
results = {}
for name, path in (("checkout", "gate-probe"), ("config", os.path.join(os.environ["PROBE_COMMON"], "config"))):
    try:
        open(path, "a").close()
        results[name] = "ok"
    except OSError:
        results[name] = "refused"
with open("/proc/net/dev") as f:
    results["interfaces"] = sorted(line.split(":")[0].strip() for line in f.read().splitlines()[2:])
print("PROBE " + json.dumps(results))
raise SystemExit(1 if os.environ.get("PROBE_FAIL") else 0)
'''

EXPECTED_WRITABLE = ("worktree", "admin folder", "objects", "refs/heads", "logs/refs/heads", "report folder",
                     "~/.claude", "extra writable", "private /tmp")
EXPECTED_REFUSED = (".git file", "commondir", "gitdir", "config", "hooks/", "info/", "objects/info/",
                    "packed-refs", "refs/remotes", "refs/harnery", "refs/replace",
                    "other admin folder", "main checkout", "$HOME", "git config")


def _operator_env(tmp: Path, lines: str = "") -> dict[str, str]:
    """A global config of the operator's own, without the session's sandboxWritable; a real HOME."""
    config_home = tmp / "operator-config"
    (config_home / "git").mkdir(parents=True)
    config = config_home / "git" / "config"
    config.write_text("[user]\n\tname = Test Operator\n\temail = operator@example.com\n"
                      "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n" + lines)
    home = tmp / "home"
    (home / ".claude").mkdir(parents=True)
    return {"GIT_CONFIG_GLOBAL": str(config), "XDG_CONFIG_HOME": str(config_home), "HOME": str(home)}


def _config(agents: Path, gate: str, workflow: str = "") -> str:
    py, probe, agent = json.dumps(sys.executable), json.dumps(str(agents / "probe.py")), json.dumps(
        str(agents / "agent.py"))
    writable = f"writable = [{json.dumps(str(agents))}, {json.dumps(str(agents.parent / 'extra'))}]"
    return (f"[workflow]\nstageTimeout = 60\n{workflow}\n"
            f"[agents.plan]\ncommand = [{py}, {probe}, \"plan\"]\n{writable}\n\n"
            f"[agents.implement]\ncommand = [{py}, {agent}, \"implement\"]\n{writable}\n\n"
            f"[agents.review]\ncommand = [{py}, {agent}, \"review\"]\n{writable}\n\n"
            "[agents.integrate]\ncommand = \"builtin\"\n\n"
            f"[gates]\ncommands = [[{py}, {json.dumps(gate)}]]\nenv = []\n")


def _setup(tmp: Path, workflow: str = "") -> WF:
    gate = tmp / "gate.py"
    gate.write_text(GATE)
    agents = tmp / "agents"
    wf = setup(tmp, roadmap=ROADMAP, config=_config(agents, str(gate), workflow))
    (agents / "probe.py").write_text(PROBE)
    (tmp / "extra").mkdir()
    other = tmp / "other"
    git(wf.work, "worktree", "add", "-q", "--detach", str(other))
    (agents / "paths.json").write_text(json.dumps({"other": str(other), "main": str(wf.work),
                                                    "extra": str(tmp / "extra"), "marker": f"probe-{os.getpid()}"}))
    return wf


def _probe_results(wf: WF, workflow_id: str) -> dict[str, Any]:
    found = list((wf.work / ".git" / "harnery" / "workflow" / workflow_id).rglob("probe-results.json"))
    assert found, "the probe agent wrote no results"
    result: dict[str, Any] = json.loads(found[0].read_text())
    return result


def _gate_probe(wf: WF, commit: str) -> dict[str, Any]:
    note = read_note(wf.work, commit)
    tail = note["gates"]["commands"][0]["outputTail"]
    line = next(line for line in tail.splitlines() if line.startswith("PROBE "))
    result: dict[str, Any] = json.loads(line.removeprefix("PROBE "))
    return result


@needs_bwrap
def test_each_path_is_writable_or_read_only_as_listed_and_git_works_inside(tmp_path: Path) -> None:
    wf = _setup(tmp_path, "gateNetwork = false\nstageProcessLimit = 3000\n")
    env = _operator_env(tmp_path)

    done = wf.run("--json", env={**env, "PROBE_COMMON": str(wf.work / ".git")}, timeout=300)

    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert doc["settings"]["sandbox"]["active"] is True
    assert "without a sandbox" not in done.err
    results = _probe_results(wf, doc["workflowId"])
    assert {name: results[name] for name in EXPECTED_WRITABLE} == dict.fromkeys(EXPECTED_WRITABLE, "ok"), results
    assert {name: results[name] for name in EXPECTED_REFUSED} == dict.fromkeys(EXPECTED_REFUSED, "refused"), results
    assert results["other worktree"] in ("refused", "hidden"), results  # hidden: under /tmp, not shown
    assert (tmp_path / "other" / "README.md").read_text() == "hello\n"
    assert results["git add/commit/switch -c"] == "ok"
    assert results["git branch -D"] == "refused"  # it would rewrite packed-refs
    assert results["max processes"] == "3000"  # RLIMIT_NPROC, from workflow.stageProcessLimit
    assert results["pid namespace"] == [1]  # its own PID namespace: the host's processes are not there
    assert not (Path("/tmp") / f"probe-{os.getpid()}").exists()  # its /tmp was its own
    assert git(wf.work, "config", "--get", "probe.key", check=False) == ""
    task = doc["tasks"][0]
    assert task["status"] == "done", (task["status"], task["detail"])
    gate = _gate_probe(wf, task["gates"]["commit"])
    assert gate == {"checkout": "ok", "config": "refused", "interfaces": ["lo"]}  # gateNetwork = false


@needs_bwrap
def test_gates_keep_the_network_unless_told_and_the_agent_setting_comes_from_the_operator(tmp_path: Path) -> None:
    wf = _setup(tmp_path)
    git(wf.work, "config", "harn.sandbox", "off")  # the repository's own config: never read for this
    env = _operator_env(tmp_path)

    done = wf.run("--json", env={**env, "PROBE_COMMON": str(wf.work / ".git")}, timeout=300)

    doc = done.json()
    assert doc["settings"]["sandbox"]["active"] is True, doc["settings"]["sandbox"]
    task = doc["tasks"][0]
    gate = _gate_probe(wf, task["gates"]["commit"])
    assert gate["config"] == "refused" and len(gate["interfaces"]) > 1


@needs_bwrap
def test_a_daemon_an_agent_starts_does_not_outlive_its_stage(tmp_path: Path) -> None:
    wf = _setup(tmp_path)
    # the plan agent's probe starts a setsid daemon holding daemon.lock; this one also says it was held
    probe = wf.agents / "probe.py"
    probe.write_text(probe.read_text().replace(
        "time.sleep(0.3)\n",
        "time.sleep(0.3)\nlock = open(os.path.join(paths['extra'], 'daemon.lock'), 'a')\n"
        "import fcntl\ntry:\n    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    held = 'free'\n"
        "except BlockingIOError:\n    held = 'held'\n"
        "open(os.path.join(paths['extra'], 'sleeper'), 'w').write(held)\nlock.close()\n", 1))
    env = _operator_env(tmp_path)

    done = wf.run("--json", env={**env, "PROBE_COMMON": str(wf.work / ".git")}, timeout=300)

    assert done.json()["tasks"][0]["status"] == "done", done.out
    assert (tmp_path / "extra" / "sleeper").read_text() == "held"  # it was running inside the stage
    assert _free_within(tmp_path / "extra" / "daemon.lock", 10), "the daemon outlived its stage"


def _held(lock: Path) -> bool:
    """Whether a live process holds ``lock``: how the test sees a daemon in the sandbox's PID
    namespace, whose pids mean nothing here, without looking for processes by name."""
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def _free_within(lock: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _held(lock) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _held(lock)


def test_without_the_sandbox_every_run_says_so_in_one_line(tmp_path: Path) -> None:
    wf = _setup(tmp_path)
    env = _operator_env(tmp_path, "[harn]\n\tsandbox = off\n")

    done = wf.run("--json", env={**env, "PROBE_COMMON": str(wf.work / ".git")}, timeout=300)

    warnings = [line for line in done.err.splitlines() if "without a sandbox" in line]
    assert len(warnings) == 1 and warnings[0].startswith("git harn: warning: "), done.err
    assert "harn.sandbox = off" in warnings[0]
    doc = done.json()
    assert doc["settings"]["sandbox"]["active"] is False
    results = _probe_results(wf, doc["workflowId"])
    assert results["main checkout"] == "ok"  # unconfined: what the sandbox would have refused
    assert results["max processes"] == "8192"  # the process limit holds without the sandbox too
    (wf.work / "probe").unlink(missing_ok=True)


def test_workflow_check_says_what_the_stages_run_in(tmp_path: Path) -> None:
    wf = _setup(tmp_path)
    env = _operator_env(tmp_path, "[harn]\n\tsandbox = off\n")

    shown = harn(wf.work, "workflow", "check", env=env)
    asked = harn(wf.work, "workflow", "check", "--json", env={**env, "GIT_CONFIG_GLOBAL": str(tmp_path / "none")})

    assert "sandbox: none (harn.sandbox = off)" in shown.out, shown.out
    doc = asked.json()
    assert_valid(doc, "workflow-check")
    assert doc["sandbox"]["active"] is (BWRAP_PROBLEM is None)
    assert doc["sandbox"]["mode"] == "auto"


def test_a_bad_sandbox_setting_is_a_one_line_error(tmp_path: Path) -> None:
    wf = _setup(tmp_path)
    env = _operator_env(tmp_path, "[harn]\n\tsandbox = maybe\n")

    done = wf.run("--json", env=env)

    assert done.code != 0
    assert done.err.startswith("git harn: error: harn.sandbox must be one of auto, bwrap, off"), done.err
    assert not list((wf.work / ".git").glob("worktrees/roadmap-*"))


@needs_bwrap
def test_a_worktree_past_the_disk_limit_ends_the_task_and_keeps_the_work(tmp_path: Path) -> None:
    wf = _setup(tmp_path, 'stageDiskLimit = "128k"\n')
    probe = wf.agents / "probe.py"
    probe.write_text(probe.read_text().replace(
        "os.execv(", "open('big.bin', 'wb').write(os.urandom(256 * 1024))\nos.execv(", 1))
    env = _operator_env(tmp_path)

    done = wf.run("--json", env={**env, "PROBE_COMMON": str(wf.work / ".git")}, timeout=300)

    task = done.json()["tasks"][0]
    assert (task["status"], task["fault"], task["faultKind"]) == ("config-fault", "config", "disk-limit"), task
    assert "harn.stageDiskLimit" in task["detail"]
    worktree = next((tmp_path / "worktrees").rglob("big.bin"))
    assert worktree.stat().st_size == 256 * 1024  # the work is kept where it was


@needs_bwrap
def test_the_agents_die_with_a_runner_that_is_killed(tmp_path: Path) -> None:
    """No watchdog, the runner SIGKILLed with its group: under the sandbox its agents, and a
    setsid daemon of theirs, go with it (bubblewrap's --die-with-parent, the PID namespace)."""
    from tests.kit.runners import start

    wf = _setup(tmp_path)
    lock = tmp_path / "extra" / "orphan.lock"
    probe = wf.agents / "probe.py"
    probe.write_text(probe.read_text().replace(
        "os.execv(", f"subprocess.Popen(['setsid', sys.executable, '-c', DAEMON, {str(lock)!r}, '300'])\n"
        "open(paths['extra'] + '/ready', 'w').close()\ntime.sleep(300)\nos.execv(", 1))
    env = _operator_env(tmp_path)
    runner = start(wf.work, "workflow", "run", env={**env, "HARN_WATCHDOG": "off"})
    try:
        ready = tmp_path / "extra" / "ready"
        deadline = time.monotonic() + 120
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the agent never started"
        while not _held(lock) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _held(lock)  # the daemon runs, seen from here by the lock it holds
    finally:
        runner.kill_group()
    assert _free_within(lock, 10), "the daemon outlived the runner killed with its group"


@needs_bwrap
def test_an_external_assessor_reads_its_evidence_and_writes_nothing(tmp_path: Path) -> None:
    from tests.kit.task_repo import task_branch, task_repo

    repo = task_repo(tmp_path / "t")
    task_branch(repo)
    script = tmp_path / "assessor.py"
    script.write_text(
        "import json, os, sys\n"
        "json.load(sys.stdin)\n"
        "tried = {}\n"
        f"for name, path in (('checkout', {str(repo / 'probe')!r}), ('tmp', '/tmp/assessor-probe')):\n"
        "    try:\n"
        "        open(path, 'a').close(); tried[name] = 'ok'\n"
        "    except OSError:\n"
        "        tried[name] = 'refused'\n"
        "print(json.dumps({'classification': 'adopt-partial', 'reasons': [json.dumps(tried)],"
        " 'missingEvidence': [], 'residualRisk': []}))\n")
    env = _operator_env(tmp_path)

    done = harn(repo, "assess", "roadmap-1.2", "--assessor", f"{sys.executable} {script}", "--json", env=env)

    assert done.code == 0, done.err
    assert json.loads(done.json()["reasons"][0]) == {"checkout": "refused", "tmp": "ok"}
    assert not (repo / "probe").exists()


@needs_bwrap
def test_git_harn_gates_run_confines_its_gates(tmp_path: Path) -> None:
    from tests.kit.task_repo import task_branch, task_repo

    repo = task_repo(tmp_path / "t")
    task_branch(repo)
    gate = tmp_path / "gate.py"
    gate.write_text("import sys\ntry:\n    open(sys.argv[1], 'a').close()\nexcept OSError:\n    sys.exit(3)\n")
    env = {**_operator_env(tmp_path), "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "harn.gate",
           "GIT_CONFIG_VALUE_0": f"{sys.executable} {gate} {repo / 'probe'}"}

    done = harn(repo, "gates", "run", "roadmap-1.2", "--json", env=env)

    assert done.json()["commands"][0]["exitCode"] == 3, done.out  # the main checkout was read-only to it
    assert not (repo / "probe").exists()


def _no_bwrap_env(tmp: Path) -> dict[str, str]:
    """A machine whose bwrap cannot run (as in a container that forbids namespaces)."""
    fake = tmp / "fake-bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    return {**_operator_env(tmp), "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}


def test_auto_without_a_bwrap_that_runs_goes_on_unconfined_and_says_why_once(tmp_path: Path) -> None:
    wf = _setup(tmp_path)
    env = _no_bwrap_env(tmp_path)

    done = wf.run("--json", env={**env, "PROBE_COMMON": str(wf.work / ".git")}, timeout=300)
    insisted = wf.run("--json", "--sandbox", "bwrap", env=env)

    warnings = [line for line in done.err.splitlines() if "without a sandbox" in line]
    assert len(warnings) == 1 and "cannot run here: bwrap: No permissions" in warnings[0], done.err
    assert done.json()["settings"]["sandbox"]["active"] is False
    assert insisted.code == 2
    assert insisted.err.startswith("git harn: error: --sandbox = bwrap, but "), insisted.err
    (wf.work / "probe").unlink(missing_ok=True)


def test_a_shared_bytecode_cache_is_not_handed_to_a_confined_stage(tmp_path: Path) -> None:
    """PYTHONPYCACHEPREFIX names a cache git-harn's own Python reads: read-only in the sandbox,
    so the stage goes without it (else every Python agent compiles all it imports at each start)."""
    from git_harn.workspace.sandbox import Room, wrap

    argv = wrap("/usr/bin/bwrap", Room(cwd=tmp_path), ["true"], {"PYTHONPYCACHEPREFIX": str(tmp_path)})
    plain = wrap("/usr/bin/bwrap", Room(cwd=tmp_path), ["true"], {})

    assert argv[argv.index("--unsetenv") + 1] == "PYTHONPYCACHEPREFIX" and argv[-2:] == ["--", "true"]
    assert "--unsetenv" not in plain
