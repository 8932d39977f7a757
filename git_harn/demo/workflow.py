"""``git harn demo --workflow``: a roadmap driven through the workflow runner,
end to end, on a throwaway repository with a local bare remote.

The stage agents are the scripted ones shipped beside this module
(``agents/plan.py``, ``implement.py``, ``review.py``). Of the four tasks,
1.1 and 1.3 land; 1.2 requires 1.1, so it is selected once 1.1 is on the
remote and lands in the same run; the review agent never approves 1.4
(named in ``HARN_DEMO_REJECT``, which the run passes on to its agents from
its own environment), in both review rounds, so 1.4 fails at review on
that refusal and its branch survives for ``assess`` and then ``reclaim`` or
``cleanup``. In the last round the refusing reviewers also leave notes in
1.4's ExecPlan, uncommitted: the run assesses the failed branch and salvages
the plan onto it. The plan agent (configured with
``--crash-first-attempt 1.3``) crashes on 1.3's first attempt: an infra fault, retried
in place, after which 1.3 lands. The demo ends with the run's page (``workflow
report``), which shows all of it on one timeline.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from git_harn.demo.basic import Say, harn
from git_harn.git import open_repo
from git_harn.git.scratch import file_text, init_repository, oneline_log
from git_harn.workflow.ledger import record
from git_harn.workflow.model.state import State

AGENTS = Path(__file__).resolve().parent / "agents"
ROADMAP_FILE = "docs/roadmap.md"
REJECTED = "1.4"
REJECT_ENV = "HARN_DEMO_REJECT"
FLAKY = "1.3"
FLAKY_FLAG = "--crash-first-attempt"
UPSTREAM = "origin/main"

ROADMAP = """\
# Roadmap

- [ ] 1.1 Add a greeting
- [ ] 1.2 Greet by name
  Requires: 1.1
