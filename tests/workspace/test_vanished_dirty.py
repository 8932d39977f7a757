"""A workspace whose folder vanished while it held uncommitted work is said
once, naming the paths the last status saw (issue 45, item 7) [W4] [W7].

Nothing can bring the work back (``git worktree remove --force`` deleted
it), but the record and the command that settles it say what went, instead
of a silent already_gone.
"""

from __future__ import annotations

from pathlib import Path

from tests.kit.harn import git, harn, record
from tests.kit.salvage_trees import started


def _dirty_then_forced_away(tmp_path: Path) -> tuple[Path, Path]:
    repo, wt = started(tmp_path)
    (wt / "src/app.py").write_text("x = 2\n")
    (wt / "notes.md").write_text("an idea\n")
    seen = harn(repo, "status")
    assert "src/app.py" in seen.out and "notes.md" in seen.out, seen.out
    git(repo, "worktree", "remove", "--force", str(wt))
    return repo, wt


def test_status_says_once_which_paths_went_with_the_folder(tmp_path: Path) -> None:
    repo, wt = _dirty_then_forced_away(tmp_path)
    first = harn(repo, "status")
    assert first.code == 0, first.err
    said = first.out + first.err
    assert "r1" in said and "src/app.py" in said and "notes.md" in said, said  # today: "no workspaces"
    assert "vanished" in said
    rec = record(repo, "r1")
    assert rec["state"] == "already_gone"
    assert "src/app.py" in rec["reason"] and "notes.md" in rec["reason"], rec["reason"]

    second = harn(repo, "status")
    assert "src/app.py" not in second.out + second.err and "no workspaces" in second.out, second.out


def test_cleanup_that_settles_it_names_the_paths_too(tmp_path: Path) -> None:
    repo, wt = _dirty_then_forced_away(tmp_path)
    done = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert done.code == 0, done.err
    assert done.json()["state"] == "already_gone"
    assert "src/app.py" in done.json()["reason"] and "2 uncommitted path(s)" in done.json()["reason"]


def test_a_clean_workspace_that_vanished_says_nothing_of_paths(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    assert harn(repo, "status").code == 0
    git(repo, "worktree", "remove", "--force", str(wt))
    first = harn(repo, "status")
    assert "uncommitted" not in first.out + first.err
    assert "uncommitted" not in record(repo, "r1")["reason"]
