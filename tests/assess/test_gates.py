"""git harn gates run: validation evidence from the base's gate commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.kit.harn import assert_valid, descendants, git, harn, is_python_of_git_harn, wait_for
from tests.kit.task_repo import task_branch, task_repo, write

MARKING_GATES = '[gates]\ncommands = [["sh", "-c", "echo base-gate; pwd"]]\n'


def note(repo: Path, rev: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        git(repo, "show", f"refs/harnery/notes:{git(repo, 'rev-parse', rev)}"))
    return loaded


def test_gates_recorded_as_a_note_on_the_exact_tip(tmp_path: Path) -> None:
    repo = task_repo(tmp_path, gates=MARKING_GATES)
    worktree = task_branch(repo)
    result = harn(repo, "gates", "run", "roadmap-1.2", "--json")
    assert result.code == 0, result.err
    doc = result.json()
    assert_valid(doc, "gates-result")
    assert doc["commit"] == git(repo, "rev-parse", "roadmap-1.2")
    assert doc["passed"] is True and doc["where"] == "temporary"
    said, ran_in = doc["commands"][0]["outputTail"].splitlines()
    assert said == "base-gate"
    assert ran_in != str(worktree) and not Path(ran_in).exists()
    noted = note(repo, "roadmap-1.2")["gates"]
    assert isinstance(noted, dict)
    mac = noted.pop("mac")  # the note alone carries this machine's MAC (store/mac)
    assert noted == doc and mac["alg"] == "hmac-sha256" and len(mac["value"]) == 64


def test_ignored_files_in_the_agents_worktree_do_not_reach_the_gates(tmp_path: Path) -> None:
    """A clean worktree at the tip still holds ignored files; the evidence
    must be about the tip alone, so the gates never run there."""
    repo = task_repo(tmp_path, gates='[gates]\ncommands = [["test", "-f", "local.flag"]]\n')
    worktree = task_branch(repo, files={".gitignore": "local.flag\n"})
    write(worktree, {"local.flag": "only here\n"})
    assert git(worktree, "status", "--porcelain") == ""
    result = harn(repo, "gates", "run", "roadmap-1.2", "--json")
    assert result.code == 3, result.err
    assert result.json()["passed"] is False and result.json()["where"] == "temporary"
    assert note(repo, "roadmap-1.2")["gates"]["passed"] is False  # type: ignore[index]
    assert (worktree / "local.flag").read_text() == "only here\n"


def test_gates_configured_on_the_task_branch_are_ignored(tmp_path: Path) -> None:
    repo = task_repo(tmp_path, gates=MARKING_GATES)
    task_branch(repo, files={".harn/workflow.toml": '[gates]\ncommands = [["sh", "-c", "echo agent; exit 0"]]\n'})
    doc = harn(repo, "gates", "run", "roadmap-1.2", "--json").json()
    assert doc["commands"][0]["argv"] == ["sh", "-c", "echo base-gate; pwd"]
    assert doc["source"].startswith(".harn/workflow.toml at main")


def test_gates_only_on_the_task_branch_means_none_configured(tmp_path: Path) -> None:
    repo = task_repo(tmp_path, gates="")
    task_branch(repo, files={".harn/workflow.toml": '[gates]\ncommands = [["true"]]\n'})
    result = harn(repo, "gates", "run", "roadmap-1.2")
    assert result.code == 2 and "no gate commands configured" in result.err
    assert git(repo, "for-each-ref", "refs/harnery/") == ""


def test_dirty_worktree_gates_run_on_the_tip_in_a_temporary_checkout(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo)
    write(worktree, {"broken": "uncommitted, not part of the tip\n"})
    before = git(repo, "worktree", "list", "--porcelain")
    doc = harn(repo, "gates", "run", "roadmap-1.2", "--json").json()
    assert doc["where"] == "temporary" and doc["passed"] is True
    assert git(repo, "worktree", "list", "--porcelain") == before
    assert (worktree / "broken").exists()


def test_git_config_gates_failures_and_timeouts(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    git(repo, "config", "--add", "harn.gate", "sh -c 'echo \"two words\"; exit 0'")
    git(repo, "config", "--add", "harn.gate", "sh -c 'exit 7'")
    git(repo, "config", "--add", "harn.gate", "sleep 20")
    result = harn(repo, "gates", "run", "roadmap-1.2", "--timeout", "1", "--json")
    assert result.code == 3
    doc = result.json()
    assert_valid(doc, "gates-result")
    assert doc["source"] == "git config harn.gate" and doc["passed"] is False
    first, second, third = doc["commands"]
    assert first["exitCode"] == 0 and first["outputTail"] == "two words\n"
    assert second["exitCode"] == 7
    assert third["timedOut"] is True and third["exitCode"] is None
    noted = note(repo, "roadmap-1.2")["gates"]
    assert isinstance(noted, dict)
    mac = noted.pop("mac")  # the note alone carries this machine's MAC (store/mac)
    assert noted == doc and mac["alg"] == "hmac-sha256" and len(mac["value"]) == 64


def test_gate_commands_never_go_through_a_shell(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    marker = tmp_path / "pwned"
    git(repo, "config", "harn.gate", f"echo $(touch {marker}); touch {marker}")
    doc = harn(repo, "gates", "run", "roadmap-1.2", "--json").json()
    assert not marker.exists()
    assert doc["commands"][0]["argv"][:2] == ["echo", "$(touch"]


@pytest.mark.parametrize("args", [["nope"], ["roadmap-1.2", "--base", "nope"], ["roadmap-1.2", "--timeout", "0"]])
def test_gates_bad_input(tmp_path: Path, args: list[str]) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    assert harn(repo, "gates", "run", *args).code == 2


@pytest.mark.parametrize("commands", ["[" * 100_000 + "]" * 100_000, '[["a", ' + "[" * 50_000 + "]" * 50_000 + "]]"])
def test_deeply_nested_gate_commands_are_bad_input(tmp_path: Path, commands: str) -> None:
    repo = task_repo(tmp_path, gates=f"[gates]\ncommands = {commands}\n")
    task_branch(repo)
    result = harn(repo, "gates", "run", "roadmap-1.2")
    assert result.code == 2, result.err
    assert result.err.startswith("git harn: error: ") and len(result.err.splitlines()) == 1
    assert "Traceback" not in result.err and ".harn/workflow.toml" in result.err
    assert git(repo, "for-each-ref", "refs/harnery/") == ""


def test_a_scratch_checkout_left_by_a_killed_gates_run_is_swept(tmp_path: Path) -> None:
    import signal
    import subprocess

    repo = task_repo(tmp_path)
    task_branch(repo)
    flag = tmp_path / "gate-started"
    git(repo, "config", "--add", "harn.gate", f"sh -c 'touch {flag}; sleep 30'")
    proc = subprocess.Popen(["git", "harn", "gates", "run", "roadmap-1.2"], cwd=repo,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(flag)
    # git and the git-harn it started; the gate runs in a session of its own.
    for pid in [proc.pid, *descendants(proc.pid)]:
        if pid == proc.pid or is_python_of_git_harn(pid):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=30)
    left = [line for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if "git-harn-gates-" in line]
    assert left  # the kill left its scratch checkout behind
    git(repo, "config", "--unset-all", "harn.gate")
    git(repo, "config", "--add", "harn.gate", "true")
    assert harn(repo, "gates", "run", "roadmap-1.2").code == 0
    assert "git-harn-gates-" not in git(repo, "worktree", "list", "--porcelain")


# a pytest-like failure: a long FAILED list, then the summary line that matters most
LONG_FAILURE = ("sh -c 'i=0; while [ $i -lt 300 ]; do echo \"FAILED tests/test_mod_$i.py::test_case - "
                "AssertionError: assert 1 == 2\"; i=$((i+1)); done; echo \"=== 300 failed in 1.25s ===\"; "
                "exit 1'")


def test_a_failed_gate_shows_its_command_exit_and_last_whole_lines(tmp_path: Path) -> None:
    """Readable failures (issue 23 item 8): the command, its exit, the end of its output."""
    repo = task_repo(tmp_path)
    task_branch(repo)
    git(repo, "config", "--add", "harn.gate", "sh -c 'echo fine'")
    git(repo, "config", "--add", "harn.gate", LONG_FAILURE)
    git(repo, "config", "--add", "harn.gate", "sh -c 'kill -TERM $$'")
    human = harn(repo, "gates", "run", "roadmap-1.2")
    assert human.code == 3
    lines = human.out.splitlines()
    failed = next(n for n, line in enumerate(lines) if "exit 1" in line)
    assert "sh -c 'i=0; while [ $i -lt 300 ]" in lines[failed]  # the command, quoted as typed
    shown = lines[failed + 1: failed + 11]
    assert shown[-1].strip() == "| === 300 failed in 1.25s ==="
    assert all(line.strip().startswith("| FAILED tests/test_mod_") for line in shown[:-1]), shown
    assert "| fine" not in human.out  # a passing gate's output stays out of the way
    assert any("killed by SIGTERM" in line and "kill -TERM" in line for line in lines), human.out
    assert all(len(line) <= 200 for line in lines)
    doc = harn(repo, "gates", "run", "roadmap-1.2", "--json").json()
    assert_valid(doc, "gates-result")
    tail_lines = doc["commands"][1]["outputTail"].splitlines()
    assert tail_lines[0] == "…" and tail_lines[1].startswith("FAILED tests/test_mod_")  # cut at a line boundary
    assert tail_lines[-1] == "=== 300 failed in 1.25s ===" and len(doc["commands"][1]["outputTail"]) <= 4002
    assert doc["commands"][2]["exitCode"] == -15
