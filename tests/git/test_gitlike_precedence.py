"""Issue 11, items 1, 6 and 7: the repository, the config, the identity and the
base git would use, and where a relative harn.worktreeRoot points."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.kit.harn import Result, git, harn, make_repo, record, ref
from tests.kit.user_tools import has_record, start, ws_path


def git_then_harn(cwd: Path, git_options: list[str], *args: str) -> Result:
    """`git <git_options> harn <args>`: git itself runs git-harn, as a user types it."""
    done = subprocess.run(["git", *git_options, "harn", *args], cwd=cwd, capture_output=True, text=True,
                          input="", timeout=120, check=False)
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    """Repository A, where the operator stands, and repository B, the one git is told to use."""
    a = make_repo(tmp_path / "a")
    b = make_repo(tmp_path / "b", {"B.md": "bee\n"})
    for repo in (a, b):
        git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    return a, b


def _acted_on_b(a: Path, b: Path, run_id: str) -> None:
    assert has_record(b, run_id), "no record in the repository git was told to use"
    assert ref(b, f"refs/heads/harnery/ws/{run_id}") is not None
    assert not has_record(a, run_id), "the record went to the repository of the current folder"
    assert ref(a, f"refs/heads/harnery/ws/{run_id}") is None
    assert (ws_path(b, run_id) / "B.md").read_text() == "bee\n"


# --- item 1: discovery ----------------------------------------------------------


def test_git_dir_in_the_environment_names_the_repository(two: tuple[Path, Path]) -> None:
    a, b = two
    result = harn(a, "start", "r1", env={"GIT_DIR": str(b / ".git")})
    assert result.code == 0, result.err
    _acted_on_b(a, b, "r1")


def test_git_dir_option_of_git_names_the_repository(two: tuple[Path, Path]) -> None:
    a, b = two
    done = git_then_harn(a, [f"--git-dir={b / '.git'}"], "start", "r1")
    assert done.code == 0, done.err
    _acted_on_b(a, b, "r1")


def test_git_dir_names_the_repository_and_never_leaks_into_the_workspace(two: tuple[Path, Path],
                                                                        tmp_path: Path) -> None:
    a, b = two
    seen = tmp_path / "seen"
    script = (f'printf "%s|%s\\n" "${{GIT_DIR-unset}}" "$(git rev-parse --show-toplevel)" > "{seen}"; '
              f'git rev-parse --path-format=absolute --git-common-dir >> "{seen}"')
    result = harn(a, "run", "r1", "--keep", "--", "sh", "-c", script, env={"GIT_DIR": str(b / ".git")})
    assert result.code == 0, result.err
    assert has_record(b, "r1") and not has_record(a, "r1")
    env_dir, top = seen.read_text().splitlines()[0].split("|")
    assert env_dir == "unset", "the invoking GIT_DIR leaked into the command run in the workspace"
    assert Path(top) == ws_path(b, "r1")
    assert Path(os.path.realpath(seen.read_text().splitlines()[1])) == (b / ".git").resolve()


# --- item 1: config -------------------------------------------------------------


def test_git_dash_c_config_is_honoured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    root = tmp_path / "from-dash-c"
    done = git_then_harn(repo, ["-c", f"harn.worktreeRoot={root}"], "start", "r1")
    assert done.code == 0, done.err
    assert ws_path(repo, "r1").is_relative_to(root.resolve())


def test_git_config_count_key_value_are_honoured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    root = tmp_path / "from-env"
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "harn.worktreeRoot", "GIT_CONFIG_VALUE_0": str(root)}
    assert git(repo, "config", "harn.worktreeRoot", env=env) == str(root)  # git reads it
    start(repo, "r1", env=env)
    assert ws_path(repo, "r1").is_relative_to(root.resolve())


def test_git_config_global_is_honoured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    root = tmp_path / "from-global"
    other_global = tmp_path / "other-global.gitconfig"
    other_global.write_text(f"[user]\n\tname = Test Operator\n\temail = operator@example.com\n"
                            f"[harn]\n\tworktreeRoot = {root}\n")
    env = {"GIT_CONFIG_GLOBAL": str(other_global)}
    assert git(repo, "config", "harn.worktreeRoot", env=env) == str(root)  # git reads it
    start(repo, "r1", env=env)
    assert ws_path(repo, "r1").is_relative_to(root.resolve())


def test_salvage_commits_use_git_author_and_committer_from_the_environment(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    path = start(repo, "r1")
    (path / "work.txt").write_text("unfinished\n")
    env = {"GIT_AUTHOR_NAME": "Agent Author", "GIT_AUTHOR_EMAIL": "author@agents.example",
           "GIT_COMMITTER_NAME": "Agent Committer", "GIT_COMMITTER_EMAIL": "committer@agents.example"}
    result = harn(repo, "reclaim", "r1", env=env)
    assert result.code == 0, result.err
    who = git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "refs/heads/harnery/salvage/r1")
    assert who == "Agent Author <author@agents.example>|Agent Committer <committer@agents.example>"



def test_salvage_commits_use_git_author_and_committer_dates_from_the_environment(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    path = start(repo, "r1")
    (path / "work.txt").write_text("unfinished\n")
    env = {"GIT_AUTHOR_DATE": "2005-04-07T22:13:13+0200", "GIT_COMMITTER_DATE": "@1700000000 +0000"}
    result = harn(repo, "reclaim", "r1", env=env)
    assert result.code == 0, result.err
    when = git(repo, "log", "-1", "--format=%ad|%cd", "--date=raw", "refs/heads/harnery/salvage/r1")
    assert when == "1112904793 +0200|1700000000 +0000"


def test_a_date_git_does_not_understand_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    path = start(repo, "r1")
    (path / "work.txt").write_text("unfinished\n")
    result = harn(repo, "reclaim", "r1", env={"GIT_AUTHOR_DATE": "not a date"})
    assert result.code == 2 and "GIT_AUTHOR_DATE" in result.err, result.err
    assert ref(repo, "refs/heads/harnery/salvage/r1") is None


def test_config_keys_are_matched_as_git_spells_them() -> None:
    from git_harn.git.config import normal_key, parse_scoped_list

    assert normal_key("Harn.WorktreeRoot") == "harn.worktreeroot"
    assert normal_key("remote.MyOrigin.URL") == "remote.MyOrigin.url"
    assert parse_scoped_list("global\0harn.gate\nmake test\0local\0harn.flag\0local\0harn.gate\nruff\0") == {
        "harn.gate": [("global", "make test"), ("local", "ruff")], "harn.flag": [("local", None)]}


def test_the_operator_scopes_are_read_apart_from_what_the_repository_sets(tmp_path: Path) -> None:
    """[T1]: an agent in a linked worktree can write the repository's config
    and its config.worktree, never the operator's global file or ``git -c``:
    operator_config reads those alone, through their includes."""
    from git_harn.git import open_repo

    repo = make_repo(tmp_path / "repo")
    own = tmp_path / "operator.gitconfig"
    own.write_text("[harn]\n\tgate = make test\n")
    included = tmp_path / "planted.gitconfig"
    included.write_text("[harn]\n\tgate = planted-by-include\n")
    git(repo, "config", "--add", "harn.gate", "planted-locally")
    git(repo, "config", "include.path", str(included))
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(repo, "config", "--worktree", "harn.gateEnv", "ANTHROPIC_API_KEY")
    env = {"GIT_CONFIG_GLOBAL": str(own), "GIT_CONFIG_PARAMETERS": "'harn.gateTimeout'='5'"}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        opened = open_repo(repo)
        assert opened.config_all("harn.gate") == ["make test", "planted-locally", "planted-by-include"]
        assert opened.operator_config_all("harn.gate") == ["make test"]
        assert opened.operator_config("harn.gateEnv") is None and opened.config("harn.gateEnv") is not None
        assert opened.operator_config("harn.gateTimeout") == "5"
        assert {"harn.gate", "include.path", "harn.gateenv"} <= set(opened.repository_config_keys())


# --- item 6: one rule for the base ------------------------------------------------

ROADMAP = "# Roadmap\n\n- [ ] 1.1 First thing\n- [ ] 1.2 Second thing\n  Requires: 1.1\n"


def test_assess_uses_the_remote_tracking_base_that_integrate_lands_on(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = make_repo(tmp_path / "seed", {"README.md": "hello\n", "docs/roadmap.md": ROADMAP})
    git(seed, "push", "-q", str(remote), "main")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(remote), str(work))
    git(work, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))

    git(work, "switch", "-q", "-c", "roadmap-1.1")
    (work / "one.txt").write_text("one\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "work on 1.1")
    git(work, "switch", "-q", "main")
    landed = harn(work, "integrate", "roadmap-1.1")
    assert landed.code == 0, landed.out + landed.err
    assert git(work, "rev-parse", "main") != git(work, "rev-parse", "origin/main")  # local main stays behind

    # The next task is cut from where the work landed, as an agent is told to.
    git(work, "switch", "-q", "-c", "roadmap-1.2", "origin/main")
    (work / "two.txt").write_text("two\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "work on 1.2")
    git(work, "switch", "-q", "main")

    result = harn(work, "assess", "roadmap-1.2", "--json")
    assert result.code == 0, result.err
    evidence = result.json()["evidence"]
    assert evidence["base"]["oid"] == git(work, "rev-parse", "origin/main")
    assert evidence["changedPaths"] == ["two.txt"]
    assert evidence["taskScoped"] is True, evidence["scopeViolations"]
    assert "behind" in result.err and "main" in result.err  # local main is behind origin/main: say so


def test_the_base_rule_follows_harn_remote_and_takes_other_revisions_as_written(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    work = make_repo(tmp_path / "work", {"README.md": "hello\n", "docs/roadmap.md": ROADMAP})
    git(work, "remote", "add", "upstream", str(remote))
    git(work, "push", "-q", "upstream", "main")
    git(work, "fetch", "-q", "upstream")
    git(work, "config", "harn.remote", "upstream")
    git(work, "branch", "roadmap-1.1")
    level = harn(work, "assess", "roadmap-1.1", "--json")
    assert level.code == 0, level.err
    assert level.json()["evidence"]["base"]["rev"] == "upstream/main"
    assert "behind" not in level.err  # local main is where upstream/main is: nothing to say
    oid = git(work, "rev-parse", "main")
    literal = harn(work, "assess", "roadmap-1.1", "--base", oid, "--json")
    assert literal.code == 0, literal.err
    assert literal.json()["evidence"]["base"] == {"rev": oid, "oid": oid}
    local = harn(work, "assess", "roadmap-1.1", "--base", "refs/heads/main", "--json")
    assert local.json()["evidence"]["base"]["rev"] == "refs/heads/main"


# --- item 7: a relative harn.worktreeRoot ------------------------------------------


def test_relative_worktree_root_is_resolved_from_the_main_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", ".harn-wt")
    first = start(repo, "r1")
    assert first.is_relative_to((repo / ".harn-wt").resolve())
    second = start(first, "r2")  # from inside the first workspace
    assert not second.is_relative_to(first), f"{second} is nested inside the workspace {first}"
    assert second.parent == first.parent
    assert git(first, "status", "--porcelain") == ""
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    assert record(repo, "r1")["state"] == "released"


def test_a_worktree_root_inside_a_workspace_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    first = start(repo, "r1")
    git(repo, "config", "harn.worktreeRoot", str(first / "roots"))
    result = harn(repo, "start", "r2")
    assert result.code == 2, (result.out, result.err)
    assert result.err.startswith("git harn: error: ") and "workspace" in result.err
    assert not has_record(repo, "r2")
    assert not (first / "roots").exists()
    assert git(first, "status", "--porcelain") == ""


def test_a_relative_worktree_root_leaves_the_main_checkout_clean(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", ".harn-wt")
    start(repo, "r1")
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
