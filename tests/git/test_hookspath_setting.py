"""A valueless ``core.hooksPath`` is not a path: git refuses it, and a new
workspace is given no hooks folder for it (not a folder named "true")."""

from __future__ import annotations

import subprocess
from pathlib import Path

from git_harn.git.hookspath import provide_hooks_folder
from git_harn.git.repo import open_repo
from tests.kit.harn import git, make_repo


def test_a_valueless_hooks_path_copies_no_folder_into_a_workspace(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    workspace = tmp_path / "ws"
    git(repo, "worktree", "add", "-q", "--detach", str(workspace))  # before git refuses the config
    with (repo / ".git" / "config").open("a") as config:
        config.write("[core]\n\thooksPath\n")
    (repo / "true").mkdir()  # what reading the bare key as "true" would copy
    (repo / "true" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    refused = subprocess.run(["git", "rev-parse", "--git-path", "hooks"], cwd=repo,
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "missing value for 'core.hookspath'" in refused.stderr
    assert provide_hooks_folder(open_repo(repo), workspace) is None
    assert not (workspace / "true").exists()


def test_a_relative_hooks_path_is_still_given_to_a_workspace(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".hooks").mkdir()
    (repo / ".hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (repo / ".git" / "info" / "exclude").write_text(".hooks/\n")
    git(repo, "config", "core.hooksPath", ".hooks")
    workspace = tmp_path / "ws"
    git(repo, "worktree", "add", "-q", "--detach", str(workspace))
    assert provide_hooks_folder(open_repo(repo), workspace) is None
    assert (workspace / ".hooks" / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
