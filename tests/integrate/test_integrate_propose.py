"""git harn integrate --land pull-request against a local bare repository as
a plain remote: the squash goes to harnery/land/<id>, never the base [F1]."""

from __future__ import annotations

import json

from git_harn.git import open_repo
from git_harn.store import proposals
from tests.integrate.test_integrate import Setup, make_task, s  # noqa: F401  (s: the fixture)
from tests.kit.harn import assert_valid, git, harn


def _propose(s: Setup, branch: str, *extra: str) -> tuple[int, dict]:  # noqa: F811
    done = harn(s.work, "integrate", branch, "--land", "pull-request", "--json", *extra)
    return done.code, json.loads(done.out)


def test_the_squash_goes_to_the_landing_branch_and_the_base_is_untouched(s: Setup) -> None:  # noqa: F811
    before = s.remote_main()
    make_task(s.work, "1.1", {"b.txt": "b\n"})
    code, report = _propose(s, "roadmap-1.1")
    assert code == 0, report
    assert_valid(report, "integration-report")
    assert report["outcome"] == "proposed" and report["ok"] is False and report["pushed"] is False
    assert s.remote_main() == before  # nothing landed [F1]
    head = git(s.remote, "rev-parse", "harnery/land/1.1")
    assert report["proposal"]["head"] == head and report["proposal"]["branch"] == "harnery/land/1.1"
    assert git(s.remote, "rev-parse", f"{head}^") == before  # one commit on the base it read
    assert "- [x] 1.1 First thing" in s.remote_file("docs/roadmap.md", head)
    assert "Harnery-Task: 1.1" in git(s.remote, "log", "-1", "--format=%B", head)
    record = proposals.read(open_repo(s.work), "1.1")
    assert record is not None and record["state"] == "open" and record["head"] == head


def test_a_second_proposal_of_the_same_judged_commit_changes_nothing(s: Setup) -> None:  # noqa: F811
    make_task(s.work, "1.1", {"b.txt": "b\n"})
    _, first = _propose(s, "roadmap-1.1")
    code, again = _propose(s, "roadmap-1.1")
    assert code == 0 and again["proposal"]["head"] == first["proposal"]["head"]
    assert git(s.remote, "for-each-ref", "--format=%(refname)", "refs/heads/harnery/").split() == [
        "refs/heads/harnery/land/1.1"]


def test_a_bad_land_mode_is_refused_with_one_line(s: Setup) -> None:  # noqa: F811
    make_task(s.work, "1.1", {"b.txt": "b\n"})
    done = harn(s.work, "integrate", "roadmap-1.1", "--land", "merge-train")
    assert done.code == 2 and "merge-train" in done.err
    assert git(s.remote, "for-each-ref", "refs/heads/harnery/") == ""
