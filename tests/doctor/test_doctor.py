"""git harn doctor: every finding built for real, reported with its kind,
size and command; each printed command run exactly as printed fixes its
finding; --fix fixes exactly the safe ones (issue 26) [L3] [P1] [P6]."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from git_harn.doctor.findings import WORKSPACE, Finding, grouped
from git_harn.git import open_repo
from git_harn.git.objects import to_oid
from git_harn.store.notes import merge_note
from git_harn.workspace.paths import repo_key
from tests.kit.harn import assert_error_document, assert_valid, git, harn, make_repo, record, ref, wait_for
from tests.kit.runners import at_failpoint, start
from tests.kit.workflow_repo import setup


def _repo(tmp_path: Path, hooks: bool = True) -> Path:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "wt"))
    if hooks:
        assert harn(repo, "hooks", "install").code == 0
    return repo


def _home(repo: Path) -> Path:
    return Path(git(repo, "config", "harn.worktreeRoot")) / repo_key(open_repo(repo))


def _doctor(repo: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = harn(repo, "doctor", "--json", *args)
    assert done.code in (0, 1), done.err
    document = done.json()
    assert_valid(document, "doctor")
    return done.code, document


def _codes(document: dict[str, Any]) -> list[str]:
    return [f["code"] for f in document["findings"]]


def _one(document: dict[str, Any], code: str) -> dict[str, Any]:
    found = [f for f in document["findings"] if f["code"] == code]
    assert len(found) == 1, document["findings"]
    return found[0]


def _run_as_printed(repo: Path, command: str) -> None:
    """The advised command, word for word as doctor printed it."""
    argv = shlex.split(command)
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{command}: {done.stderr}"


def _start(repo: Path, run_id: str) -> Path:
    done = harn(repo, "start", run_id)
    assert done.code == 0, done.err
    return Path(record(repo, run_id)["path"])


def test_a_clean_clone_has_nothing_to_report(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _start(repo, "busy")  # an active workspace in use is no finding
    code, document = _doctor(repo)
    assert (code, document["findings"], document["outcome"]) == (0, [], "doctor-clean")
    assert document["records"] == {"live": 1, "ended": 0, "unreadable": 0}
    human = harn(repo, "doctor")
    assert human.code == 0 and human.out.splitlines()[0].startswith("0 finding(s), 0 fixable")


def test_a_folder_removed_by_hand_is_reported_and_its_command_settles_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    path = _start(repo, "gone1")
    subprocess.run(["rm", "-rf", str(path)], check=True)
    code, document = _doctor(repo)
    found = _one(document, "workspace-gone")
    assert code == 1 and found["kind"] == "workspace" and found["fixable"]
    assert found["fix"] == "git harn cleanup gone1 --yes"
    _run_as_printed(repo, found["fix"])
    assert record(repo, "gone1")["state"] == "already_gone"
    assert _doctor(repo) == (0, _doctor(repo)[1]) and _codes(_doctor(repo)[1]) == []


def _preserve(repo: Path, run_id: str, size: int) -> Path:
    path = _start(repo, run_id)
    with open(path / "big.bin", "wb") as handle:
        chunk = b"\1" * (1 << 20)
        for _ in range(size >> 20):
            handle.write(chunk)
    assert harn(repo, "cleanup", run_id, "--yes").code == 3
    return path


def test_preserved_workspaces_come_largest_first_with_their_size_and_reclaim_fixes_them(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _preserve(repo, "small", 1 << 20)
    _preserve(repo, "large", 200 << 20)
    code, document = _doctor(repo)
    preserved = [f for f in document["findings"] if f["code"] == "workspace-preserved"]
    assert [f["what"] for f in preserved] == ["run large", "run small"]
    assert preserved[0]["diskBytes"] >= 200 << 20 and preserved[1]["diskBytes"] < 10 << 20
    assert document["summary"]["workspaceDiskBytes"] >= 201 << 20 and not preserved[0]["fixable"]
    human = harn(repo, "doctor")
    assert human.code == 1 and "MiB" in human.out.splitlines()[0]
    assert all(len(line) <= 80 or line.lstrip().startswith("fix") for line in human.out.splitlines())
    assert human.out.index("run large") < human.out.index("run small")
    _run_as_printed(repo, preserved[0]["fix"])
    assert ref(repo, "refs/heads/harnery/salvage/large") is not None  # the work is kept
    assert "run large" not in [f["what"] for f in _doctor(repo)[1]["findings"]]


def test_a_locked_worktree_on_an_unplugged_path_is_away_not_gone(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    path = _start(repo, "usb")
    git(repo, "worktree", "lock", "--reason", "on the usb disk", str(path))
    os.rename(path, tmp_path / "unplugged")
    _, document = _doctor(repo)
    found = _one(document, "workspace-unavailable")
    assert not found["fixable"] and "usb disk" in found["why"]
    _run_as_printed(repo, found["fix"])  # unlocked: gone for good, which cleanup settles
    after = _doctor(repo)[1]
    assert "workspace-unavailable" not in _codes(after) and "workspace-gone" in _codes(after)


def test_a_killed_run_is_found_and_cleanup_releases_its_clean_workspace(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    mark = tmp_path / "started"
    runner = start(repo, "run", "killed1", "--", sys.executable, "-c",
                   f"import time, pathlib; pathlib.Path({str(mark)!r}).touch(); time.sleep(120)")
    wait_for(mark)
    runner.kill_group()
    _, document = _doctor(repo)
    found = _one(document, "workspace-run-killed")
    assert found["fixable"] and found["fix"] == "git harn cleanup killed1 --yes"
    assert "lock-dead" not in _codes(document)  # its run lock is its cleanup's
    _run_as_printed(repo, found["fix"])
    assert record(repo, "killed1")["state"] == "released"
    assert _codes(_doctor(repo)[1]) == []


LOCK_HOLDER = """
import sys, time, pathlib
from git_harn.git import open_repo
from git_harn.git.objects import to_oid
from git_harn.store.notes import merge_note
from git_harn.store.locks import hold_merge
with hold_merge(open_repo(pathlib.Path('.')), "integrate (doctor test)", 0):
    pathlib.Path(sys.argv[1]).touch()
    time.sleep(120)
