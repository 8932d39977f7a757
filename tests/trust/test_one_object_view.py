"""One object view (issue 44, item 2) [T1] [T4]: git reads through
``refs/replace/*``, libgit2 never does. Every git git-harn runs, and every
gate and agent it starts, has ``GIT_NO_REPLACE_OBJECTS=1``: a look-alike put
in place of the tip is not what the gates judge."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.kit.harn import git, harn
from tests.kit.task_repo import task_branch, task_repo

# Writes the subject of the commit HEAD names, as git shows it to the gate.
GATE = "import subprocess, sys\nopen(sys.argv[1], 'w').write(subprocess.run(['git', 'log', '-1', '--format=%s'], " \
       "capture_output=True, text=True, check=True).stdout)\n"


def test_a_gate_sees_the_tip_not_the_look_alike_a_replace_ref_shows(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, message="the real tip")
    tip = git(repo, "rev-parse", "roadmap-1.2").strip()
    look_alike = git(repo, "commit-tree", "-p", "main", "-m", "a look-alike",
                     git(repo, "rev-parse", "main^{tree}").strip()).strip()
    git(repo, "replace", tip, look_alike)
    assert git(repo, "log", "-1", "--format=%s", "roadmap-1.2").strip() == "a look-alike"  # what git shows
    gate, seen = tmp_path / "gate.py", tmp_path / "seen.txt"
    gate.write_text(GATE)
    git(repo, "config", "harn.gate", f"{sys.executable} {gate} {seen}")

    done = harn(repo, "gates", "run", "roadmap-1.2", "--json")

    assert done.code == 0, done.err
    assert done.json()["commit"] == tip
    assert seen.read_text().strip() == "the real tip"
