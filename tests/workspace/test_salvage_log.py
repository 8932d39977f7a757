"""Issue 45 item 11: the way to look at every salvaged branch, as printed.

``git log harnery/salvage/*`` prints nothing: the shell finds no such file
and passes the glob on, and git takes an argument with a wildcard for a
pathspec. What git-harn prints and documents is ``git log
--branches='harnery/salvage/*'``, run here as a shell would split it."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from tests.kit.harn import git, harn
from tests.kit.salvage_trees import make_dirty, started

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED = "git log --branches='harnery/salvage/*'"


def as_a_shell_runs(repo: Path, line: str) -> str:
    """``line`` split as a shell splits it (no glob matches in the repository), run without a shell."""
    done = subprocess.run(shlex.split(line), cwd=repo, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def two_salvages(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo, first = started(tmp_path, "r1")
    assert harn(repo, "start", "r2").code == 0
    second = Path(git(repo, "worktree", "list", "--porcelain").split("worktree ")[-1].splitlines()[0])
    tips = {}
    for run_id, worktree in (("r1", first), ("r2", second)):
        make_dirty(worktree)
        done = harn(repo, "reclaim", run_id)
        assert done.code == 0, done.err
        tips[run_id] = git(repo, "rev-parse", f"harnery/salvage/{run_id}")
        shown = [line.strip().removeprefix("all salvaged work: ") for line in done.out.splitlines()
                 if "--branches=" in line]
        assert shown == [DOCUMENTED], done.out  # reclaim's own output names it
    return repo, tips


def test_the_unquoted_glob_shows_nothing_and_the_printed_command_shows_every_salvage(tmp_path: Path) -> None:
    repo, tips = two_salvages(tmp_path)
    assert git(repo, "log", "--format=%H", "harnery/salvage/*") == ""  # the trap
    out = as_a_shell_runs(repo, DOCUMENTED + " --format=%H")
    assert set(tips.values()) <= set(out.split())


def test_readme_reclaim_docs_and_man_page_give_the_command_that_works(tmp_path: Path) -> None:
    repo, tips = two_salvages(tmp_path)
    for name in ("README.md", "docs/reclaim.md"):
        text = (ROOT / name).read_text()
        found = re.findall(r"git log --branches='harnery/salvage/\*'", text)
        assert found, name
        for trap in re.finditer(re.escape("git log harnery/salvage/*"), text):  # only ever as a warning
            assert "prints nothing" in text[trap.end():trap.end() + 100], name
        out = as_a_shell_runs(repo, found[0] + " --format=%H")
        assert set(tips.values()) <= set(out.split()), name
    man = (ROOT / "man" / "git-harn.1").read_text()
    assert r"git log \-\-branches='harnery/salvage/*'" in man


def test_doctors_salvage_finding_names_it(tmp_path: Path) -> None:
    repo, tips = two_salvages(tmp_path)
    done = harn(repo, "doctor", "--json", "--older-than", "0")
    findings = [f for f in done.json()["findings"] if f["code"] == "salvage-old"]
    assert len(findings) == 2
    for finding in findings:
        assert DOCUMENTED in finding["why"]
        shown = re.search(r"git log --branches='[^']+'", finding["why"])
        assert shown is not None
        out = as_a_shell_runs(repo, shown.group(0) + " --format=%H")
        assert set(tips.values()) <= set(out.split())
