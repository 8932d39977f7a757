from pathlib import Path

from tests.kit.harn import assert_valid, harn, make_repo, record


def test_start_makes_branch_worktree_and_record(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    result = harn(repo, "start", "r1")
    assert result.code == 0, result.err
    rec = record(repo, "r1")
    assert_valid(rec, "run-record")
    assert rec["state"] == "active"
    assert Path(rec["path"], "README.md").read_text() == "hello\n"
