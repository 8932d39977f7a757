"""doctor's setup findings of what an agent could have planted for every
later git (issue 43, item 5) [T1] [T2]: config keys of the repository's own
config that run a program or redirect a remote, hooks that are neither
git-harn's nor a known manager's, ``refs/replace/*``, and a remote URL other
than the one the last workflow run started with. Each printed command, run
as printed, makes its finding go."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.kit.harn import assert_valid, git, harn, make_repo
from tests.kit.workflow_repo import setup


def _doctor(repo: Path) -> dict[str, Any]:
    done = harn(repo, "doctor", "--json")
    assert done.code in (0, 1), done.err
    document: dict[str, Any] = done.json()
    assert_valid(document, "doctor")
    return document


def _found(document: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in document["findings"] if f["code"] == code]


def _run_as_printed(repo: Path, command: str) -> None:
    done = subprocess.run(shlex.split(command), cwd=repo, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (command, done.stderr)


def test_program_settings_in_the_repository_config_are_found_and_removed_as_printed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert harn(repo, "hooks", "install").code == 0
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "--detach", str(linked))  # before worktreeConfig: git copies the file
    git(repo, "config", "core.fsmonitor", "/tmp/evil")
    git(repo, "config", "filter.x.clean", "/tmp/evil clean")
    git(repo, "config", "merge.x.driver", "/tmp/evil %A")
    git(repo, "config", "credential.helper", "!/tmp/evil")
    git(repo, "config", "url./tmp/attacker.git.insteadOf", "https://example.com/repo.git")
    git(repo, "config", "remote.origin.receivepack", "/tmp/evil")
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(repo, "config", "--worktree", "core.sshCommand", "/tmp/evil")
    git(repo, "config", "core.pager", "less")  # also a program: reported, the operator decides
    git(linked, "config", "--worktree", "diff.external", "/tmp/evil")  # the linked worktree's own file
    git(repo, "config", "user.name", "Someone")  # runs nothing: no finding

    document = _doctor(repo)

    found = {f["subject"]["key"]: f for f in _found(document, "config-runs-program")}
    assert set(found) == {"core.fsmonitor", "filter.x.clean", "merge.x.driver", "credential.helper",
                          "url./tmp/attacker.git.insteadof", "remote.origin.receivepack", "core.sshcommand",
                          "core.pager", "diff.external"}, found
    assert found["core.sshcommand"]["subject"]["scope"] == "worktree"
    assert found["diff.external"]["subject"]["file"] == str(repo / ".git" / "worktrees" / "linked" / "config.worktree")
    assert all(f["kind"] == "setup" and not f["fixable"] for f in found.values())
    for finding in found.values():
        _run_as_printed(repo, finding["fix"])
    assert _found(_doctor(repo), "config-runs-program") == []


def test_an_fsmonitor_switched_off_is_no_finding(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "core.fsmonitor", "false")
    assert _found(_doctor(repo), "config-runs-program") == []


def test_unknown_hooks_and_replace_refs_are_found(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert harn(repo, "hooks", "install").code == 0
    hooks = repo / ".git" / "hooks"
    planted = hooks / "pre-push"
    planted.write_text("#!/bin/sh\n/tmp/evil\n")
    planted.chmod(0o755)
    lfs = hooks / "pre-push-lfs-like"
    lfs.write_text("#!/bin/sh\ngit lfs pre-push-lfs-like \"$@\"\n")  # git-lfs's: a known manager
    lfs.chmod(0o755)
    (hooks / "not-executable").write_text("#!/bin/sh\n")
    head = git(repo, "rev-parse", "HEAD").strip()
    other = git(repo, "commit-tree", "-m", "look-alike", git(repo, "rev-parse", "HEAD^{tree}").strip()).strip()
    git(repo, "replace", head, other)

    document = _doctor(repo)

    unknown = _found(document, "hook-unknown")
    assert [f["what"] for f in unknown] == [str(planted)], unknown
    replaced = _found(document, "replace-ref")
    assert [f["what"] for f in replaced] == [f"refs/replace/{head}"]
    assert replaced[0]["subject"]["oid"] == other
    for finding in [*unknown, *replaced]:
        _run_as_printed(repo, finding["fix"])
    after = _doctor(repo)
    assert _found(after, "hook-unknown") == [] and _found(after, "replace-ref") == []


def test_a_remote_url_other_than_the_last_runs_is_found(tmp_path: Path) -> None:
    wf = setup(tmp_path, roadmap="# Roadmap\n\n- [ ] 1.1 First thing\n")
    git(wf.work, "remote", "set-url", "origin", f"file://user:token@localhost{wf.remote}")
    done = wf.run("--json", timeout=200)
    doc = done.json()
    assert_valid(doc, "workflow-result")
    assert doc["remoteUrl"] == f"file://localhost{wf.remote}"  # kept without credentials
    assert _found(_doctor(wf.work), "remote-url-changed") == []

    git(wf.work, "config", "remote.origin.url", str(tmp_path / "attacker.git"))
    found = _found(_doctor(wf.work), "remote-url-changed")

    assert len(found) == 1, found
    assert found[0]["subject"] == {"remote": "origin", "recorded": f"file://localhost{wf.remote}",
                                   "now": str(tmp_path / "attacker.git")}
    _run_as_printed(wf.work, found[0]["fix"])
    assert _found(_doctor(wf.work), "remote-url-changed") == []
