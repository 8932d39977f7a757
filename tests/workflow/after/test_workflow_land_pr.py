"""workflow.land = "pull-request" against a local bare repository as a plain
remote (no forge: the landing branch is the proposal) [F1] [F2].

A run proposes each task from harnery/land/<id> and lands nothing on the
base; the test then merges on the "forge" as a maintainer would (a merge
commit, a squash merge, a rebase merge) or closes the request (deletes the
branch unmerged), and the next run reconciles: merged → done and what
required it starts; closed → refused with its branch kept; open → held.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit.harn import assert_valid, git, harn
from tests.kit.runners import at_failpoint
from tests.kit.workflow_repo import WF, config_text, setup

ROADMAP = "# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n  Requires: 1.1\n- [ ] 1.3 Third\n"
PR = ("--land", "pull-request", "--json")


def _run(wf: WF, *extra: str) -> dict:
    done = wf.run(*PR, *extra)
    assert done.code == 0, (done.err, done.out[-3000:])
    doc = done.json()
    assert_valid(doc, "workflow-result")
    return doc


def _landing(wf: WF) -> dict[str, str]:
    out = git(wf.remote, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/harnery/")
    return dict(line.split() for line in out.splitlines())


def _maintainer(wf: WF) -> Path:
    """A clone of the forge's repository, where the test merges as a maintainer would."""
    clone = wf.tmp / "maintainer"
    if not clone.exists():
        git(wf.tmp, "clone", "-q", str(wf.remote), str(clone))
        git(clone, "config", "user.name", "Maintainer")
        git(clone, "config", "user.email", "maintainer@example.invalid")
    git(clone, "fetch", "-q", "origin")
    git(clone, "switch", "-q", "-C", "main", "origin/main")
    return clone


def _by_id(doc: dict) -> dict[str, dict]:
    return {t["taskId"]: t for t in doc["tasks"]}


def test_a_roadmap_run_proposes_each_task_and_the_next_run_reconciles_every_merge(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap=ROADMAP)
    before = git(wf.remote, "rev-parse", "main")
    first = _run(wf)
    tasks = _by_id(first)
    assert sorted(tasks) == ["1.1", "1.3"]  # 1.2 waits for 1.1, which is only proposed
    for task_id, task in tasks.items():
        assert task["status"] == "proposed" and task["state"] == "proposed", task
        assert task["proposal"]["branch"] == f"harnery/land/{task_id}"
        assert task["next"]["command"] is None
    assert git(wf.remote, "rev-parse", "main") == before  # nothing landed by itself [F1]
    landing = _landing(wf)
    assert sorted(landing) == ["harnery/land/1.1", "harnery/land/1.3"]
    assert {s["taskId"]: s["reason"] for s in first["skipped"]}["1.2"] == "waiting-for-requirements"

    # the next run with nothing merged: both held, nothing started, nothing failed
    held = _run(wf)
    assert held["tasks"] == [] and {s["taskId"]: s["reason"] for s in held["skipped"]} == {
        "1.1": "proposed", "1.2": "waiting-for-requirements", "1.3": "proposed"}
    assert _landing(wf) == landing  # no second request

    # the maintainer merges 1.1 with a merge commit and squash-merges 1.3 on the forge
    clone = _maintainer(wf)
    git(clone, "merge", "-q", "--no-ff", "-m", "Merge pull request: 1.1", "origin/harnery/land/1.1")
    message = git(clone, "log", "-1", "--format=%B", "origin/harnery/land/1.3")
    git(clone, "merge", "-q", "--squash", "origin/harnery/land/1.3")
    git(clone, "commit", "-q", "-m", message)
    git(clone, "push", "-q", "origin", "main")

    second = _run(wf)
    seen = {p["taskId"]: p for p in second["proposals"]}
    assert seen["1.1"]["became"] == "done" and seen["1.3"]["became"] == "done", seen
    assert sorted(_by_id(second)) == ["1.2"] and _by_id(second)["1.2"]["status"] == "proposed"  # dependent started
    for key in ("1.1", "1.3"):
        assert git(wf.work, "rev-parse", "-q", "--verify", f"refs/harnery/integrated/{key}", check=False)
    assert sorted(_landing(wf)) == ["harnery/land/1.2"]  # the merged ones' branches went

    # a rebase merge of 1.2: its commit replayed onto main
    clone = _maintainer(wf)
    git(clone, "cherry-pick", "origin/harnery/land/1.2")
    git(clone, "push", "-q", "origin", "main")
    third = _run(wf)
    assert [(p["taskId"], p["became"]) for p in third["proposals"]] == [("1.2", "done")]
    assert third["tasks"] == [] and _landing(wf) == {}
    roadmap = wf.remote_file("docs/roadmap.md")
    assert roadmap.count("- [x]") == 3


