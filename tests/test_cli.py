"""Bad input [P7], locks, repository layouts, help and the man page [N4] [C1] [C4]."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from git_harn.cli import cli
from tests.kit.harn import all_refs, docs_text, git, harn, make_repo, record, wait_for

INVALID_IDS = ["../x", "a..b", "x.lock", "", "a" * 200, "a b", "a\nb", "@{", "-x", "x/y", "x."]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def _worktree_root() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "git-harn" / "worktrees"


def _snapshot(repo: Path) -> tuple[dict[str, str], list[str]]:
    root = _worktree_root()
    return all_refs(repo), sorted(str(p) for p in root.rglob("*")) if root.exists() else []


@pytest.mark.parametrize("run_id", INVALID_IDS)
@pytest.mark.parametrize("command", [["start"], ["cleanup", "--yes"], ["status"], ["log"],
                                     ["run", "--", "true"]])
def test_invalid_run_ids_exit_2_with_one_line_and_change_nothing(
        repo: Path, run_id: str, command: list[str]) -> None:
    before = _snapshot(repo)
    args = [command[0], "--", run_id] if run_id.startswith("-") and command[0] != "run" else \
        [command[0], run_id, *command[1:]]
    result = harn(repo, *args)
    assert result.code == 2, (args, result.err)
    assert result.err.startswith("git harn: error: ") and result.err.count("\n") == 1
    assert "Traceback" not in result.err
    assert _snapshot(repo) == before


@pytest.mark.parametrize("command", [["cleanup", "nope", "--yes"], ["status", "nope"], ["log", "nope"]])
def test_unknown_run_id_exits_2(repo: Path, command: list[str]) -> None:
    before = _snapshot(repo)
    result = harn(repo, *command)
    assert result.code == 2 and "unknown run id: nope" in result.err
    assert _snapshot(repo) == before


def test_outside_a_repository_exits_2(tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    for args in (["status"], ["start", "r1"], ["cleanup", "r1", "--yes"]):
        result = harn(outside, *args, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
        assert result.code == 2 and "not a git repository" in result.err
    assert list(outside.iterdir()) == []


def test_reftable_repository_gets_a_clear_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "core.repositoryformatversion", "1")
    git(repo, "config", "extensions.refStorage", "reftable")
    result = harn(repo, "status")
    ours = [line for line in result.err.splitlines() if line.startswith("git harn:")]
    assert result.code == 2 and len(ours) == 1 and "reftable" in ours[0]


def test_debug_shows_a_traceback_only_when_asked(repo: Path) -> None:
    quiet = harn(repo, "cleanup", "nope", "--yes")
    loud = harn(repo, "cleanup", "nope", "--yes", env={"HARN_DEBUG": "1"})
    assert "Traceback" not in quiet.err and "Traceback" in loud.err


def test_second_mutating_command_on_a_busy_run_exits_1(repo: Path, tmp_path: Path) -> None:
    flag = tmp_path / "started"
    slow = subprocess.Popen(
        ["git", "harn", "run", "r1", "--", sys.executable, "-c",
         f"import pathlib, time; pathlib.Path({str(flag)!r}).touch(); time.sleep(4)"],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(flag)
    busy = harn(repo, "cleanup", "r1", "--yes")
    assert busy.code == 1 and "run r1 is busy" in busy.err
    assert slow.wait(timeout=60) == 0
    assert record(repo, "r1")["state"] == "released"


def test_lock_of_a_dead_process_is_broken_with_a_warning(repo: Path) -> None:
    assert harn(repo, "start", "r1").code == 0
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    locks = repo / ".git" / "harnery" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    (locks / "run-r1.lock").write_text(json.dumps(
        {"pid": dead.pid, "start": "1", "host": os.uname().nodename, "since": "x", "purpose": "test"}))
    result = harn(repo, "cleanup", "r1", "--yes")
    assert result.code == 0 and "broke the run r1 lock" in result.err
    assert not (locks / "run-r1.lock").exists()


def test_works_from_a_subdirectory_and_a_linked_worktree(repo: Path, tmp_path: Path) -> None:
    assert harn(repo / "src", "start", "from-sub").code == 0
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side")
    assert harn(tmp_path / "linked", "start", "from-linked").code == 0
    assert record(repo, "from-linked")["base"]["ref"] == "refs/heads/side"
    ids = {w["runId"] for w in harn(tmp_path / "linked", "status", "--json").json()["workspaces"]}
    assert ids == {"from-sub", "from-linked"}
    assert harn(repo / "src", "cleanup", "from-linked", "--yes").code == 0


def test_works_from_a_bare_repository(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    started = harn(bare, "start", "b1", "--json")
    assert started.code == 0, started.err
    path = Path(started.json()["path"])
    assert (path / "README.md").read_text() == "hello\n"
    assert harn(path, "status", "--json").json()["workspaces"][0]["runId"] == "b1"
    assert harn(bare, "cleanup", "b1", "--yes").code == 0
    assert not path.exists()


def _commands() -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []

    def walk(prefix: str, command: click.Command) -> None:
        out.append((prefix, command))
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(f"{prefix} {name}".strip(), sub)

    walk("", cli)
    return out


def test_man_page_documents_every_command_and_option() -> None:
    page = (Path(__file__).resolve().parent.parent / "man" / "git-harn.1").read_text()
    text = page.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace("\\fI", "")
    missing = []
    for path, command in _commands():
        if path and f"git harn {path}" not in text:
            missing.append(f"git harn {path}")
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-") and opt not in ("-h", "--help") and not re.search(
                        rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text):
                    missing.append(f"{path or 'git harn'} {opt}")
    assert not missing, f"not in man/git-harn.1: {missing}"


@pytest.mark.parametrize("path", [p for p, _ in _commands()])
def test_every_subcommand_help_works_without_man(tmp_path: Path, path: str) -> None:
    result = harn(tmp_path, *path.split(), "-h")
    assert result.code == 0 and "Usage:" in result.out


def test_every_configuration_key_is_documented() -> None:
    root = Path(__file__).resolve().parent.parent
    code = "\n".join(p.read_text() for p in (root / "git_harn").rglob("*.py"))
    keys = set(re.findall(r"\"(harn\.[A-Za-z]+)\"", code))
    assert "harn.worktreeRoot" in keys
    page = (root / "man" / "git-harn.1").read_text()
    readme = docs_text()
    missing = sorted(k for k in keys if k not in page or f"`{k}`" not in readme)
    assert not missing, f"configuration keys missing from the man page or the README and docs/: {missing}"


def test_every_command_and_flag_is_in_the_markdown_docs() -> None:
    """Beside the man page: the README or a page of docs/ names every command
    and every long flag that ``--help`` shows."""
    text = docs_text()
    missing = []
    for path, command in _commands():
        if path and f"git harn {path}" not in text:
            missing.append(f"git harn {path}")
        missing += [f"git harn {path} {option}" for param in command.params if not getattr(param, "hidden", False)
                    for option in getattr(param, "opts", []) + getattr(param, "secondary_opts", [])
                    if option.startswith("--") and option != "--help" and option not in text]
    assert not missing, f"not in README.md or docs/*.md: {missing}"


def test_the_readme_is_a_start_and_links_every_page_of_the_reference() -> None:
    """The README is what a new user needs; the reference is in docs/, one
    page per area, each linked from it, and every link goes somewhere."""
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    assert len(readme.splitlines()) < 300
    for page in sorted((root / "docs").glob("*.md")):
        assert f"](docs/{page.name})" in readme, page.name
    for source in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+\.md)\)", source.read_text()):
            assert (source.parent / target).is_file(), (source.name, target)
