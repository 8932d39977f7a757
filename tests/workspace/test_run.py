"""`git harn run` [W2] and `git harn start` [W1]."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.kit.harn import assert_valid, git, harn, make_repo, record, ref

PY = sys.executable


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def script(tmp_path: Path, body: str) -> str:
    target = tmp_path / "agent.py"
    target.write_text("import json, os, pathlib, sys\n" + body)
    return str(target)


def test_command_runs_inside_the_worktree_with_harn_variables(repo: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    agent = script(tmp_path, (
        f"pathlib.Path({str(seen)!r}).write_text(json.dumps({{'cwd': os.getcwd(), "
        "'env': {k: v for k, v in os.environ.items() if k.startswith('HARN_')}}))\n"
    ))
    result = harn(repo, "run", "r1", "--json", "--", PY, agent)
    assert result.code == 0, result.err
    document = result.json()
    assert_valid(document, "run-result")
    observed = json.loads(seen.read_text())
    assert observed["cwd"] == document["path"]
    assert observed["env"] == {"HARN_RUN_ID": "r1", "HARN_WORKSPACE_ID": document["workspaceId"],
                               "HARN_WORKSPACE": document["path"]}
    assert document["cleanup"]["outcome"] == "released"
    assert record(repo, "r1")["exitCode"] == 0


def test_failing_command_exit_code_is_recorded_and_returned(repo: Path, tmp_path: Path) -> None:
    result = harn(repo, "run", "r1", "--", PY, script(tmp_path, "sys.exit(7)\n"))
    assert result.code == 7
    rec = record(repo, "r1")
    assert (rec["exitCode"], rec["state"]) == (7, "released")


def test_dirty_result_is_preserved_with_exit_3(repo: Path, tmp_path: Path) -> None:
    agent = script(tmp_path, "pathlib.Path('work.txt').write_text('precious')\n")
    result = harn(repo, "run", "r1", "--", PY, agent)
    assert result.code == 3
    rec = record(repo, "r1")
    assert rec["state"] == "preserved_dirty"
    assert Path(rec["path"], "work.txt").read_text() == "precious"


def test_dirty_result_and_failing_command_returns_the_command_code(repo: Path, tmp_path: Path) -> None:
    agent = script(tmp_path, "pathlib.Path('work.txt').write_text('x')\nsys.exit(5)\n")
    assert harn(repo, "run", "r1", "--", PY, agent).code == 5
    assert record(repo, "r1")["state"] == "preserved_dirty"


def test_run_without_id_generates_one_and_keep_leaves_it_active(repo: Path, tmp_path: Path) -> None:
    result = harn(repo, "run", "--keep", "--json", "--", PY, "-c", "pass")
    assert result.code == 0, result.err
    run_id = result.json()["runId"]
    assert run_id.startswith("run-")
    assert record(repo, run_id)["state"] == "active"
    assert Path(record(repo, run_id)["path"]).is_dir()


def test_run_reuses_a_live_workspace(repo: Path, tmp_path: Path) -> None:
    first = harn(repo, "run", "r1", "--keep", "--json", "--", PY, "-c", "open('a.txt','w').write('1')")
    second = harn(repo, "run", "r1", "--json", "--", PY, "-c", "import os; os.remove('a.txt')")
    assert first.json()["workspaceId"] == second.json()["workspaceId"]
    assert second.code == 0 and second.json()["cleanup"]["outcome"] == "released"


def test_missing_command_is_a_usage_error(repo: Path) -> None:
    for args in (["run", "r1"], ["run", "r1", "--"]):
        result = harn(repo, *args)
        assert result.code == 2 and result.err.count("\n") == 1
    assert ref(repo, "refs/harnery/runs/r1") is None


def test_command_not_found_is_127_and_the_workspace_is_released(repo: Path) -> None:
    result = harn(repo, "run", "r1", "--", "no-such-command-xyz")
    assert result.code == 127
    assert record(repo, "r1")["state"] == "released"


def test_start_defaults_to_head_and_honours_base_branch_path(repo: Path, tmp_path: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    (repo / "later.txt").write_text("later\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-q", "-m", "later")
    assert harn(repo, "start", "a").code == 0
    assert record(repo, "a")["base"]["oid"] == git(repo, "rev-parse", "HEAD")
    where = tmp_path / "custom place"
    result = harn(repo, "start", "b", "--base", first, "--branch", "task/b", "--path", str(where))
    assert result.code == 0, result.err
    rec = record(repo, "b")
    assert (rec["branch"], rec["path"], rec["base"]["oid"]) == ("task/b", str(where), first)
    assert not (where / "later.txt").exists() and (where / "README.md").exists()


def test_start_refuses_a_live_run_and_allows_a_terminal_one(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    again = harn(repo, "start", "r1")
    assert again.code == 2 and "already has a workspace (active)" in again.err
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    old_workspace = record(repo, "r1")["workspaceId"]
    assert harn(repo, "start", "r1").code == 0
    assert record(repo, "r1")["workspaceId"] != old_workspace


def test_start_with_unknown_base_changes_nothing(repo: Path) -> None:
    result = harn(repo, "start", "r1", "--base", "no-such-rev")
    assert result.code == 2 and "unknown revision" in result.err
    assert ref(repo, "refs/harnery/runs/r1") is None
    assert ref(repo, "refs/heads/harnery/ws/r1") is None


def test_start_killed_after_its_record_is_finished_by_a_rerun(repo: Path) -> None:
    killed = harn(repo, "start", "r1", env={"HARN_FAILPOINT": "start-after-record"})
    assert killed.code == 137
    assert record(repo, "r1")["state"] == "active"
    again = harn(repo, "start", "r1", "--json")
    assert again.code == 0, again.err
    assert Path(again.json()["path"], "README.md").exists()
    assert record(repo, "r1")["state"] == "active"
    assert not list((repo / ".git" / "harnery" / "locks").glob("*.lock"))