"""


def _dead_merge_lock(repo: Path, tmp_path: Path) -> Path:
    mark = tmp_path / "holding"
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(mark)], cwd=repo, start_new_session=True)
    wait_for(mark)
    holder.kill()
    holder.wait()
    lock = repo / ".git" / "harnery" / "locks" / "merge.lock"
    assert lock.exists()
    return lock


def test_a_lock_whose_holder_was_killed_is_reported_and_removed_by_its_command(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    lock = _dead_merge_lock(repo, tmp_path)
    _, document = _doctor(repo)
    found = _one(document, "lock-dead")
    assert found["kind"] == "lock" and found["what"] == str(lock) and found["fixable"]
    _run_as_printed(repo, found["fix"])
    assert not lock.exists() and _codes(_doctor(repo)[1]) == []


def test_a_live_holders_lock_is_no_finding(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    mark = tmp_path / "holding"
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(mark)], cwd=repo, start_new_session=True)
    try:
        wait_for(mark)
        assert _codes(_doctor(repo)[1]) == []
    finally:
        holder.kill()
        holder.wait()


def test_an_old_git_lock_file_with_no_git_at_work_is_left_behind(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    lock = repo / ".git" / "index.lock"
    lock.write_bytes(b"")
    assert "git-lock-left" not in _codes(_doctor(repo)[1])  # fresh: maybe a live git's
    old = time.time() - 120
    os.utime(lock, (old, old))
    found = _one(_doctor(repo)[1], "git-lock-left")
    _run_as_printed(repo, found["fix"])
    assert not lock.exists()


def test_registrations_and_folders_no_record_explains(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    home = _home(repo)
    stray = home / "stray"
    git(repo, "worktree", "add", "-q", "--detach", str(stray))
    subprocess.run(["rm", "-rf", str(stray)], check=True)
    (home / "leftover").mkdir(parents=True)
    (home / "leftover" / "notes.txt").write_text("x" * 10000)
    _, document = _doctor(repo)
    orphan = _one(document, "registration-orphan")
    folder = _one(document, "folder-unregistered")
    assert orphan["fixable"] and not folder["fixable"] and folder["diskBytes"] >= 10000
    _run_as_printed(repo, orphan["fix"])
    assert "registration-orphan" not in _codes(_doctor(repo)[1])
    _run_as_printed(repo, folder["fix"])
    assert _codes(_doctor(repo)[1]) == []


def test_missing_hooks_and_old_salvage_are_reported_never_fixed(tmp_path: Path) -> None:
    repo = _repo(tmp_path, hooks=False)
    _preserve(repo, "old", 1 << 20)
    assert harn(repo, "reclaim", "old").code == 0
    _, document = _doctor(repo)
    assert _codes(document) == ["hooks-not-current"]  # 30 days by default: the salvage is young
    _, document = _doctor(repo, "--older-than", "0")
    salvage = _one(document, "salvage-old")
    assert salvage["what"] == "harnery/salvage/old" and not salvage["fixable"]
    fixed = harn(repo, "doctor", "--fix", "--yes", "--older-than", "0", "--json")
    assert fixed.code == 1 and fixed.json()["fixed"] == []
    assert ref(repo, "refs/heads/harnery/salvage/old") is not None
    _run_as_printed(repo, _one(document, "hooks-not-current")["fix"])
    assert _codes(_doctor(repo)[1]) == []


@pytest.mark.parametrize("args", [["--older-than", "soon"], ["--yes"], ["--fix"]])
def test_bad_input_exits_2_and_changes_nothing(tmp_path: Path, args: list[str]) -> None:
    repo = _repo(tmp_path)
    lock = _dead_merge_lock(repo, tmp_path)
    done = harn(repo, "doctor", "--json", *args)
    assert done.code == 2 and done.err.startswith("git harn: error: ")
    assert_error_document(done.out, 2)
    assert lock.exists()


def test_a_dead_runner_is_found_and_settle_closes_it(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    assert harn(wf.work, "hooks", "install").code == 0
    runner = at_failpoint(wf.work, "workflow-stage-implement", "workflow", "run")
    runner.kill_group()
    _, document = _doctor(wf.work)
    found = _one(document, "workflow-runner-gone")
    assert found["kind"] == "workflow" and found["fix"].startswith("git harn workflow settle wf-")
    assert "lock-dead" not in _codes(document)  # the dead run's locks are its settling's
    _run_as_printed(wf.work, found["fix"])
    after = _doctor(wf.work)[1]
    assert not [c for c in _codes(after) if c.startswith("workflow") or c == "runner-lease-left"], after


def test_a_killed_sync_leaves_staging_refs_which_their_command_drops(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    assert harn(wf.work, "hooks", "install").code == 0
    _start(wf.work, "shared")
    runner = at_failpoint(wf.work, "push-staged", "sync")
    runner.kill_group()
    _, document = _doctor(wf.work)
    staged = [f for f in document["findings"] if f["code"] == "staging-ref-left"]
    assert staged and all(f["fixable"] and f["what"].startswith("refs/harnery-push/") for f in staged)
    for found in staged:
        _run_as_printed(wf.work, found["fix"])
    assert "staging-ref-left" not in _codes(_doctor(wf.work)[1])


def _many_findings(repo: Path, tmp_path: Path) -> None:
    """Safe ones (a vanished folder, a killed clean run, a dead holder's lock,
    a registration whose folder is gone) and ones left on purpose (preserved
    work, a folder nobody registered)."""
    vanished = _start(repo, "vanished")
    mark = tmp_path / "started"
    runner = start(repo, "run", "killed2", "--", sys.executable, "-c",
                   f"import time, pathlib; pathlib.Path({str(mark)!r}).touch(); time.sleep(120)")
    wait_for(mark)
    runner.kill_group()
    _dead_merge_lock(repo, tmp_path)
    stray = _home(repo) / "stray"
    git(repo, "worktree", "add", "-q", "--detach", str(stray))
    subprocess.run(["rm", "-rf", str(stray)], check=True)
    _preserve(repo, "kept", 1 << 20)
    (_home(repo) / "by-hand").mkdir()
    subprocess.run(["rm", "-rf", str(vanished)], check=True)  # last: a later start would settle it


SAFE = {"workspace-gone", "workspace-run-killed", "lock-dead", "registration-orphan"}
ON_PURPOSE = ["folder-unregistered", "workspace-preserved"]


def _timeless(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in f.items() if k != "ageSeconds"} for f in findings]


def test_the_order_of_findings_does_not_flip_as_a_second_passes() -> None:
    """A finding of no known age (a registration whose folder is gone) and one
    that is zero seconds old keep their order when, at the next doctor, the
    second is one second old: --fix applies them in the order the report showed."""
    def order(age: int) -> list[str]:
        gone = Finding(WORKSPACE, "workspace-gone", "vanished", "", None, ageSeconds=age)
        orphan = Finding(WORKSPACE, "registration-orphan", "/a/stray", "", None)
        return [f.what for _, group in grouped([gone, orphan]) for f in group]

    assert order(0) == order(1) == ["vanished", "/a/stray"]


def test_fix_fixes_exactly_the_safe_ones_and_a_second_doctor_shows_what_was_left(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _many_findings(repo, tmp_path)
    _, before = _doctor(repo)
    assert {f["code"] for f in before["findings"] if f["fixable"]} == SAFE
    fixed = harn(repo, "doctor", "--fix", "--yes", "--json")
    document = fixed.json()
    assert_valid(document, "doctor")
    assert fixed.code == 1 and sorted(a["code"] for a in document["fixed"]) == sorted(SAFE)
    assert all(a["ok"] for a in document["fixed"]), document["fixed"]
    assert [a["fix"] for a in document["fixed"]] == [f["fix"] for f in before["findings"] if f["fixable"]]
    assert sorted(_codes(document)) == ON_PURPOSE
    assert record(repo, "vanished")["state"] == "already_gone" and record(repo, "killed2")["state"] == "released"
    assert record(repo, "kept")["state"] == "preserved_dirty"
    assert (_home(repo) / "by-hand").is_dir()
    assert sorted(_codes(_doctor(repo)[1])) == ON_PURPOSE


def test_fix_killed_midway_leaves_a_state_doctor_reports_correctly(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _many_findings(repo, tmp_path)
    _, before = _doctor(repo)
    runner = at_failpoint(repo, "doctor-fix-applied", "doctor", "--fix", "--yes")
    runner.kill_group()  # git-harn and every git it ran, just after its first fix
    _, after = _doctor(repo)
    first = next(f for f in before["findings"] if f["fixable"])
    assert _timeless([f for f in before["findings"] if f != first]) == _timeless(after["findings"])
    assert record(repo, first["subject"]["runId"])["state"] in ("already_gone", "released")
    again = harn(repo, "doctor", "--fix", "--yes", "--json")
    assert again.code == 1 and sorted(_codes(again.json())) == ON_PURPOSE
    assert record(repo, "kept")["state"] == "preserved_dirty"


def test_status_ends_with_one_line_pointing_at_doctor_when_it_saw_something(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _start(repo, "fine")
    assert "git harn doctor" not in harn(repo, "status").out
    _preserve(repo, "kept", 1 << 20)
    lines = harn(repo, "status").out.splitlines()
    assert lines[-1] == "1 thing(s) to look at: 'git harn doctor' shows all that is left and its cost"
    status = harn(repo, "status", "--json")
    assert_valid(status.json(), "status")  # the document is as before
    assert "workspace-preserved" in _codes(_doctor(repo)[1])


def test_completion_offers_doctor_and_its_options(tmp_path: Path) -> None:
    script = harn(tmp_path, "completion", "bash")
    assert script.code == 0
    assert '"doctor") echo "--fix --help --json --older-than --remote --yes"' in script.out
    assert " doctor " in next(line for line in script.out.splitlines() if line.startswith('\t"")'))


def test_ended_records_are_read_once_then_known_by_their_tip(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    for run_id in ("e1", "e2"):
        _start(repo, run_id)
        assert harn(repo, "cleanup", run_id, "--yes").code == 0
    _start(repo, "live1")
    cache = repo / ".git" / "harnery" / "cache" / "ended-run-tips"
    cache.parent.mkdir(parents=True, exist_ok=True)  # other caches may live there already
    cache.write_text("not the header\n" + "0" * 40 + "\n")  # garbage: ignored, written afresh
    assert _doctor(repo)[1]["records"] == {"live": 1, "ended": 2, "unreadable": 0}
    tips = {ref(repo, f"refs/harnery/runs/{r}") for r in ("e1", "e2")}
    assert set(cache.read_text().splitlines()[1:]) == tips
    # A cached tip says nothing of a record that moved on: e2's ref now holds live1's (active) record chain.
    git(repo, "update-ref", "refs/harnery/runs/e2", str(ref(repo, "refs/harnery/runs/live1")))
    assert _doctor(repo)[1]["records"] == {"live": 1, "ended": 1, "unreadable": 1}
    assert set(cache.read_text().splitlines()[1:]) == {ref(repo, "refs/harnery/runs/e1")}


def test_a_surviving_task_branch_is_reported_and_discard_retires_it_keeping_its_commits(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    git(repo, "switch", "-q", "-c", "roadmap-1.2")
    (repo / "work.txt").write_text("agent's work\n")
    git(repo, "add", "work.txt")
    git(repo, "commit", "-q", "-m", "work on 1.2")
    tip = ref(repo, "roadmap-1.2")
    git(repo, "switch", "-q", "main")
    found = _one(_doctor(repo)[1], "task-branch-survivor")
    assert found["what"] == "roadmap-1.2" and not found["fixable"]
    assert found["fix"] == "git harn workflow discard 1.2 --yes"
    _run_as_printed(repo, found["fix"])
    assert ref(repo, "refs/heads/roadmap-1.2") is None and ref(repo, "refs/heads/harnery/salvage/roadmap-1.2") == tip
    assert _codes(_doctor(repo)[1]) == []


# the agent prints its own pids: outside the sandbox, as inside it they are its PID namespace's
# (pid 2 would be a host kernel thread); the sandboxed case reads the host's record, below
@pytest.mark.usefixtures("unsandboxed")
def test_a_dead_runners_live_orphan_agent_is_named_and_settle_ends_it(tmp_path: Path) -> None:
    import json

    from tests.kit.runners import alive, wait_for_log

    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    assert harn(wf.work, "hooks", "install").code == 0
    wf.script({"1.1:implement": "family-hang"})
    runner = start(wf.work, "workflow", "run", env={"HARN_WATCHDOG": "off"})  # as if the watchdog died too
    wait_for_log(wf.log, lambda log: any(e["event"] == "hanging" for e in log))
    family = json.loads((wf.agents / "family-1.1-implement").read_text())
    runner.kill_group()
    assert alive(family["agent"]) and alive(family["child"])
    found = _one(_doctor(wf.work)[1], "workflow-runner-gone")
    assert found["subject"]["groupsAlive"] == [family["agent"]]
    assert f"process group(s) {family['agent']} still run" in found["why"]
    _run_as_printed(wf.work, found["fix"])
    deadline = time.monotonic() + 10
    while (alive(family["agent"]) or alive(family["child"])) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(family["agent"]) and not alive(family["child"])
    assert "workflow-runner-gone" not in _codes(_doctor(wf.work)[1])


def _bwrap_problem() -> str | None:
    from git_harn.workspace.sandbox import probe

    found, why = probe()
    return None if found else why


@pytest.mark.skipif(_bwrap_problem() is not None, reason="bubblewrap cannot run here")
def test_a_dead_runners_sandboxed_agent_ends_with_it_and_the_host_recorded_its_real_pid(tmp_path: Path) -> None:
    """Under the sandbox the agent's own pids are its PID namespace's; what the host records
    (the lease's groups, which doctor lists and settle ends) is the host pid of the bubblewrap
    it started, which dies with its runner (--die-with-parent) and takes the agent with it."""
    import json

    from tests.kit.git_crashes import group_members
    from tests.kit.runners import wait_for_log

    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    assert harn(wf.work, "hooks", "install").code == 0
    wf.script({"1.1:implement": "family-hang"})
    with start(wf.work, "workflow", "run", env={"HARN_WATCHDOG": "off"}) as runner:
        wait_for_log(wf.log, lambda log: any(e["event"] == "hanging" for e in log))
        [lease] = (wf.work / ".git" / "harnery" / "locks").glob("runner-*.lock")
        [group] = json.loads(lease.read_text())["groups"]
        pgid = group["pgid"]
        assert (pgid, "bwrap") in group_members(pgid)  # the host's pid of what it started, leading its group
        runner.kill_group()
    deadline = time.monotonic() + 10
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_members(pgid) == []  # the sandbox and everything in it ended with the runner
    found = _one(_doctor(wf.work)[1], "workflow-runner-gone")
    assert found["subject"]["groupsAlive"] == [] and "still run" not in found["why"]
    _run_as_printed(wf.work, found["fix"])
    assert "workflow-runner-gone" not in _codes(_doctor(wf.work)[1])


def test_a_killed_reclaims_lock_is_fixed_and_the_reclaim_it_advises_finishes_the_job(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _preserve(repo, "half", 1 << 20)
    at_failpoint(repo, "reclaim-after-salvage-record", "reclaim", "half").kill_group()
    lock = repo / ".git" / "harnery" / "locks" / "run-half.lock"
    _, document = _doctor(repo)
    assert _one(document, "lock-dead")["what"] == str(lock)
    preserved = _one(document, "workspace-preserved")
    fixed = harn(repo, "doctor", "--fix", "--yes", "--json").json()
    assert [a["code"] for a in fixed["fixed"]] == ["lock-dead"] and not lock.exists()
    assert _codes(fixed) == ["workspace-preserved"]  # left on purpose: reclaim is the operator's
    _run_as_printed(repo, preserved["fix"])
    assert record(repo, "half")["state"] == "released" and ref(repo, "refs/heads/harnery/salvage/half")
    assert _codes(_doctor(repo)[1]) == []


def test_an_integration_worktree_left_mid_operation_is_reported_and_its_command_clears_it(tmp_path: Path) -> None:
    import signal

    from tests.kit.git_crashes import integration_setup, make_task

    roadmap = "# R\n\n- [ ] 1.1 One\n- [ ] 1.2 Two\n"
    _, work = integration_setup(tmp_path, {"README.md": "hi\n", "docs/roadmap.md": roadmap})
    assert harn(work, "hooks", "install").code == 0
    make_task(work, "1.1", {"one.txt": "1\n"})
    assert harn(work, "integrate", "roadmap-1.1").code == 0
    integration = _home(work) / ".integrate"
    landed = _one(_doctor(work)[1], "task-branch-landed")  # integrate keeps the branch; a run deletes it
    assert landed["fixable"] and landed["what"] == "roadmap-1.1"
    _run_as_printed(work, landed["fix"])
    assert ref(work, "refs/harnery/integrated/1.1") is not None
    assert _codes(_doctor(work)[1]) == []  # the integration worktree is kept between integrations
    (integration / "scratch.txt").write_text("x\n")
    git(integration, "add", "scratch.txt")
    hooks = tmp_path / "slow-hooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text("#!/bin/sh\nexec sleep 120\n")  # commit -a holds index.lock meanwhile
    (hooks / "pre-commit").chmod(0o755)
    hung = subprocess.Popen(["git", "-c", f"core.hooksPath={hooks}", "commit", "-a", "-q", "-m", "x"],
                            cwd=integration,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    admin = Path(git(integration, "rev-parse", "--absolute-git-dir"))
    wait_for(admin / "index.lock")
    os.killpg(hung.pid, signal.SIGKILL)  # git and its editor, as a kill of integrate's group would
    hung.wait()
    found = _one(_doctor(work)[1], "integration-worktree-left")
    assert "index.lock" in found["why"] and found["diskBytes"] > 0 and not found["fixable"]
    _run_as_printed(work, found["fix"])
    assert _codes(_doctor(work)[1]) == []
    make_task(work, "1.2", {"two.txt": "2\n"})  # and the next integration makes it afresh
    assert harn(work, "integrate", "roadmap-1.2").code == 0


@pytest.mark.parametrize("key, value", [("harn.worktreeRoot", "{tmp}/unplugged/disk/wt"),
                                        ("harn.assessor", "{tmp}/no-such/assessor --strict")])
def test_a_setting_naming_a_missing_path_is_reported_and_its_command_unsets_it(
        tmp_path: Path, key: str, value: str) -> None:
    repo = _repo(tmp_path)
    git(repo, "config", key, value.format(tmp=tmp_path))
    _, document = _doctor(repo, "--fix", "--yes")
    finding = _one(document, "setting-path-missing")
    assert finding["kind"] == "setup" and not finding["fixable"], finding  # report-only: --fix left it
    assert git(repo, "config", key) == value.format(tmp=tmp_path)
    assert finding["what"].startswith(f"{key} = {tmp_path}/")
    config = (repo / ".git" / "config").resolve()
    assert finding["fix"] == f"git config --file {shlex.quote(str(config))} --unset-all {key}"
    _run_as_printed(repo, finding["fix"])
    assert git(repo, "config", key, check=False) == ""
    assert "setting-path-missing" not in _codes(_doctor(repo)[1])


def test_a_worktree_root_that_has_held_no_workspace_yet_is_no_finding(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "not-made-yet"))  # its parent is there
    git(repo, "config", "harn.assessor", "python3 -m my_assessor")  # found on PATH: not a path
    code, document = _doctor(repo)
    assert (code, document["findings"]) == (0, [])


def test_notes_on_pruned_commits_are_counted_and_the_fix_keeps_the_others_and_the_history(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    notes = "refs/harnery/notes"
    git(repo, "switch", "-q", "-c", "scratch")
    gone = []
    for n in range(2):
        (repo / f"scratch{n}.txt").write_text(f"{n}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"scratch {n}")
        gone.append(git(repo, "rev-parse", "HEAD"))
        merge_note(open_repo(repo), to_oid(gone[-1]), "gate", "passed")  # git-harn's own writer
    git(repo, "switch", "-q", "main")
    kept = git(repo, "rev-parse", "HEAD")
    merge_note(open_repo(repo), to_oid(kept), "gate", "kept")
    assert _codes(_doctor(repo)[1]) == []  # the commits are still there: nothing yet
    git(repo, "branch", "-D", "scratch")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    before = git(repo, "rev-parse", notes)
    _, document = _doctor(repo)
    finding = _one(document, "notes-object-gone")
    assert (finding["kind"], finding["fixable"], finding["what"]) == ("leftover", True, notes)
    assert (finding["subject"]["count"], finding["subject"]["objects"]) == (2, sorted(gone))
    assert finding["why"].startswith("2 note(s)") and git(repo, "rev-parse", notes) == before  # doctor reads only
    assert finding["fix"] == "git harn doctor --fix --yes"
    _run_as_printed(repo, finding["fix"])
    after = git(repo, "rev-parse", notes)
    assert git(repo, "rev-parse", f"{after}^") == before  # one commit on top: nothing rewritten
    assert git(repo, "ls-tree", "--name-only", after) == kept  # the note on a live commit stays
    assert '"passed"' in git(repo, "show", f"{before}:{gone[0]}")  # the pruned ones: in the history
    assert "notes-object-gone" not in _codes(_doctor(repo)[1])


def test_a_claim_a_dead_run_left_is_listed_only_with_remote_and_settle_releases_it(tmp_path: Path) -> None:
    from tests.kit.runners import wait_for_log

    wf = setup(tmp_path, roadmap="# R\n\n- [ ] 1.1 First\n")
    assert harn(wf.work, "hooks", "install").code == 0
    wf.script({"1.1:implement": "hang"})
    runner = start(wf.work, "workflow", "run", "--claims", env={"HARN_WATCHDOG": "off"})
    wait_for_log(wf.log, lambda log: any(e["event"] == "hanging" for e in log))
    runner.kill_group()
    claim = "refs/harnery/claims/1.1"
    assert ref(wf.remote, claim) is not None  # the dead run's claim, still on the remote
    assert "claim-run-ended" not in _codes(_doctor(wf.work)[1])  # no network call unless asked
    _, document = _doctor(wf.work, "--remote", "origin")
    found = _one(document, "claim-run-ended")
    workflow_id = _one(document, "workflow-runner-gone")["subject"]["workflowId"]
    assert (found["kind"], found["what"], found["fixable"]) == ("workflow", "claim 1.1 on origin", False)
    assert found["subject"]["workflowId"] == workflow_id and "whose runner is gone" in found["why"]
    assert found["fix"] == f"git harn workflow settle {workflow_id}"
    _run_as_printed(wf.work, found["fix"])
    assert ref(wf.remote, claim) is None  # released, with a lease on its value
    left = _codes(_doctor(wf.work, "--remote", "origin")[1])
    assert "claim-run-ended" not in left and "workflow-runner-gone" not in left, left  # its work stays: preserved


def test_doctor_remote_names_an_unknown_remote_with_a_one_line_error(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    done = harn(repo, "doctor", "--remote", "nowhere")
    assert done.code == 2 and len(done.err.strip().splitlines()) == 1 and "nowhere" in done.err, done.err
