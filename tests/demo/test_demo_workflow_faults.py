"""git harn demo --workflow shows one infra retry that recovers and one
failed task assessed with its plan salvaged (issue 13)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.kit.harn import git, harn


def test_demo_workflow_retries_in_place_and_salvages_the_failed_plan(tmp_path: Path) -> None:
    result = harn(tmp_path, "demo", "--workflow", env={"TMPDIR": str(tmp_path)}, timeout=90)
    assert result.code == 0, result.err + result.out
    out = result.out
    project = Path(re.search(r"^demo repository: (\S+) ", out, re.MULTILINE)[1])  # type: ignore[index]
    assert "task 1.3: plan (attempt 2)" in out
    assert '"infraRetries": 1' in out and '"infraFaults": 0' in out
    assert "4 tasks: 3 done, 1 failed | salvaged artefacts on 1 branch(es)" in out
    assert "assessed roadmap-1.4: continue-manual (review-refused)" in out  # its reviewers refused it (issue 21)
    assert "- [x] 1.3 " in git(project, "show", "origin/main:docs/roadmap.md")
    salvage = next(r for r in git(project, "for-each-ref", "--format=%(refname)").split()
                   if r.startswith("refs/heads/harnery/salvage/"))
    subjects = git(project, "log", "--format=%s", f"origin/main..{salvage}").splitlines()
    assert subjects[0] == "git-harn: salvage ExecPlan artefacts of roadmap-1.4"
    assert "## Review notes" in git(project, "show", f"{subjects and salvage}:docs/execplans/1.4.md")
