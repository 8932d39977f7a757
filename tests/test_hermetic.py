"""The test session cannot touch anyone's home: the guards themselves, tested."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from tests.kit.harn import git, make_repo


def test_home_is_a_folder_that_does_not_exist() -> None:
    home = Path(os.environ["HOME"])
    assert not home.exists() and Path(os.path.expanduser("~")) == home


def test_git_harn_data_and_git_config_stay_in_the_sandbox(tmp_path: Path) -> None:
    assert Path(platformdirs.user_data_dir("git-harn")).is_relative_to(Path(os.environ["XDG_DATA_HOME"]))
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "--global", "test.written", "yes")
    assert "written = yes" in Path(os.environ["GIT_CONFIG_GLOBAL"]).read_text()
    git(repo, "config", "--global", "--unset", "test.written")


def test_a_fixed_date_makes_the_same_first_commit(tmp_path: Path) -> None:
    one = git(make_repo(tmp_path / "one"), "rev-parse", "HEAD")
    two = git(make_repo(tmp_path / "two"), "rev-parse", "HEAD")
    assert one == two