- [ ] 1.3 Document the greeting
- [ ] 1.4 Rename every function at once
"""

# The gate: app.py must still compile, checked on the exact tip of each task.
GATE = "import sys; compile(open('app.py').read(), 'app.py', 'exec'); sys.exit(0)"


def config_text() -> str:
    """``.harn/workflow.toml`` for the demo: the shipped agents run with this
    Python (argv lists, never a shell), one gate, two review rounds."""
    def argv(*words: str) -> str:
        return "[" + ", ".join(json.dumps(word) for word in words) + "]"

    py = sys.executable
    return (
        "# The demo's workflow: scripted stage agents shipped with git-harn.\n"
        "[workflow]\nparallel = 2\nstageTimeout = 60\nreviewRounds = 2\n\n"
        f"[agents.plan]\ncommand = {argv(py, str(AGENTS / 'plan.py'), FLAKY_FLAG, FLAKY)}\n\n"
        f"[agents.implement]\ncommand = {argv(py, str(AGENTS / 'implement.py'))}\n\n"
        f"[agents.review]\ncommand = {argv(py, str(AGENTS / 'review.py'))}\n\n"
        '[agents.integrate]\ncommand = "builtin"\n\n'
        f"[gates]\ncommands = [{argv(py, '-c', GATE)}]\n"
    )


def make_repository(root: Path) -> Path:
    """The project, with its roadmap and workflow configuration committed and
    pushed to a bare ``origin`` beside it."""
    return init_repository(root / "project", {
        "app.py": "def main():\n    print('hi')\n",
        "README.md": "# demo project\n",
        ".gitignore": "__pycache__/\n",
        ROADMAP_FILE: ROADMAP,
        ".harn/workflow.toml": config_text(),
    }, {"user.name": "Demo Operator", "user.email": "operator@example.com",
        "harn.worktreeRoot": str(root / "worktrees")},
        message="Roadmap and workflow configuration", bare_remote=root / "origin.git")


def failed_tasks(project: Path) -> list[tuple[str, str, str, str]]:
    """(task id, branch, run id, the run's advised next command) of every
    task of the newest workflow run that did not land."""
    body = record.latest(open_repo(project)).body
    return [(str(t["taskId"]), str(t["branch"]), str(t["runId"]), str((t.get("next") or {}).get("command") or ""))
            for t in body.get("tasks", []) if not State.of(t).landed and t.get("runId")]


def show_faults_and_salvage(project: Path, say: Say) -> None:
    """What the run did about the two misbehaviours: one infra retry, one
    failed branch assessed and its plan salvaged."""
    body = record.latest(open_repo(project)).body
    say.say("")
    say.show(f"faultMetrics: {json.dumps(body.get('faultMetrics', {}))}")
    say.say(f"The crash of {FLAKY}'s plan agent said nothing about the task, so the host ran the stage again "
            "in the same worktree (attempt 2), and it landed.")
    for task in body.get("tasks", []):
        judged, salvage = task.get("assessment"), task.get("salvage")
        if not judged:
            continue
        say.say(f"\n{task['taskId']} failed at {task['stage']}: {task['detail']}")
        say.say(f"So the run assessed its surviving branch (read-only): {judged['classification']} "
                f"({', '.join(judged['reasons'])}).")
        if salvage and salvage.get("committed"):
            say.say(f"Artefact salvage committed its dirty ExecPlan onto {task['branch']} (newest below), so the "
                    "reviewers' notes survive cleanup:")
            say.command(f"git log --oneline {UPSTREAM}..{task['branch']}")
            say.show(oneline_log(project, f"{UPSTREAM}..{task['branch']}"))


def run_workflow_demo(say: Say) -> Path:
    root = Path(tempfile.mkdtemp(prefix="git-harn-demo-"))
    project = make_repository(root)
    say.say(f"demo repository: {project} (origin: {root / 'origin.git'})")
    say.say(f"its roadmap ({ROADMAP_FILE}), committed and pushed with .harn/workflow.toml:")
    say.show(ROADMAP.rstrip("\n"))
    say.say(f"\nscripted agents from {AGENTS}: plan commits an ExecPlan, implement commits the work, review "
            f"approves, except the tasks named in {REJECT_ENV}: it never approves {REJECTED}. 1.2 requires 1.1, "
            "so the run takes it once 1.1 has landed; two tasks run at once (parallel = 2).")
    say.say(f"Two misbehaviours on purpose: the plan agent ({FLAKY_FLAG} {FLAKY}) crashes on its first attempt "
            f"at {FLAKY}; and the reviewers refuse {REJECTED} in both review rounds, the second time scribbling "
            "their notes in its ExecPlan, uncommitted.")
    harn(project, say, "workflow", "run", env={REJECT_ENV: REJECTED})
    show_faults_and_salvage(project, say)

    say.say("\nthe result is kept as a record under refs/harnery/workflows/, for 'workflow show' in any clone:")
    harn(project, say, "workflow", "list")
    say.say(f"\nwhat landed on {UPSTREAM}: one squash commit per task that passed review, each ticking its box "
            "(and the remediation commit that turned the reviewers' blocking finding into an addendum):")
    say.say("")
    say.command(f"git log --oneline {UPSTREAM}")
    say.show(oneline_log(project, UPSTREAM))
    say.say("")
    say.command(f"git show {UPSTREAM}:{ROADMAP_FILE}")
    say.show(file_text(project, UPSTREAM, ROADMAP_FILE))

    say.say(f"\ncleanup preserved the failed task's workspace: {REJECTED}'s commits never landed.")
    harn(project, say, "status")
    for task_id, branch, run_id, advised in failed_tasks(project):
        say.say(f"\nthe run's own next step for {branch} is the one it printed ({advised}): it keeps the "
                f"committed work and goes on from the ExecPlan. Here its reviewers would refuse {task_id} again "
                f"({REJECT_ENV}), so the demo takes the other way: first assess it against the base the run used "
                "(a report; it changes nothing).")
        harn(project, say, "assess", branch, "--base", UPSTREAM, "--task", task_id)
        say.say(f"\nthe assessor weighs git evidence and the run's review note on the work (plan COMPLETE; the "
                f"gates passed; its reviewers refused {task_id}): continue-manual, review-refused, so the call is "
                f"the operator's. As status advises, give the work a way out: reclaim salvages it to "
                f"harnery/salvage/{run_id} and releases the workspace.")
        harn(project, say, "reclaim", run_id)
        say.say("")
        say.command(f"git log --oneline {UPSTREAM}..harnery/salvage/{run_id}")
        say.show(oneline_log(project, f"{UPSTREAM}..harnery/salvage/{run_id}"))
        harn(project, say, "status")
    say.say("\nthe morning report: the run as one page (timeline, tasks, findings, totals), from its record "
            "alone, written beside the run's stage files; open it in a browser:")
    harn(project, say, "workflow", "report")
    for page in sorted((project / ".git" / "harnery" / "workflow").glob("*/report.html"))[-1:]:
        say.say(f"\nopen it from its file path: {page.as_uri()}")
    say.say(f"\nthe demo repository stays at {project}; delete {root} when done.")
    return project
