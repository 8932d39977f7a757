"""Where a workspace is: a locked worktree that is away, and a preserved
one moved by hand [P1] [W3] [W7]."""

from __future__ import annotations

from pathlib import Path

from helpers import all_refs, assert_valid, git, harn, record, ref
from hooktools import install_hooks
from salvage_helpers import started
from trust_helpers import admin_of


def ws(run_id: str) -> str:
    return f"refs/heads/harnery/ws/{run_id}"


def row(repo: Path, run_id: str) -> dict:  # type: ignore[type-arg]
    result = harn(repo, "status", "--json")
    assert result.code == 0, result.err
    assert_valid(result.json(), "status")
    found = [r for r in result.json()["workspaces"] if r["runId"] == run_id]
    assert len(found) == 1, result.json()
    return found[0]  # type: ignore[no-any-return]


def away(tmp_path: Path, wt: Path) -> Path:
    parked = tmp_path / "parked"
    wt.rename(parked)
    return parked


# --- a locked worktree whose folder is away ------------------------------------


def test_an_unavailable_workspace_is_shown_and_nothing_acts_on_it(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    git(repo, "worktree", "lock", "--reason", "on a removable disk", str(wt))
    away(tmp_path, wt)
    install_hooks(repo)
    refs = all_refs(repo)
    git(repo, "worktree", "add", "-q", str(tmp_path / "other"), "-b", "other")  # post-checkout reconciles
    seen = row(repo, "x")
    assert (seen["location"], seen["state"], seen["next"]) == ("unavailable", "active", [])
    assert "on a removable disk" in seen["reason"] and "git worktree unlock" in seen["reason"]
    shown = harn(repo, "status")
    assert "unavailable:" in shown.out and "locked" in shown.out
    for args in (["cleanup", "x", "--yes"], ["reclaim", "x", "--discard", "--yes"], ["run", "x", "--", "true"],
                 ["start", "x"]):
        refused = harn(repo, *args)
        assert refused.code == 3 and "locked" in refused.err and refused.err.count("\n") == 1, (args, refused.err)
    assert {k: v for k, v in all_refs(repo).items() if k != "refs/heads/other"} == refs
    assert record(repo, "x")["state"] == "active"


# --- a preserved workspace moved by hand ------------------------------------------


def preserved_and_moved(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo, wt = started(tmp_path, "x")
    (wt / "README.md").write_text("uncommitted work\n")
    assert harn(repo, "cleanup", "x", "--yes").code == 3
    admin = admin_of(wt)
    away(tmp_path, wt)
    return repo, wt, admin


def test_a_missing_workspace_is_left_alone_until_the_operator_asks(tmp_path: Path) -> None:
    repo, wt, admin = preserved_and_moved(tmp_path)
    install_hooks(repo)
    git(repo, "worktree", "add", "-q", str(tmp_path / "other"), "-b", "other")  # post-checkout reconciles
    seen = row(repo, "x")
    assert (seen["location"], seen["state"]) == ("missing", "preserved_dirty")
    assert seen["next"] == ["git worktree repair <new path>", "git harn cleanup x --yes"]
    refused = harn(repo, "run", "x", "--", "true")
    assert refused.code == 3 and "git worktree repair" in refused.err, refused.err
    dry = harn(repo, "cleanup", "x", "--json")  # a dry run says what --yes would do, and does nothing
    assert dry.code == 0 and dry.json()["wouldBe"] == "already_gone" and "repair" in dry.json()["reason"]
    assert admin.is_dir() and record(repo, "x")["state"] == "preserved_dirty"

    asked = harn(repo, "cleanup", "x", "--yes")  # the operator says it is gone for good
    assert asked.code == 0 and record(repo, "x")["state"] == "already_gone", asked.err
    assert not admin.exists()


def test_a_moved_workspace_without_preserved_changes_is_settled_as_before(tmp_path: Path) -> None:
    repo, wt = started(tmp_path, "x")
    away(tmp_path, wt)
    assert harn(repo, "status").code == 0
    assert record(repo, "x")["state"] == "already_gone" and ref(repo, ws("x")) is None
