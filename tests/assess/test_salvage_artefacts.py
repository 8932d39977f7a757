"""git harn salvage-artefacts: dirty ExecPlans committed onto the task branch [A4]."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from git_harn.assess.artefacts import vet_path
from tests.kit.harn import all_refs, assert_valid, git, harn
from tests.kit.task_repo import task_branch, task_repo, write

PLAN = "docs/execplans/1.2.md"


def salvage(repo: Path, *args: str, stdin: str | None = None) -> dict[str, Any]:
    result = harn(repo, "salvage-artefacts", "roadmap-1.2", *args, "--json", stdin=stdin)
    assert result.code == 0, result.err
    doc: dict[str, Any] = result.json()
    assert_valid(doc, "salvage-result")
    return doc


def status(worktree: Path) -> set[str]:
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=worktree,
                          capture_output=True, text=True, check=True)
    return set(done.stdout.splitlines())


def messy_worktree(repo: Path) -> Path:
    """A task worktree with a dirty plan, a new plan, a modified source file,
    a staged source file and an untracked file."""
    worktree = task_branch(repo, plan="IN PROGRESS")
    write(worktree, {PLAN: "# 1.2\n\nStatus: IN PROGRESS\n\n- learned something\n",
                     "docs/execplans/1.2-notes.md": "notes\n",
                     "src/staged.py": "staged = True\n"})
    git(worktree, "add", "src/staged.py")
    write(worktree, {"src/feature.py": "half done\n", "scratch.txt": "tmp\n"})
    return worktree


def test_commits_only_the_execplans_and_leaves_other_dirty_files(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = messy_worktree(repo)
    old_tip = git(repo, "rev-parse", "roadmap-1.2")
    staged_blob = git(worktree, "rev-parse", ":src/staged.py")
    doc = salvage(repo, "--classification", "adopt-partial")
    assert doc["committed"] is True and doc["skipped"] is False
    assert sorted(doc["paths"]) == ["docs/execplans/1.2-notes.md", PLAN]
    sha = doc["sha"]
    assert git(repo, "rev-parse", "roadmap-1.2") == sha
    assert git(repo, "rev-parse", f"{sha}^") == old_tip
    changed = git(repo, "diff", "--name-only", old_tip, sha).splitlines()
    assert sorted(changed) == ["docs/execplans/1.2-notes.md", PLAN]
    assert git(repo, "show", f"{sha}:{PLAN}").endswith("- learned something")
    assert status(worktree) == {"A  src/staged.py", " M src/feature.py", "?? scratch.txt"}
    assert git(worktree, "rev-parse", ":src/staged.py") == staged_blob
    assert "3 other dirty path(s) left alone" in doc["detail"]
    assert '"artefactSalvage"' in git(repo, "show", f"refs/harnery/notes:{sha}")
    message = git(repo, "log", "-1", "--format=%B", sha)
    assert "Harnery-Task: 1.2" in message and "Harnery-Salvage: artefacts" in message


def test_machine_identity_and_no_hooks(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = messy_worktree(repo)
    marker = tmp_path / "hook-ran"
    hooks = repo / ".git" / "hooks"
    for hook in ("pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> {marker}\nexit 1\n")
        (hooks / hook).chmod(0o755)
    doc = salvage(repo, "--classification", "continue-manual")
    who = git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", doc["sha"])
    assert who == "git-harn machine <git-harn@localhost>|git-harn machine <git-harn@localhost>"
    assert not marker.exists()
    git(repo, "config", "harn.machineIdentity", "Build Bot <bot@example.com>")
    write(worktree, {PLAN: "again\n"})
    doc = salvage(repo, "--classification", "infra-fault")
    who = git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", doc["sha"])
    assert who == "Build Bot <bot@example.com>|Build Bot <bot@example.com>"
    assert not marker.exists()


def test_rerun_finds_nothing_left_to_commit(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    messy_worktree(repo)
    first = salvage(repo, "--classification", "adopt-partial")
    again = salvage(repo, "--classification", "adopt-partial", "--worktree", first["worktree"])
    assert again["committed"] is False and again["sha"] is None and again["skipped"] is False
    assert git(repo, "rev-parse", "roadmap-1.2") == first["sha"]
    assert "no dirty ExecPlan" in again["detail"]


def test_a_version_staged_by_hand_stays_staged(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="IN PROGRESS")
    write(worktree, {PLAN: "staged version\n"})
    git(worktree, "add", PLAN)
    staged = git(worktree, "rev-parse", f":{PLAN}")
    write(worktree, {PLAN: "newest version\n"})
    doc = salvage(repo, "--classification", "adopt-partial")
    assert git(repo, "show", f"{doc['sha']}:{PLAN}") == "newest version"
    assert git(worktree, "rev-parse", f":{PLAN}") == staged  # nothing lost [P1]


# --- rejections, before any commit -------------------------------------------------


def test_rejections_are_named_and_the_safe_plans_still_committed(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="IN PROGRESS",
                           files={"docs/execplans/sub/linked.md": "tracked inside sub\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    (outside / "linked.md").write_text("changed outside\n")
    write(worktree, {PLAN: "Status: BLOCKED\n", "docs/notes.md": "not a plan\n",
                     "docs/execplans/image.png": "png\n"})
    os.symlink(outside / "secret.md", worktree / "docs/execplans/evil.md")
    sub = worktree / "docs/execplans/sub"
    (sub / "linked.md").unlink()
    sub.rmdir()
    os.symlink(outside, sub)
    doc = salvage(repo, "--classification", "adopt-partial")
    rejected = {r["path"]: r["reason"] for r in doc["rejected"]}
    assert rejected == {
        "docs/notes.md": "outside the ExecPlan tree",
        "docs/execplans/image.png": "not a .md file",
        "docs/execplans/evil.md": "symlink",
        "docs/execplans/sub": "symlink",
        "docs/execplans/sub/linked.md": "symlinked folder on the way",
    }
    for path in rejected:
        assert path in doc["detail"]
    assert doc["committed"] is True and doc["paths"] == [PLAN]
    tree = git(repo, "ls-tree", "-r", "--name-only", doc["sha"]).splitlines()
    assert "docs/execplans/evil.md" not in tree and "docs/notes.md" not in tree
    assert git(repo, "show", f"{doc['sha']}:docs/execplans/sub/linked.md") == "tracked inside sub"
    assert (outside / "secret.md").read_text() == "secret\n"
    assert os.path.islink(worktree / "docs/execplans/evil.md")


def test_only_this_tasks_plans_at_depth_one_are_salvaged(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="IN PROGRESS")
    others = {"docs/execplans/1.3.md": "another task\n", "docs/execplans/1.2.1.md": "a subtask\n",
              "docs/execplans/1.20-x.md": "a lookalike\n", "docs/execplans/README.md": "index\n",
              "docs/execplans/deep/z.md": "nested\n", "docs/execplans/1.2/x.md": "nested too\n"}
    write(worktree, {PLAN: "Status: COMPLETE\n", "docs/execplans/1.2-notes.md": "notes\n", **others})
    git(worktree, "add", "docs/execplans/1.3.md")
    doc = salvage(repo, "--classification", "adopt-partial")
    assert sorted(doc["paths"]) == ["docs/execplans/1.2-notes.md", PLAN]
    rejected = {r["path"]: r["reason"] for r in doc["rejected"]}
    assert set(rejected) == set(others)
    assert rejected["docs/execplans/1.3.md"] == "another task's ExecPlan (task 1.3)"
    assert rejected["docs/execplans/deep/z.md"] == "nested below the ExecPlan folder"
    assert rejected["docs/execplans/README.md"] == "not an ExecPlan of task 1.2"
    for path in others:
        assert path in doc["detail"]
        assert (worktree / path).read_text() == others[path]
    changed = git(repo, "diff", "--name-only", f"{doc['sha']}^", doc["sha"]).splitlines()
    assert sorted(changed) == ["docs/execplans/1.2-notes.md", PLAN]
    assert "A  docs/execplans/1.3.md" in status(worktree)
    git(worktree, "stash", "-q", "-u")  # judge the committed branch alone
    assessment = harn(repo, "assess", "roadmap-1.2", "--json").json()
    assert assessment["evidence"]["taskScoped"] is True


def test_without_a_task_id_no_plan_is_salvaged(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, branch="feature", plan=None)
    write(worktree, {PLAN: "Status: DRAFT\n"})
    result = harn(repo, "salvage-artefacts", "feature", "--classification", "adopt-partial", "--json")
    doc = result.json()
    assert doc["committed"] is False
    assert doc["rejected"] == [{"path": PLAN, "reason": "no task id: the branch is not roadmap-<id>"}]
    assessment = harn(repo, "assess", "feature", "--task", "1.2", "--json").out
    result = harn(repo, "salvage-artefacts", "feature", "--assessment", "-", "--json", stdin=assessment)
    assert result.json()["paths"] == [PLAN] and result.json()["committed"] is True


@pytest.mark.parametrize(("path", "reason"), [
    ("docs/execplans/../../../etc/passwd.md", "escapes the worktree (absolute or '..' path)"),
    ("docs/execplans/./x.md", "escapes the worktree (absolute or '..' path)"),
    ("/etc/x.md", "escapes the worktree (absolute or '..' path)"),
    ("docs/execplansX/x.md", "outside the ExecPlan tree"),
    ("docs/execplans/missing.md", "deleted in the worktree; nothing to salvage"),
])
def test_vet_path_rejects_escapes(tmp_path: Path, path: str, reason: str) -> None:
    (tmp_path / "docs/execplans").mkdir(parents=True)
    assert vet_path(tmp_path, path, "docs/execplans", "1.2") == reason


def test_configured_execplan_folder_and_escaping_configuration(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan=None)
    git(repo, "config", "harn.execplans", "plans")
    write(worktree, {"plans/1.2.md": "Status: DRAFT\n", PLAN: "not in the configured tree\n"})
    doc = salvage(repo, "--classification", "adopt-partial")
    assert doc["paths"] == ["plans/1.2.md"]
    assert doc["rejected"] == [{"path": PLAN, "reason": "outside the ExecPlan tree"}]
    git(repo, "config", "harn.execplans", "../elsewhere")
    write(worktree, {"plans/1.2.md": "more\n"})
    assert harn(repo, "salvage-artefacts", "roadmap-1.2", "--classification", "adopt-partial").code == 2


# --- skips ---------------------------------------------------------------------------


@pytest.mark.parametrize(("classification", "words"), [
    ("adopt-complete", "ordinary review"), ("discard", "thrown away"),
])
def test_skipped_for_adopt_complete_and_discard(tmp_path: Path, classification: str, words: str) -> None:
    repo = task_repo(tmp_path)
    worktree = messy_worktree(repo)
    refs, dirty = all_refs(repo), status(worktree)
    doc = salvage(repo, "--classification", classification)
    assert doc["skipped"] is True and doc["committed"] is False and doc["sha"] is None
    assert words in doc["detail"]
    assert all_refs(repo) == refs and status(worktree) == dirty


def test_skipped_after_a_collection_error(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = messy_worktree(repo)
    dot_git = (worktree / ".git").read_text()
    (worktree / ".git").write_text("gitdir: /nonexistent\n")
    assessment = harn(repo, "assess", "roadmap-1.2", "--json").out
    (worktree / ".git").write_text(dot_git)
    refs = all_refs(repo)
    doc = salvage(repo, "--assessment", "-", stdin=assessment)
    assert doc["skipped"] is True and doc["classification"] == "continue-manual"
    assert "evidence collection failed" in doc["detail"]
    assert all_refs(repo) == refs


def test_skipped_when_no_worktree_path_is_known(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, worktree=False)
    doc = salvage(repo, "--classification", "continue-manual")
    assert doc["skipped"] is True and "no worktree path" in doc["detail"]
    assessment = harn(repo, "assess", "roadmap-1.2", "--json").out
    doc = salvage(repo, "--assessment", "-", stdin=assessment)
    assert doc["skipped"] is True and doc["classification"] == "adopt-partial"
    assert "no worktree path" in doc["detail"]


def test_salvage_from_an_assessment_file(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    messy_worktree(repo)
    path = tmp_path / "assessment.json"
    path.write_text(harn(repo, "assess", "roadmap-1.2", "--json").out)
    doc = salvage(repo, "--assessment", str(path))
    assert doc["classification"] == "continue-manual" and doc["committed"] is True


@pytest.mark.parametrize("args", [
    [],
    ["--classification", "adopt-partial", "--assessment", "-"],
    ["--classification", "adopt-partial", "--worktree", "/tmp"],
    ["--assessment", "-"],
])
def test_bad_input_changes_nothing(tmp_path: Path, args: list[str]) -> None:
    repo = task_repo(tmp_path)
    worktree = messy_worktree(repo)
    refs, dirty = all_refs(repo), status(worktree)
    other = '{"schemaVersion": 1, "branch": "roadmap-1.3"}'
    result = harn(repo, "salvage-artefacts", "roadmap-1.2", *args, stdin=other)
    assert result.code == 2, result.err
    assert all_refs(repo) == refs and status(worktree) == dirty
    assert harn(repo, "salvage-artefacts", "nope", "--classification", "adopt-partial").code == 2


@pytest.mark.parametrize("point", ["salvage-artefacts-before-index", "salvage-artefacts-before-ref"])
def test_killed_salvage_reruns_to_the_same_end(tmp_path: Path, point: str) -> None:
    repo = task_repo(tmp_path)
    worktree = messy_worktree(repo)
    old_tip = git(repo, "rev-parse", "roadmap-1.2")
    killed = harn(repo, "salvage-artefacts", "roadmap-1.2", "--classification", "adopt-partial",
                  env={"HARN_FAILPOINT": point})
    assert killed.code != 0
    assert git(repo, "rev-parse", "roadmap-1.2") == old_tip
    doc = salvage(repo, "--classification", "adopt-partial")
    assert doc["committed"] is True and git(repo, "rev-parse", f"{doc['sha']}^") == old_tip
    assert sorted(doc["paths"]) == ["docs/execplans/1.2-notes.md", PLAN]
    assert status(worktree) == {"A  src/staged.py", " M src/feature.py", "?? scratch.txt"}
