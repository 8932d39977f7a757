"""git harn demo --workflow: the workflow runner's story on a throwaway repository."""

from __future__ import annotations

import re
from pathlib import Path

from tests.kit.harn import git, harn


def test_demo_workflow_lands_three_fails_one_and_names_the_next_step(tmp_path: Path) -> None:
    result = harn(tmp_path, "demo", "--workflow", env={"TMPDIR": str(tmp_path)}, timeout=90)
    assert result.code == 0, result.err + result.out
    found = re.search(r"^demo repository: (\S+) \(origin: (\S+)\)$", result.out, re.MULTILINE)
    assert found, result.out
    origin = Path(found[2])
    assert origin.is_relative_to(tmp_path)

    # exactly three new commits on the remote's main, each one squash (one parent,
    # one Harnery-Task trailer) that ticks its own box
    commits = git(origin, "rev-list", "--first-parent", "main").split()
    assert len(commits) == 5, git(origin, "log", "--oneline", "main")
    # the newest is the final remediation flush: 1.4's blocking finding became its addendum 1
    remediation, commits = commits[0], commits[1:]
    assert git(origin, "log", "-1", "--format=%(trailers:key=Harnery-Remediation,valueonly)", remediation).strip()
    assert git(origin, "diff", "--name-only", f"{remediation}^", remediation) == "docs/roadmap.md"
    assert "\n  - [ ] addendum 1: review finding (blocking) (work/1.4.txt): " in \
        git(origin, "show", f"{remediation}:docs/roadmap.md")
    landed = []
    for oid in commits[:-1]:
        assert len(git(origin, "rev-list", "--parents", "-n", "1", oid).split()) == 2  # one parent
        task = git(origin, "log", "-1", "--format=%(trailers:key=Harnery-Task,valueonly)", oid).strip()
        before = git(origin, "show", f"{oid}^:docs/roadmap.md")
        after = git(origin, "show", f"{oid}:docs/roadmap.md")
        assert f"- [ ] {task} " in before and f"- [x] {task} " in after, (task, after)
        landed.append(task)
    assert sorted(landed) == ["1.1", "1.2", "1.3"]
    assert landed.index("1.2") < landed.index("1.1")  # newest first: 1.2 landed after its requirement
    roadmap = git(origin, "show", "main:docs/roadmap.md")
    assert "- [ ] 1.4 " in roadmap and roadmap.count("- [x] ") == 3

    out = result.out
    assert "$ HARN_DEMO_REJECT=1.4 git harn workflow run" in out
    assert "4 tasks: 3 done, 1 failed" in out
    assert re.search(r"^1\.4 +failed +review +roadmap-1\.4 ", out, re.MULTILINE), out
    # the run's next step, from the facts at the end: the branch keeps committed work, so a resumed run
    assert "next for roadmap-1.4: git harn workflow run --resume-partial-branches --resume-mode continue" in out
    run_id = re.search(r"resolve: git harn reclaim (\S+)", out)  # what status advises
    assert run_id, out
    assert "$ git harn assess roadmap-1.4 --base origin/main --task 1.4" in out
    assert f"$ git harn reclaim {run_id[1]}" in out
    assert f"to harnery/salvage/{run_id[1]}" in out
    assert out.count("no workspaces") == 1  # after reclaim, nothing is left preserved
