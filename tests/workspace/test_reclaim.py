"""git harn reclaim: salvage or discard, then cleanup releases [W5] [W7] [W8] [P1] [P2]."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.kit.harn import all_refs, assert_valid, git, harn, record, ref
from tests.kit.salvage_trees import (
    EXEC,
    LINK,
    PLAIN,
    lock_files,
    make_dirty,
    started,
    tree_files,
    worktree_files,
)

SALVAGE = "refs/heads/harnery/salvage/r1"
WS = "refs/heads/harnery/ws/r1"


def note_on(repo: Path, rev: str) -> dict:  # type: ignore[type-arg]
    """The JSON note git-harn keeps on a commit (refs/harnery/notes)."""
    oid = git(repo, "rev-parse", rev)
    return json.loads(git(repo, "show", f"refs/harnery/notes:{oid}"))  # type: ignore[no-any-return]


def reclaim_json(repo: Path, *args: str, env: dict[str, str] | None = None) -> dict:  # type: ignore[type-arg]
    result = harn(repo, "reclaim", "r1", "--json", *args, env=env)
    assert result.code == 0, result.err
    document = result.json()
    assert_valid(document, "reclaim-result")
    return document  # type: ignore[no-any-return]


def test_salvage_keeps_modified_deleted_and_untracked_files(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    make_dirty(wt)
    expected = worktree_files(wt)
    preserved = harn(repo, "cleanup", "r1", "--yes")
    assert preserved.code == 3 and "preserved_dirty" in preserved.out

    document = reclaim_json(repo)

    assert document["outcome"] == "released" and document["state"] == "released"
    assert document["mode"] == "salvage"
    assert document["salvage"]["ref"] == SALVAGE
    assert document["salvage"]["oid"] == ref(repo, SALVAGE)
    assert set(document["salvage"]["paths"]) == {"README.md", "src/app.py", "src/old.py", "notes/plan.md"}
    assert tree_files(repo, SALVAGE) == expected
    assert b"build.log" not in tree_files(repo, SALVAGE)  # ignored files stay out
    assert not wt.exists() and ref(repo, WS) is None
    rec = record(repo, "r1")
    assert_valid(rec, "run-record")
    assert rec["state"] == "released" and rec["salvage"]["oid"] == document["salvage"]["oid"]
    assert rec["reclaiming"] is None
    assert lock_files(repo) == []


def test_staged_version_is_kept_under_the_working_tree(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    make_dirty(wt)
    reclaim_json(repo)
    assert tree_files(repo, SALVAGE)[b"README.md"] == (PLAIN, b"working version\n")
    assert tree_files(repo, SALVAGE + "^1")[b"README.md"] == (PLAIN, b"staged version\n")
    base = git(repo, "rev-parse", "main")
    assert git(repo, "rev-parse", SALVAGE + "^1^1") == base


def test_salvage_commit_message_identity_and_note(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    make_dirty(wt)
    ws_id = record(repo, "r1")["workspaceId"]
    reclaim_json(repo)
    message = git(repo, "log", "-1", "--format=%B", SALVAGE)
    assert "run r1" in message and ws_id in message and "notes/plan.md" in message
    trailers = git(repo, "log", "-1", "--format=%(trailers:only,unfold)", SALVAGE)
    assert trailers.splitlines() == ["Harnery-Run: r1", f"Harnery-Workspace: {ws_id}"]
    assert git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", SALVAGE) == (
        "Test Operator <operator@example.com>|Test Operator <operator@example.com>")
    shown = git(repo, "log", "-1", SALVAGE)  # no flags: notes.displayRef does it
    assert "Notes (harnery/notes):" in shown
    note = note_on(repo, SALVAGE)["salvage"]
    assert note["run"] == "r1" and note["workspace"] == ws_id
    assert note["operator"] == "Test Operator <operator@example.com>"
    assert "notes/plan.md" in note["paths"] and note["time"].endswith("Z")


def test_salvage_under_a_hook_that_rejects_commits(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "commit-msg", "prepare-commit-msg", "post-commit"):
        (hooks / name).write_text("#!/bin/sh\necho rejected >&2\nexit 1\n")
        (hooks / name).chmod(0o755)
    make_dirty(wt)
    expected = worktree_files(wt)
    refused = git(wt, "commit", "-qam", "try", check=False)  # the hook really rejects
    assert refused == "" and git(wt, "rev-parse", "HEAD") == git(repo, "rev-parse", "main")

    document = reclaim_json(repo)
    assert document["outcome"] == "released"
    assert tree_files(repo, SALVAGE) == expected


def test_discard_needs_yes_and_changes_nothing_without_it(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    make_dirty(wt)
    before_refs, before_files = all_refs(repo), worktree_files(wt, ignored=())
    result = harn(repo, "reclaim", "r1", "--discard")
    assert result.code == 2
    assert result.err.startswith("git harn: error: ") and "--yes" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert all_refs(repo) == before_refs
    assert worktree_files(wt, ignored=()) == before_files


def test_discard_restores_a_staged_deletion_and_leaves_ignored_files(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    git(wt, "rm", "-q", "src/old.py")  # a staged deletion: clean alone would miss it
    (wt / "src/app.py").write_text("scratch\n")
    (wt / "junk.txt").write_text("junk\n")
    (wt / "tmpdir").mkdir()
    (wt / "tmpdir/x").write_text("x\n")
    (wt / "keep.log").write_text("ignored\n")

    stopped = harn(repo, "reclaim", "r1", "--discard", "--yes", env={"HARN_FAILPOINT": "reclaim-after-clean"})
    assert stopped.code != 0
    assert (wt / "src/old.py").read_text() == "old\n"
    assert (wt / "src/app.py").read_text() == "x = 1\n"
    assert not (wt / "junk.txt").exists() and not (wt / "tmpdir").exists()
    assert (wt / "keep.log").read_text() == "ignored\n"
    assert git(wt, "status", "--porcelain") == ""

    document = reclaim_json(repo, "--discard", "--yes")
    assert document["mode"] == "discard" and document["salvage"] is None
    assert document["outcome"] == "released" and not wt.exists()
    assert ref(repo, SALVAGE) is None and ref(repo, WS) is None


def test_clean_worktree_makes_no_empty_commit(tmp_path: Path) -> None:
    repo, _ = started(tmp_path)
    before = {k: v for k, v in all_refs(repo).items() if not k.startswith("refs/harnery/")}
    document = reclaim_json(repo)
    assert document["salvage"] is None and document["outcome"] == "released"
    after = {k: v for k, v in all_refs(repo).items() if not k.startswith("refs/harnery/")}
    assert ref(repo, SALVAGE) is None
    assert after == {k: v for k, v in before.items() if k != WS}
    assert git(repo, "rev-list", "--count", "--exclude=refs/harnery/*", "--all") == "1"


def test_unmerged_commits_get_the_salvage_branch_without_a_new_commit(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "feature.py").write_text("feature\n")
    git(wt, "add", "feature.py")
    git(wt, "commit", "-qm", "agent commit")
    tip = git(wt, "rev-parse", "HEAD")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3
    assert record(repo, "r1")["state"] == "preserved_unmerged"

    document = reclaim_json(repo)
    assert document["salvage"]["oid"] == tip == ref(repo, SALVAGE)
    assert document["salvage"]["paths"] == ["feature.py"]
    assert document["outcome"] == "released" and ref(repo, WS) is None
    assert note_on(repo, tip)["salvage"]["run"] == "r1"


def test_commits_gained_beyond_the_frozen_intent_are_salvaged(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "a.txt").write_text("a\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3  # freezes the intent at main
    frozen = record(repo, "r1")["frozenIntent"]["oid"]
    git(wt, "add", "a.txt")
    git(wt, "commit", "-qm", "after the freeze")
    gained = git(wt, "rev-parse", "HEAD")
    (wt / "b.txt").write_text("b\n")
    blocked = harn(repo, "cleanup", "r1", "--yes")
    assert blocked.code == 3 and "frozen intent" in blocked.out

    document = reclaim_json(repo)
    salvage = document["salvage"]["oid"]
    assert git(repo, "rev-parse", salvage + "^1") == gained
    assert git(repo, "rev-parse", gained + "^1") == frozen
    assert tree_files(repo, salvage)[b"b.txt"] == (PLAIN, b"b\n")
    assert document["outcome"] == "released"
    log = git(repo, "log", "--format=%s", "refs/harnery/runs/r1")
    assert "reclaimed:" in log and "salvage:" in log


def test_repeat_salvage_keeps_the_earlier_one_reachable(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "first.txt").write_text("first\n")
    first = reclaim_json(repo)["salvage"]["oid"]
    assert harn(repo, "start", "r1").code == 0
    wt2 = Path(record(repo, "r1")["path"])
    (wt2 / "second.txt").write_text("second\n")
    second = reclaim_json(repo)["salvage"]["oid"]
    assert second != first
    git(repo, "merge-base", "--is-ancestor", first, second)  # raises unless an ancestor
    assert tree_files(repo, second)[b"second.txt"] == (PLAIN, b"second\n")
    assert tree_files(repo, first)[b"first.txt"] == (PLAIN, b"first\n")
    assert ref(repo, SALVAGE) == second


def test_missing_worktree_reports_already_gone(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "lost.txt").write_text("gone with the folder\n")
    shutil.rmtree(wt)
    document = reclaim_json(repo)
    assert document["outcome"] == "already_gone" and document["state"] == "already_gone"
    assert document["salvage"] is None
    assert str(wt) not in git(repo, "worktree", "list")


def test_reclaiming_a_released_workspace_is_already_gone(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "x.txt").write_text("x\n")
    first = reclaim_json(repo)
    before = all_refs(repo)
    again = reclaim_json(repo)
    assert again["outcome"] == "already_gone" and again["state"] == "released"
    assert again["salvage"] == first["salvage"]
    assert all_refs(repo) == before
    plain = harn(repo, "reclaim", "r1")
    assert plain.code == 0 and "already_gone" in plain.out


def test_work_is_reachable_after_worktree_and_branch_are_gone(tmp_path: Path) -> None:
    """[W5]: remove the worktree and delete the workspace branch the
    way cleanup does, prune every unreachable object, and the work is there."""
    repo, wt = started(tmp_path)
    make_dirty(wt)
    expected = worktree_files(wt)
    reclaim_json(repo)
    assert not wt.exists() and ref(repo, WS) is None
    git(repo, "worktree", "prune")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert tree_files(repo, SALVAGE) == expected
    assert git(repo, "show", SALVAGE + ":notes/plan.md") == "# plan"


def test_odd_files_are_salvaged_exactly(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "with space.txt").write_text("space\n")
    (wt / "ünïcødé ✓.md").write_text("unicode\n")
    (wt / "new\nline").write_text("newline in the name\n")
    (wt / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (wt / "run.sh").write_text("#!/bin/sh\n")
    (wt / "run.sh").chmod(0o755)
    os.symlink("../outside/target", wt / "link")
    os.symlink("src", wt / "dirlink")
    (wt / "src/app.py").chmod(0o755)
    reclaim_json(repo)
    files = tree_files(repo, SALVAGE)
    assert files[b"link"] == (LINK, b"../outside/target")
    assert files[b"dirlink"] == (LINK, b"src")
    assert files[b"run.sh"][0] == EXEC and files[b"src/app.py"] == (EXEC, b"x = 1\n")
    assert files[b"blob.bin"] == (PLAIN, bytes(range(256)) * 4)
    assert files["ünïcødé ✓.md".encode()] == (PLAIN, b"unicode\n")
    assert files[b"new\nline"] == (PLAIN, b"newline in the name\n")
    assert files[b"with space.txt"] == (PLAIN, b"space\n")


def test_machine_identity_when_the_operator_has_none(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "x.txt").write_text("x\n")
    bare_config = tmp_path / "empty-gitconfig"
    bare_config.write_text("")
    nohome = tmp_path / "nohome"
    nohome.mkdir()
    env = {"GIT_CONFIG_GLOBAL": str(bare_config), "HOME": str(nohome), "XDG_CONFIG_HOME": str(nohome)}
    reclaim_json(repo, env=env)
    assert git(repo, "log", "-1", "--format=%an <%ae>", SALVAGE) == "git-harn machine <git-harn@localhost>"

    repo2, wt2 = started(tmp_path / "two")
    git(repo2, "config", "harn.machineIdentity", "Build Box <box@example.com>")
    (wt2 / "y.txt").write_text("y\n")
    reclaim_json(repo2, env=env)
    assert git(repo2, "log", "-1", "--format=%an <%ae>", SALVAGE) == "Build Box <box@example.com>"


def test_another_hosts_workspace_is_refused(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "x.txt").write_text("x\n")
    git(repo, "config", "harn.host", "some-other-host")
    before = all_refs(repo)
    result = harn(repo, "reclaim", "r1")
    assert result.code == 3 and "host" in result.err
    assert all_refs(repo) == before and (wt / "x.txt").exists()


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    repo, _ = started(tmp_path)
    before = all_refs(repo)
    for args in (["nope"], ["bad..id"], []):
        result = harn(repo, "reclaim", *args)
        assert result.code == 2, args
        assert result.err.startswith("git harn: error: ") and "Traceback" not in result.err
    assert all_refs(repo) == before


def test_human_output_names_branch_commit_paths_and_state(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    make_dirty(wt)
    result = harn(repo, "reclaim", "r1")
    assert result.code == 0, result.err
    oid = ref(repo, SALVAGE)
    assert oid is not None
    assert f"to harnery/salvage/r1 at {oid[:12]}" in result.out
    assert "notes/plan.md" in result.out and "src/old.py" in result.out
    assert "state released" in result.out and "git log harnery/salvage/r1" in result.out
    assert result.err == ""  # quiet when piped


def test_status_names_the_way_out_of_a_preserved_workspace(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "x.txt").write_text("x\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3
    shown = harn(repo, "status")
    assert "resolve: git harn reclaim r1  or  git harn reclaim r1 --discard --yes" in shown.out
    document = harn(repo, "status", "--json").json()
    assert_valid(document, "status")
    assert document["workspaces"][0]["next"] == ["git harn reclaim r1", "git harn reclaim r1 --discard --yes"]
    reclaim_json(repo)
    assert "resolve:" not in harn(repo, "status", "--all").out


def test_demo_reclaims_and_shows_the_salvage_log(tmp_path: Path) -> None:
    result = harn(tmp_path, "demo", env={"TMPDIR": str(tmp_path)})
    assert result.code == 0, result.err
    assert "$ git harn reclaim demo-agent" in result.out
    assert "salvaged 3 path(s) of run demo-agent to harnery/salvage/demo-agent" in result.out
    assert "$ git log harnery/salvage/demo-agent" in result.out
    assert "Notes (harnery/notes):" in result.out and "Harnery-Run: demo-agent" in result.out
    assert "$ git harn status --all" in result.out
    tail = result.out.split("$ git harn status --all", 1)[1]
    assert "released" in tail


def test_reclaim_is_documented(tmp_path: Path) -> None:
    assert harn(tmp_path, "reclaim", "--help").code == 0
    man = (Path(__file__).resolve().parents[2] / "man" / "git-harn.1").read_text()
    for word in ("reclaim", r"\-\-discard", r"\-\-yes", r"\-\-json", "harnery/salvage"):
        assert word in man, word


def test_blocked_cleanup_points_to_reclaim(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "a.txt").write_text("a\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3  # freezes the intent
    git(wt, "add", "a.txt")
    git(wt, "commit", "-qm", "moves the ref past the frozen intent")
    blocked = harn(repo, "cleanup", "r1", "--yes")
    assert blocked.code == 3 and "blocked" in blocked.out
    assert "resolve: git harn reclaim r1" in blocked.out


def test_status_of_an_interrupted_reclaim_points_to_reclaim(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    (wt / "a.txt").write_text("a\n")
    harn(repo, "reclaim", "r1", env={"HARN_FAILPOINT": "reclaim-after-salvage-record"})
    rec = record(repo, "r1")
    assert rec["state"] == "active" and rec["frozenIntent"] is not None
    document = harn(repo, "status", "--json").json()
    assert document["workspaces"][0]["next"][0] == "git harn reclaim r1"


def test_detached_head_commits_are_salvaged_and_head_reattached(tmp_path: Path) -> None:
    repo, wt = started(tmp_path)
    git(wt, "checkout", "-q", "--detach")
    (wt / "detached.txt").write_text("only on a detached HEAD\n")
    git(wt, "add", "detached.txt")
    git(wt, "commit", "-qm", "detached work")
    detached = git(wt, "rev-parse", "HEAD")
    (wt / "dirt.txt").write_text("dirt\n")
    document = reclaim_json(repo)
    assert document["outcome"] == "released"
    assert git(repo, "rev-parse", SALVAGE + "^1") == detached
    assert tree_files(repo, SALVAGE)[b"dirt.txt"] == (PLAIN, b"dirt\n")


def test_an_embedded_repository_is_kept_and_the_workspace_preserved(tmp_path: Path) -> None:
    """git add keeps a nested repository as a link to its commit, not its
    files, and clean -fd will not delete it: cleanup must preserve it."""
    repo, wt = started(tmp_path)
    nested = wt / "vendor"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "lib.txt").write_text("nested work\n")
    git(nested, "add", "lib.txt")
    git(nested, "commit", "-qm", "nested")
    result = harn(repo, "reclaim", "r1", "--json")
    assert result.code == 3 and "vendor/.git" in result.err
    assert ref(repo, "refs/heads/harnery/salvage/r1") is None  # refused before anything changed
    assert (nested / "lib.txt").read_text() == "nested work\n"
    cleaned = harn(repo, "cleanup", "r1", "--yes", "--json")
    assert cleaned.code == 3 and "vendor" in cleaned.json()["reason"]
    assert record(repo, "r1")["reclaiming"] is None
