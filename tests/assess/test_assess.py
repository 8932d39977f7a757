"""git harn assess: the built-in rules, evidence, and report-only [A1] [A2]."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.kit.harn import all_refs, assert_error_document, assert_valid, git, harn
from tests.kit.task_repo import task_branch, task_repo, write


def assess(repo: Path, *args: str) -> dict[str, Any]:
    result = harn(repo, "assess", *args, "--json")
    assert result.code == 0, result.err
    document: dict[str, Any] = result.json()
    assert_valid(document, "assessment")
    assert_valid(document["evidence"], "evidence")
    return document


def gates_pass(repo: Path, branch: str = "roadmap-1.2") -> None:
    result = harn(repo, "gates", "run", branch)
    assert result.code == 0, result.out + result.err


def note_of(repo: Path, rev: str) -> str:
    return git(repo, "show", f"refs/harnery/notes:{git(repo, 'rev-parse', rev)}")


def codes(items: list[str]) -> set[str]:
    return {item.split(":", 1)[0] for item in items}


# --- one test per rule of the built-in assessor ------------------------------


def test_adopt_complete_needs_clean_committed_scoped_complete_and_gates(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="COMPLETE")
    gates_pass(repo)
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "adopt-complete"
    assert doc["missingEvidence"] == []
    assert doc["taskId"] == "1.2"
    evidence = doc["evidence"]
    assert evidence["ahead"] == 1 and evidence["behind"] == 0
    assert evidence["execPlan"]["status"] == "COMPLETE"
    assert evidence["validation"]["passed"] is True
    assert evidence["taskScoped"] is True
    assert sorted(evidence["changedPaths"]) == ["docs/execplans/1.2.md", "src/feature.py"]


def test_discard_when_nothing_is_ahead_and_nothing_dirty(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan=None, files={})
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "discard"
    assert doc["reasons"] == ["no-committed-work"]


def test_discard_when_the_changes_are_already_in_the_base(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    git(repo, "merge", "-q", "--squash", "roadmap-1.2")
    git(repo, "commit", "-q", "-m", "squash 1.2")
    write(repo, {"README.md": "moved on\n"})
    git(repo, "commit", "-q", "-am", "later work on main")
    doc = assess(repo, "roadmap-1.2")
    assert doc["evidence"]["ahead"] == 1 and doc["evidence"]["alreadyInBase"] is True
    assert doc["classification"] == "discard"
    assert doc["reasons"] == ["changes-already-in-base"]


def test_adopt_partial_for_committed_work_with_a_plan_in_progress(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="IN PROGRESS")
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "adopt-partial"
    assert "plan-in-progress" in doc["reasons"]
    assert {"plan-not-complete", "missing-validation-evidence"} <= codes(doc["missingEvidence"])


def test_adopt_partial_for_committed_work_with_passing_gates(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="DRAFT")
    gates_pass(repo)
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "adopt-partial"
    assert "validation-passed" in doc["reasons"]


def test_adopt_partial_when_only_the_plan_is_dirty(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="IN PROGRESS")
    write(worktree, {"docs/execplans/1.2.md": "# 1.2\n\nStatus: IN PROGRESS\n\nmore notes\n"})
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "adopt-partial"
    assert "plan-dirty" in codes(doc["missingEvidence"])
    assert doc["evidence"]["execPlan"]["dirty"] is True


def test_continue_manual_for_dirty_files_besides_the_plan(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="COMPLETE")
    gates_pass(repo)
    write(worktree, {"src/half.py": "unfinished\n"})
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "continue-manual"
    assert doc["reasons"] == ["dirty-worktree"]
    assert doc["evidence"]["worktree"]["dirtyPaths"] == [{"status": "??", "path": "src/half.py"}]


def test_continue_manual_for_uncommitted_work_only(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan=None, files={})
    write(worktree, {"src/new.py": "x = 2\n"})
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "continue-manual"
    assert set(doc["reasons"]) == {"dirty-worktree", "no-committed-work"}


@pytest.mark.parametrize(("files", "message", "violation"), [
    ({"docs/roadmap.md": "- [x] 1.2 Second\n"}, "tick it", "edits the roadmap docs/roadmap.md"),
    ({"docs/execplans/1.3.md": "Status: DRAFT\n"}, "plan 1.3 too", "edits another task's ExecPlan"),
    ({"src/other.py": "y = 1\n"}, "other work\n\nHarnery-Task: 1.3", "names task 1.3 (Harnery-Task)"),
])
def test_continue_manual_when_not_task_scoped(tmp_path: Path, files: dict[str, str], message: str,
                                              violation: str) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="COMPLETE")
    write(worktree, files)
    git(worktree, "add", "-A")
    git(worktree, "commit", "-q", "-m", message)
    gates_pass(repo)
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "continue-manual"
    assert doc["reasons"] == ["not-task-scoped"]
    assert doc["evidence"]["taskScoped"] is False
    assert any(violation in v for v in doc["evidence"]["scopeViolations"])


def test_own_task_trailer_keeps_the_branch_in_scope(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="COMPLETE", message="work\n\nHarnery-Task: 1.2")
    assert assess(repo, "roadmap-1.2")["evidence"]["taskScoped"] is True


def test_continue_manual_for_a_blocked_plan(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="BLOCKED")
    gates_pass(repo)
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "continue-manual"
    assert doc["reasons"] == ["plan-blocked"]


def test_continue_manual_for_failing_gates(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="COMPLETE", files={"broken": "yes\n"})
    assert harn(repo, "gates", "run", "roadmap-1.2").code == 3
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "continue-manual"
    assert doc["reasons"] == ["validation-failed"]


def test_continue_manual_for_an_addendum_branch(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, branch="roadmap-1.2-addendum-1", plan="COMPLETE")
    gates_pass(repo, "roadmap-1.2-addendum-1")
    doc = assess(repo, "roadmap-1.2-addendum-1")
    assert doc["taskId"] == "1.2"
    assert doc["evidence"]["addendum"] is True and doc["evidence"]["addendumNumber"] == 1
    assert doc["classification"] == "continue-manual"
    assert doc["reasons"] == ["addendum-branch"]


def test_continue_manual_without_plan_or_evidence(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="DRAFT")
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "continue-manual"
    assert doc["reasons"] == ["no-plan-or-evidence"]


def test_base_that_moved_on_is_residual_risk_not_a_gap(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="COMPLETE")
    gates_pass(repo)
    write(repo, {"README.md": "newer\n"})
    git(repo, "commit", "-q", "-am", "main moves on")
    doc = assess(repo, "roadmap-1.2")
    assert doc["classification"] == "adopt-complete"
    assert "base-advanced" in codes(doc["residualRisk"])
    assert "validation-base-differs" in codes(doc["residualRisk"])


def test_task_option_and_configured_base(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, branch="feature", plan="IN PROGRESS")
    git(repo, "branch", "trunk", "main")
    git(repo, "config", "harn.base", "trunk")
    doc = assess(repo, "feature", "--task", "1.2")
    assert doc["taskId"] == "1.2" and doc["evidence"]["base"]["rev"] == "trunk"
    assert doc["evidence"]["execPlan"]["path"] == "docs/execplans/1.2.md"


# --- collection errors and bad input [A2] [P7] --------------------------------


def test_collection_error_is_the_deterministic_continue_manual(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="COMPLETE")
    gates_pass(repo)
    (worktree / ".git").write_text("gitdir: /nonexistent/place\n")  # git status fails there
    doc = assess(repo, "roadmap-1.2", "--assessor", "sh -c 'echo never asked; exit 9'")
    assert doc["classification"] == "continue-manual"
    assert doc["reasons"] == ["evidence-collection-error"]
    assert doc["evidence"]["collectionError"]
    assert doc["assessor"]["kind"] == "builtin"  # the external assessor is never asked
    assert harn(repo, "assess", "roadmap-1.2").code == 0


@pytest.mark.parametrize("args", [
    ["no-such-branch"], ["roadmap-1.2", "--base", "no-such-base"], ["roadmap-1.2", "--task", "x;y"],
])
def test_missing_branch_base_or_bad_task_is_bad_input(tmp_path: Path, args: list[str]) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    result = harn(repo, "assess", *args)
    assert result.code == 2
    assert result.err.startswith("git harn: error: ") and "Traceback" not in result.err


@pytest.mark.parametrize("folder", ["../elsewhere", "/abs", "."])
def test_bad_execplans_folder_is_bad_input_not_a_collection_error(tmp_path: Path, folder: str) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    git(repo, "config", "harn.execplans", folder)
    result = harn(repo, "assess", "roadmap-1.2", "--json")
    assert result.code == 2, result.out
    assert result.err.startswith("git harn: error: harn.execplans")
    assert_error_document(result.out, 2)


# --- evidence bound to the tip --------------------------------------------------


def test_gate_evidence_counts_only_for_the_commit_it_was_recorded_on(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="COMPLETE")
    gates_pass(repo)
    first_tip = git(repo, "rev-parse", "roadmap-1.2")
    assert assess(repo, "roadmap-1.2")["classification"] == "adopt-complete"
    write(worktree, {"src/feature.py": "def feature():\n    return 2\n"})
    git(worktree, "commit", "-q", "-am", "one more change")
    doc = assess(repo, "roadmap-1.2")
    assert doc["evidence"]["validation"] is None
    assert doc["classification"] == "adopt-partial"
    assert "missing-validation-evidence" in codes(doc["missingEvidence"])
    assert '"passed": true' in note_of(repo, first_tip)


def plant_note(repo: Path, rev: str, text: str) -> None:
    """Write ``text`` as the note on ``rev`` with plumbing, as a hostile hand could."""
    tip = git(repo, "rev-parse", rev)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=text,
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=repo, input=f"100644 blob {blob}\t{tip}\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    commit = git(repo, "commit-tree", tree, "-m", "planted")
    git(repo, "update-ref", "refs/harnery/notes", commit)


@pytest.mark.parametrize("gates", [
    '{"commit": "TIP", "base": "x"}',
    '{"commit": "TIP"}',
    '{"commit": "TIP", "passed": true, "base": {"oid": 7}}',
])
def test_a_malformed_gates_note_counts_as_no_evidence(tmp_path: Path, gates: str) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo, plan="COMPLETE")
    tip = git(repo, "rev-parse", "roadmap-1.2")
    plant_note(repo, tip, '{"gates": ' + gates.replace("TIP", tip) + "}")
    doc = assess(repo, "roadmap-1.2")
    assert doc["evidence"]["validation"] is None
    assert doc["classification"] == "adopt-partial"
    assert "missing-validation-evidence" in codes(doc["missingEvidence"])
    assert "validation-note-invalid" in codes(doc["residualRisk"])
    plain = harn(repo, "assess", "roadmap-1.2")
    assert plain.code == 0 and "gates     none recorded" in plain.out, plain.err


# --- report-only [A1] ---------------------------------------------------------------


def snapshot(*roots: Path) -> dict[str, str]:
    """Every file under ``roots`` (git dirs included): its content hash, or its link target."""
    out = {}
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = Path(folder, name)
                out[str(path)] = (os.readlink(path) if path.is_symlink()
                                  else hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def test_assess_is_report_only_except_the_note_with_record(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan="IN PROGRESS")
    write(worktree, {"src/feature.py": "changed\n", "untracked.txt": "u\n"})
    git(worktree, "add", "src/feature.py")
    write(worktree, {"docs/execplans/1.2.md": "Status: COMPLETE\n"})
    refs, files = all_refs(repo), snapshot(repo, worktree)
    for assessor in ("builtin", "sh -c 'cat >/dev/null; echo not json'"):
        assert harn(repo, "assess", "roadmap-1.2", "--assessor", assessor).code == 0
        assert harn(repo, "assess", "roadmap-1.2", "--json").code == 0
    assert all_refs(repo) == refs
    assert snapshot(repo, worktree) == files
    assert harn(repo, "assess", "roadmap-1.2", "--record").code == 0
    after = all_refs(repo)
    assert set(after) - set(refs) == {"refs/harnery/notes"}
    assert {k: v for k, v in after.items() if k in refs} == refs
    changed = {p for p in set(files) | set(snapshot(repo, worktree))
               if files.get(p) != snapshot(repo, worktree).get(p)}
    # (and the clone's own list of objects it noted, which a prune reads)
    assert all("/.git/objects/" in p or p.endswith(("/.git/config", "/.git/refs/harnery/notes",
                                                    "/.git/harnery/notes-annotated-here"))
               for p in changed), changed
    note = note_of(repo, "roadmap-1.2")
    assert '"classification": "continue-manual"' in note


# --- hostile text [P5] ---------------------------------------------------------------


def test_hostile_plan_text_is_only_data(tmp_path: Path) -> None:
    """Hostile lines inside the first MiB (the part that is read) fail to
    parse; the plan's one well-formed status line after them is found."""
    repo = task_repo(tmp_path)
    marker = tmp_path / "pwned"
    name = "docs/execplans/1.2-$(rm -rf ~).md"
    worktree = task_branch(repo, plan=None, files={name: "placeholder\n"})
    plan = (f"# $(touch {marker})\n".encode() + b"y" * 500_000 + b"\n"
            + f"Status: COMPLETE; touch {marker}\nStatus: $(touch {marker})\n".encode()
            + b"Status: \0COMPLETE\n\0\xff\xfe binary junk\n" + b" " * 4095 + b"x\n"
            + b"**Status:** `IN PROGRESS`\n" + b"Status: COMPLETE\n")
    assert len(plan) < 1 << 20
    (worktree / name).write_bytes(plan)
    git(worktree, "commit", "-q", "-am", "hostile plan")
    doc = assess(repo, "roadmap-1.2")
    assert not marker.exists()
    assert doc["evidence"]["execPlan"]["path"] == name
    assert doc["evidence"]["execPlan"]["status"] == "IN PROGRESS"  # the first line of the form
    assert doc["classification"] == "adopt-partial" and "plan-in-progress" in doc["reasons"]


def test_plans_reached_through_symlinks_are_not_read(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    worktree = task_branch(repo, plan=None)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "1.2.md").write_text("Status: COMPLETE\n")
    os.symlink(outside / "1.2.md", worktree / "docs/execplans/1.2.md")
    assert assess(repo, "roadmap-1.2")["evidence"]["execPlan"]["path"] is None
    os.unlink(worktree / "docs/execplans/1.2.md")
    (worktree / "docs/execplans/1.1.md").unlink()
    (worktree / "docs/execplans").rmdir()
    os.symlink(outside, worktree / "docs/execplans")
    assert assess(repo, "roadmap-1.2")["evidence"]["execPlan"]["path"] is None
