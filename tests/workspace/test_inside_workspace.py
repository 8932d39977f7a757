"""Commands run inside a git-harn workspace do not act as if it were the main
checkout (issue 23 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.kit.harn import all_refs, assert_error_document, git, harn
from tests.kit.workflow_repo import WF, setup


def _workspace(wf: WF, *args: str) -> Path:
    started = harn(wf.work, "start", *args, "--json")
    assert started.code == 0, started.err
    return Path(json.loads(started.out)["path"])


def test_workflow_run_and_init_refuse_naming_the_main_worktree(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    inside = _workspace(wf, "probe")
    (inside / "sub").mkdir()
    before = all_refs(wf.work)
    for where in (inside, inside / "sub"):
        for command in (("workflow", "run"), ("workflow", "run", "--dry-run"), ("workflow", "init")):
            done = harn(where, *command)
            assert done.code == 2, (command, done.out, done.err)
            assert f"workspace of run probe: run 'git harn {' '.join(command[:2])}' in the main worktree, " \
                   f"{wf.work}" in done.err
            assert done.err.count("\n") == 1
    assert_error_document(harn(inside, "workflow", "run", "--json").out, 2)
    assert all_refs(wf.work) == before
    assert wf.log() == []  # no agent ran
    assert git(inside, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (inside / ".harn" / "prompts").exists()


def test_a_workspace_with_its_own_path_is_known_by_its_branch(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    inside = _workspace(wf, "custom", "--path", str(tmp_path / "elsewhere" / "checkout"))
    done = harn(inside, "workflow", "run", "--dry-run")
    assert done.code == 2 and "workspace of run custom" in done.err, done.err


def test_start_inside_a_workspace_says_its_base_is_that_branch(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    inside = _workspace(wf, "probe")
    git(inside, "commit", "-q", "--allow-empty", "-m", "work in the probe")
    nested = harn(inside, "start", "nested", "--json")
    assert nested.code == 0, nested.err
    assert "the base is harnery/ws/probe, the branch of workspace probe this runs in; pass --base" in nested.err
    record = json.loads(nested.out)
    assert record["base"]["oid"] == git(inside, "rev-parse", "HEAD")  # a nested start is still allowed
    elsewhere = harn(inside, "start", "based", "--base", "main")
    assert elsewhere.code == 0 and "the base is" not in elsewhere.err
    plain = harn(wf.work, "start", "top")
    assert plain.code == 0 and "the base is" not in plain.err
    ran = harn(inside, "run", "inrun", "--", "true")
    assert ran.code == 0 and "the branch of workspace probe" in ran.err


def test_the_main_worktree_and_plain_linked_worktrees_are_not_workspaces(tmp_path: Path) -> None:
    wf = setup(tmp_path)
    plain = tmp_path / "plain"
    git(wf.work, "worktree", "add", "-q", "-b", "side", str(plain))
    assert harn(plain, "workflow", "run", "--dry-run").code == 0
    assert harn(wf.work, "workflow", "run", "--dry-run").code == 0
