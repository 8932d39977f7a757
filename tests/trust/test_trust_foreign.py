"""Workspaces that are not this repository's to act on (issue 10, defects 1
and 7): records fetched from another clone on the same host, and a workspace
whose ``.git`` an agent replaced or deleted [P1] [P7]."""

from __future__ import annotations

from pathlib import Path

from tests.kit.git_crashes import share_records, start_in, two_clones
from tests.kit.harn import all_refs, assert_valid, git, harn, make_repo, record, ref
from tests.kit.salvage_trees import started, tree_files, worktree_files

PRESERVED = ("preserved_dirty", "preserved_unmerged")


def status_row(repo: Path, run_id: str) -> dict:  # type: ignore[type-arg]
    result = harn(repo, "status", "--json")
    assert result.code == 0, result.err
    document = result.json()
    assert_valid(document, "status")
    rows = [row for row in document["workspaces"] if row["runId"] == run_id]
    assert len(rows) == 1, document
    return rows[0]  # type: ignore[no-any-return]


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("git harn: error: "), err
    return lines[0]


def branch_refs(repo: Path) -> dict[str, str]:
    """Every ref but git-harn's own records, which may record what happened."""
    return {name: oid for name, oid in all_refs(repo).items() if not name.startswith("refs/harnery/")}


# --- 10.1 ----------------------------------------------------------------------


def test_a_workspace_fetched_from_another_clone_is_foreign_there_and_never_touched(tmp_path: Path) -> None:
    clones = two_clones(tmp_path)
    wt = start_in(clones.a, "x")
    (wt / "README.md").write_text("A's preserved work\n")
    (wt / "new.txt").write_text("A's new file\n")
    assert harn(clones.a, "cleanup", "x", "--yes").code == 3
    share_records(clones)
    work = worktree_files(wt)
    refs_a, refs_b = all_refs(clones.a), all_refs(clones.b)

    # B shows A's workspace as foreign: neither here nor vanished.
    assert status_row(clones.b, "x")["location"] not in ("here", "gone")  # today: "here"
    # A's git dir no longer holds the clone the record names, so B cannot act
    # through it (issue 45: through the owning clone when it can):
    # every mutation from B is refused with one line naming where it lives.
    own_id = git(clones.a, "config", "harn.cloneId")
    git(clones.a, "config", "harn.cloneId", "not-the-maker")
    for args in (["reclaim", "x", "--discard", "--yes"], ["reclaim", "x"], ["cleanup", "x", "--yes"]):
        refused = harn(clones.b, *args)
        assert refused.code != 0, (args, refused.out)
        line = one_error_line(refused.err)
        assert str(clones.a) in line or str(wt) in line, line
        assert worktree_files(wt) == work, args  # today: --discard wiped A's work
    assert all_refs(clones.a) == refs_a and all_refs(clones.b) == refs_b
    git(clones.a, "config", "harn.cloneId", own_id)

    # A still owns it: its own reclaim saves the work.
    assert harn(clones.a, "reclaim", "x").code == 0
    saved = tree_files(clones.a, "refs/heads/harnery/salvage/x")
    assert saved[b"README.md"][1] == b"A's preserved work\n" and saved[b"new.txt"][1] == b"A's new file\n"


# --- 10.7 ----------------------------------------------------------------------


def test_a_workspace_whose_git_was_replaced_is_preserved_with_a_reason(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    tip = ref(repo, "refs/heads/harnery/ws/x")
    (wt / "src/app.py").write_text("the agent's work\n")
    (wt / ".git").unlink()  # the agent: rm .git; git init; commit everything
    git(wt, "init", "-q")
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", "the agent's own history")
    inner_head = git(wt, "rev-parse", "HEAD")
    files, refs = worktree_files(wt), branch_refs(repo)

    row = status_row(repo, "x")
    assert row["error"] or row["reason"], row  # today: active, 0 dirty, nothing said

    cleaned = harn(repo, "cleanup", "x", "--yes")
    assert cleaned.code == 3, cleaned.err  # today: 1, git worktree's "is not a .git file"
    rec = record(repo, "x")
    assert rec["state"] in PRESERVED and rec["reason"]
    reclaimed = harn(repo, "reclaim", "x")
    assert reclaimed.code == 3, reclaimed.err  # today: 1, "<oid> is not a commit"
    assert "Traceback" not in reclaimed.err

    assert worktree_files(wt) == files and git(wt, "rev-parse", "HEAD") == inner_head
    assert branch_refs(repo) == refs and ref(repo, "refs/heads/harnery/ws/x") == tip
    assert record(repo, "x")["state"] in PRESERVED


def test_a_workspace_inside_the_repository_without_its_git_is_not_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n", "src/a.py": "a\n", ".gitignore": ".worktrees/\n"})
    git(repo, "config", "harn.worktreeRoot", ".worktrees")
    wt = start_in(repo, "x")
    (wt / "notes.txt").write_text("the agent's notes\n")
    (wt / ".git").unlink()
    (repo / "README.md").write_text("the operator's own edit\n")  # in the main checkout
    files, refs = worktree_files(wt), branch_refs(repo)

    row = status_row(repo, "x")
    assert [d["path"] for d in row["dirtyPaths"]] != ["README.md"], row  # today: the enclosing repo's file
    assert row["error"] or row["reason"], row

    assert harn(repo, "cleanup", "x", "--yes").code == 3  # today: 1, git worktree's ".git does not exist"
    assert record(repo, "x")["state"] in PRESERVED
    discarded = harn(repo, "reclaim", "x", "--discard", "--yes")
    assert discarded.code != 0, discarded.out
    # Today the discard resets the enclosing repository: the operator's edit is lost.
    assert (repo / "README.md").read_text() == "the operator's own edit\n"
    assert worktree_files(wt) == files and branch_refs(repo) == refs


def test_a_workspace_whose_admin_folder_names_another_common_dir_is_never_cleaned(tmp_path: Path) -> None:
    """Its ``.git`` and the admin folder's ``gitdir`` still agree, but the
    admin folder's ``commondir`` names another repository: git run there
    would act on that one. Cleanup and reclaim refuse, and nothing moves."""
    repo, wt = started(tmp_path, "x")
    other = make_repo(tmp_path / "other")
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    (admin / "commondir").write_text(str(other / ".git") + "\n")
    files, refs = worktree_files(wt), branch_refs(repo)

    cleaned = harn(repo, "cleanup", "x", "--yes")
    assert cleaned.code != 0, cleaned.out
    assert str(other / ".git") in one_error_line(cleaned.err)  # names the repository git would act on
    assert harn(repo, "reclaim", "x", "--discard", "--yes").code != 0
    assert worktree_files(wt) == files and branch_refs(repo) == refs
    assert (admin / "commondir").exists() and wt.is_dir()
