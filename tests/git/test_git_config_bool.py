"""A boolean setting is read as git reads one (``git config --type=bool``):
words in any case, empty, integers with a unit; anything else is a clear
error, not a silent false."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from git_harn.errors import BadInput
from git_harn.git.repo import open_repo
from tests.kit.harn import git, make_repo

VALUES = ("true", "On", "YES", "1", "2", "-1", "10k", "0", "0k", "", "false", "Off", "no")


@pytest.mark.parametrize("value", VALUES)
def test_a_value_git_reads_as_a_boolean_is_read_the_same(tmp_path: Path, value: str) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.someFlag", value)
    as_git = git(repo, "config", "--type=bool", "--get", "harn.someFlag") == "true"
    assert open_repo(repo).config_bool("harn.someFlag", not as_git) is as_git


def test_a_bare_key_is_true_and_an_unset_one_the_default(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with (repo / ".git" / "config").open("a") as config:
        config.write("[harn]\n\tbareFlag\n")
    opened = open_repo(repo)
    assert opened.config_bool("harn.bareFlag", False) is True
    assert opened.config_bool("harn.unset", True) is True and opened.config_bool("harn.unset", False) is False


@pytest.mark.parametrize("value", ("maybe", "1_000", "2x", "t"))
def test_a_value_git_refuses_as_a_boolean_is_a_one_line_error(tmp_path: Path, value: str) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.someFlag", value)
    refused = subprocess.run(["git", "config", "--type=bool", "--get", "harn.someFlag"], cwd=repo,
                             capture_output=True, check=False)
    assert refused.returncode != 0
    with pytest.raises(BadInput, match="harn.someFlag is not a boolean"):
        open_repo(repo).config_bool("harn.someFlag", False)