def test_a_closed_request_ends_refused_with_its_branch_kept(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    first = _run(wf)
    head = first["tasks"][0]["proposal"]["head"]
    git(wf.remote, "update-ref", "-d", "refs/heads/harnery/land/1.1", head)  # closed on the forge, unmerged
    second = _run(wf)
    seen = second["proposals"]
    assert [(p["taskId"], p["became"], p["state"]) for p in seen] == [("1.1", "refused", "closed")]
    assert "deleted" in seen[0]["how"]
    kept = git(wf.work, "rev-parse", "roadmap-1.1")
    assert git(wf.work, "rev-parse", f"{kept}^{{tree}}") != git(wf.work, "rev-parse", "origin/main^{tree}")
    assert {s["taskId"]: s["reason"] for s in second["skipped"]} == {"1.1": "surviving-branch"}
    assert second["tasks"] == []


def test_push_mode_is_unchanged_by_the_setting_s_default(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    done = wf.run("--json")
    assert done.code == 0, done.err
    assert done.json()["tasks"][0]["status"] == "done" and _landing(wf) == {}
    assert "- [x] 1.1" in wf.remote_file("docs/roadmap.md")


def test_the_setting_in_the_file_chooses_pull_request_and_a_bad_value_is_refused(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n",
               config=config_text(agents, workflow='stageTimeout = 30\nland = "pull-request"\n'))
    done = wf.run("--json")
    assert done.code == 0, done.err
    assert done.json()["tasks"][0]["status"] == "proposed" and list(_landing(wf)) == ["harnery/land/1.1"]
    bad = harn(wf.work, "workflow", "run", "--land", "sideways")
    assert bad.code == 2 and bad.err.count("\n") == 1 or "sideways" in bad.err


@pytest.mark.parametrize("point", ["propose-after-push", "propose-after-open", "propose-before-record"])
def test_a_run_killed_at_each_proposal_failpoint_reruns_to_one_request(tmp_path: Path, point: str) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    before = git(wf.remote, "rev-parse", "main")
    at_failpoint(wf.work, point, "workflow", "run", "--land", "pull-request").kill_group()
    rerun = _run(wf)
    assert git(wf.remote, "rev-parse", "main") == before
    assert list(_landing(wf)) == ["harnery/land/1.1"]
    assert {s["taskId"]: s["reason"] for s in rerun["skipped"]} == {"1.1": "proposed"}, rerun["skipped"]
    assert rerun["tasks"] == []
    again = _run(wf)  # and once more: still one, still held
    assert list(_landing(wf)) == ["harnery/land/1.1"] and again["tasks"] == []
    killed = [w for w in harn(wf.work, "workflow", "list", "--json").json()["workflows"]
              if w["workflowId"] not in (rerun["workflowId"], again["workflowId"])]
    [task] = harn(wf.work, "workflow", "show", killed[0]["workflowId"], "--json").json()["tasks"]
    assert task["state"] == "proposed" and "runner died after it proposed" in task["detail"]  # settled as such


def test_a_proposal_the_moved_base_no_longer_takes_is_rebuilt_on_it_with_a_lease(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n")  # neighbouring boxes
    first = _run(wf)
    heads = {t["taskId"]: t["proposal"]["head"] for t in first["tasks"]}
    clone = _maintainer(wf)
    git(clone, "merge", "-q", "--no-ff", "-m", "Merge 1.1", "origin/harnery/land/1.1")
    git(clone, "push", "-q", "origin", "main")
    second = _run(wf)  # 1.2's tick now conflicts with 1.1's on the roadmap: made again on the new main
    seen = {p["taskId"]: p for p in second["proposals"]}
    assert seen["1.1"]["became"] == "done" and seen["1.2"]["became"] == "held" and "rebuilt" in seen["1.2"]["how"]
    moved = git(wf.remote, "rev-parse", "harnery/land/1.2")
    assert moved != heads["1.2"] and git(wf.remote, "rev-parse", f"{moved}^") == git(wf.remote, "rev-parse", "main")
    assert "- [x] 1.1 First\n- [x] 1.2 Second" in wf.remote_file("docs/roadmap.md", moved)
    assert wf.remote_file("work-1.2.txt", moved) == wf.remote_file("work-1.2.txt", heads["1.2"])
    clone = _maintainer(wf)
    git(clone, "merge", "-q", "--ff-only", "origin/harnery/land/1.2")
    git(clone, "push", "-q", "origin", "main")
    third = _run(wf)
    assert [(p["taskId"], p["became"]) for p in third["proposals"]] == [("1.2", "done")]


def test_a_proposal_that_conflicts_with_the_moved_base_halts_naming_the_conflict(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    _run(wf)
    wf.push_change({"work-1.1.txt": "someone else's line\n"}, "a maintainer writes the same file")
    second = _run(wf)
    [seen] = second["proposals"]
    assert seen["became"] == "halted" and seen["state"] == "conflict" and "work-1.1.txt" in seen["how"]
    assert second["tasks"] == [] and "work-1.1.txt" in {s["taskId"]: s["detail"] for s in second["skipped"]}["1.1"]
    events = git(wf.work, "rev-list", "--count", "refs/harnery/proposals/1.1")
    third = _run(wf)  # still held, never started again
    assert third["tasks"] == [] and third["proposals"][0]["became"] == "halted"
    assert git(wf.work, "rev-list", "--count", "refs/harnery/proposals/1.1") == events  # recorded once


def test_list_and_show_name_each_proposal_with_its_request_and_state(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    first = _run(wf)
    listed = harn(wf.work, "workflow", "list", "--json")
    assert listed.code == 0, listed.err
    assert_valid(listed.json(), "workflow-list")
    [proposal] = listed.json()["proposals"]
    assert (proposal["taskId"], proposal["state"], proposal["branch"]) == ("1.1", "open", "harnery/land/1.1")
    assert proposal["ageSeconds"] is not None
    people = harn(wf.work, "workflow", "list")
    assert "harnery/land/1.1 on origin" in people.out and "open" in people.out
    shown = harn(wf.work, "workflow", "show", first["workflowId"])
    assert "proposal 1.1: harnery/land/1.1 (open," in shown.out, shown.out
    clone = _maintainer(wf)  # merged on the forge: list itself reconciles it, with no run
    git(clone, "merge", "-q", "--ff-only", "origin/harnery/land/1.1")
    git(clone, "push", "-q", "origin", "main")
    after = harn(wf.work, "workflow", "list", "--json").json()["proposals"]
    assert [(p["taskId"], p["state"]) for p in after] == [("1.1", "merged")]
    shown = harn(wf.work, "workflow", "show", first["workflowId"], "--json").json()
    assert shown["tasks"][0]["proposal"]["state"] == "merged"
    assert harn(wf.work, "workflow", "list", "--json").json()["proposals"] == []  # ended: the live listing is done
    every = harn(wf.work, "workflow", "list", "--all", "--json")
    assert_valid(every.json(), "workflow-list")
    assert [(p["taskId"], p["state"]) for p in every.json()["proposals"]] == [("1.1", "merged")]


def test_doctor_names_old_proposals_and_landing_branches_whose_request_ended(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    _run(wf)
    young = harn(wf.work, "doctor", "--json", "--older-than", "1d").json()
    assert "proposal-open-old" not in {f["code"] for f in young["findings"]}
    old = harn(wf.work, "doctor", "--json", "--older-than", "0s")
    assert_valid(old.json(), "doctor")
    [finding] = [f for f in old.json()["findings"] if f["code"] == "proposal-open-old"]
    assert "harnery/land/1.1" in finding["what"] and finding["fix"] == "git harn workflow list"
    clone = _maintainer(wf)  # merged on the forge, the branch left there
    git(clone, "merge", "-q", "--ff-only", "origin/harnery/land/1.1")
    git(clone, "push", "-q", "origin", "main")
    head = git(wf.remote, "rev-parse", "harnery/land/1.1")
    _run(wf)  # reconciled: merged, and git-harn deletes the branch it still holds
    assert _landing(wf) == {}
    git(wf.remote, "update-ref", "refs/heads/harnery/land/1.1", head)  # as if the delete had failed
    ended = harn(wf.work, "doctor", "--json", "--remote", "origin").json()
    [left] = [f for f in ended["findings"] if f["code"] == "landing-branch-ended"]
    assert left["fix"] == "git push origin --delete harnery/land/1.1" and left["subject"]["state"] == "merged"


def test_settle_finishes_the_proposal_a_killed_run_left_half_made(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    runner = at_failpoint(wf.work, "propose-after-push", "workflow", "run", "--land", "pull-request")
    runner.kill_group()
    [workflow_id] = git(wf.work, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/harnery/workflows/").split()
    settled = harn(wf.work, "workflow", "settle", workflow_id, "--json")
    assert settled.code in (0, 3), settled.err
    assert_valid(settled.json(), "workflow-settle")
    assert [(p["taskId"], p["state"], p["became"]) for p in settled.json()["proposals"]] == [("1.1", "open", "held")]
    assert list(_landing(wf)) == ["harnery/land/1.1"]
    listed = harn(wf.work, "workflow", "list", "--json").json()
    assert [p["state"] for p in listed["proposals"]] == ["open"]


def _claims(wf: WF) -> list[str]:
    return git(wf.remote, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/harnery/claims/").split()


def test_a_proposed_task_keeps_its_claim_until_its_request_is_merged_or_closed(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n- [ ] 1.2 Second\n")
    first = _run(wf, "--claims")
    assert sorted(t["taskId"] for t in first["tasks"]) == ["1.1", "1.2"]
    assert _claims(wf) == ["1.1", "1.2"]  # kept: no other machine takes a proposed task [F1]
    assert _run(wf, "--claims")["tasks"] == [] and _claims(wf) == ["1.1", "1.2"]
    clone = _maintainer(wf)
    git(clone, "merge", "-q", "--ff-only", "origin/harnery/land/1.1")
    git(clone, "push", "-q", "origin", "main")
    head = _landing(wf)["harnery/land/1.2"]
    git(wf.remote, "update-ref", "-d", "refs/heads/harnery/land/1.2", head)  # 1.2's request closed
    third = _run(wf, "--claims")
    assert {p["taskId"]: p["became"] for p in third["proposals"]} == {"1.1": "done", "1.2": "refused"}
    assert _claims(wf) == []  # merged: the base ticks it; closed: released


def test_the_next_step_of_a_pull_request_run_given_by_flag_keeps_the_flag(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    wf.script({"1.1:implement": "break"})  # the gates fail in every round
    done = wf.run("--land", "pull-request", "--json")
    [task] = done.json()["tasks"]
    assert task["status"] == "failed" and task["next"]["command"].startswith("git harn workflow run")
    assert "--land pull-request" in task["next"]["command"]  # a relaunch as printed never pushes to the base


def test_a_squash_merge_whose_message_lost_the_trailer_is_told_by_its_patch_id(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    _run(wf)
    clone = _maintainer(wf)
    git(clone, "merge", "-q", "--squash", "origin/harnery/land/1.1")
    git(clone, "commit", "-q", "-m", "First (#1)")  # the forge's own message, no trailer
    git(clone, "push", "-q", "origin", "main")
    seen = _run(wf)["proposals"]
    assert [(p["taskId"], p["became"]) for p in seen] == [("1.1", "done")] and "patch-id" in seen[0]["how"]


def test_remediation_in_pull_request_mode_goes_to_a_landing_branch_never_the_base(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    wf.script({"1.1:review": "never-approve"})  # its blocking findings become an addendum
    before = git(wf.remote, "rev-parse", "main")
    done = wf.run("--land", "pull-request", "--json")
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert doc["remediation"]["state"] == "proposed", doc["remediation"]
    assert git(wf.remote, "rev-parse", "main") == before  # never the base [F1]
    branch = f"harnery/land/remediation-{doc['workflowId']}"
    assert git(wf.remote, "rev-parse", branch) == doc["remediation"]["commit"]
    assert "addendum 1: review finding (blocking)" in wf.remote_file("docs/roadmap.md", branch)


def test_an_addendum_is_proposed_from_its_own_landing_branch_and_reconciled(tmp_path: Path) -> None:
    from tests.kit.addenda_repo import make

    roadmap = "# Roadmap\n\n- [x] 1.1 First thing\n  - [ ] addendum 1: follow up\n"
    wf = make(tmp_path, roadmap, workflow='stageTimeout = 30\nland = "pull-request"\n')
    first = wf.run("--json")
    assert first.code == 0, first.err
    [task] = first.json()["tasks"]
    assert (task["addendum"], task["status"]) == (1, "proposed")
    assert task["proposal"]["branch"] == "harnery/land/1.1-addendum-1"
    assert wf.run("--json").json()["tasks"] == []  # held
    clone = _maintainer(wf)
    git(clone, "merge", "-q", "--no-ff", "-m", "Merge", "origin/harnery/land/1.1-addendum-1")
    git(clone, "push", "-q", "origin", "main")
    third = _run(wf)
    assert [(p["key"], p["became"]) for p in third["proposals"]] == [("1.1-addendum-1", "done")]
    assert "  - [x] addendum 1: follow up" in wf.remote_file("docs/roadmap.md")


def test_the_notifier_is_told_each_proposal_with_its_request(tmp_path: Path) -> None:
    from tests.workflow.run.test_workflow_notify import notifier, told

    command, out = notifier(tmp_path)
    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    done = wf.run("--land", "pull-request", "--json", "--notify", command)
    assert done.code == 0, done.err
    events = [seen["event"] for seen in told(out, 2)]
    proposed = [e for e in events if e["event"] == "task-needs-person"]
    assert [(e["reason"], e["taskId"]) for e in proposed] == [("proposed", "1.1")]
    assert "harnery/land/1.1" in proposed[0]["what"]  # where the request is
