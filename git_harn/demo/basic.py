"""``git harn demo``: the main job, end to end, on a throwaway repository."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

from git_harn.git.scratch import init_repository

AGENT = textwrap.dedent('''\
    """A scripted stand-in for a coding agent: edits, adds, never commits, fails."""
    import pathlib, sys
    app = pathlib.Path("app.py")
    app.write_text(app.read_text() + "\\ndef greet(name):\\n    return f'hello {name}'\\n")
    pathlib.Path("notes").mkdir(exist_ok=True)
    pathlib.Path("notes/plan.md").write_text("# Plan\\n- add greet()\\n- write tests\\n")
    pathlib.Path("test_app.py").write_text("from app import greet\\n")
    print("agent: edited app.py, wrote notes/plan.md and test_app.py; giving up (exit 1)")
    sys.exit(1)
''')

Say = Callable[[str], None]


def make_repository(root: Path) -> Path:
    project = init_repository(root / "project", {
        "app.py": "def main():\n    print('hi')\n",
        "README.md": "# demo project\n",
        ".gitignore": "__pycache__/\n",
    }, {"user.name": "Demo Operator", "user.email": "operator@example.com",
        "harn.worktreeRoot": str(root / "worktrees")})
    (root / "agent.py").write_text(AGENT)
    return project


def harn(project: Path, say: Say, *args: str, env: Mapping[str, str] | None = None) -> int:
    """Run git-harn as the operator would, showing the command (with ``env``,
    the variables it adds to this environment) and its output, stderr and
    stdout together as a terminal shows them."""
    shown_env = "".join(f"{key}={value} " for key, value in (env or {}).items())
    say(f"\n$ {shown_env}git harn {' '.join(args)}")
    done = subprocess.run([sys.executable, "-m", "git_harn", *args], cwd=project,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
                          env={**os.environ, **env} if env else None)
    if done.stdout.strip():
        say(done.stdout.rstrip("\n"))
    say(f"(exit {done.returncode})")
    return done.returncode


def run_demo(say: Say, steps: list[Callable[[Path, Say, str], None]]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="git-harn-demo-"))
    project = make_repository(root)
    say(f"demo repository: {project}")
    say("an 'agent' edits app.py, adds two files, never commits, and exits 1.")
    run_id = "demo-agent"
    harn(project, say, "run", run_id, "--", sys.executable, str(root / "agent.py"))
    say("\ncleanup kept the workspace: its only copy of the agent's work is uncommitted.")
    harn(project, say, "status")
    for step in steps:
        step(project, say, run_id)
    say(f"\nthe demo repository stays at {project}; delete {root} when done.")
    return project
