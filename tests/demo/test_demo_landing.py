"""git harn demo --workflow --land pull-request: the roadmap landed through
merge requests on a local GitLab stand-in (a bare repository's hook), no
network [F1] [F2]."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.kit.harn import git, harn


def test_the_pull_request_demo_proposes_then_reconciles_the_merges(tmp_path: Path) -> None:
    result = harn(tmp_path, "demo", "--workflow", "--land", "pull-request", env={"TMPDIR": str(tmp_path)},
                  timeout=120)
    assert result.code == 0, result.err + result.out
    found = re.search(r"^demo repository: (\S+) \(origin: (\S+), ", result.out, re.MULTILINE)
    assert found, result.out
    origin = Path(found[2])
    requests = json.loads((origin / "requests.json").read_text())
    # one per task: 1.1 and 1.3 run side by side, so either may ask first; 1.2 requires 1.1
    assert [r["iid"] for r in requests] == [1, 2, 3]
    assert {r["source"] for r in requests[:2]} == {"harnery/land/1.1", "harnery/land/1.3"}
    assert requests[2]["source"] == "harnery/land/1.2"
    assert "reconciled 1.1: merged → done" in result.out and "reconciled 1.3: merged → done" in result.out
    # main holds the maintainer's merge and squash, never a push of git-harn's own
    authors = git(origin, "log", "--format=%an", "main").split("\n")
    assert authors[:2] == ["Demo Maintainer", "Demo Maintainer"] and "Demo Operator" in authors[2:]
    assert git(origin, "for-each-ref", "--format=%(refname:short)", "refs/heads/harnery/") == "harnery/land/1.2"


def test_land_without_workflow_is_bad_input(tmp_path: Path) -> None:
    result = harn(tmp_path, "demo", "--land", "pull-request")
    assert result.code == 2 and result.err.startswith("git harn: error: ") and "--workflow" in result.err
