"""Issue 11, item 8: the messages a user reads, each true and each with the next step."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.harn import git, harn, make_repo, record, wait_for
from tests.kit.task_repo import task_branch, task_repo
from tests.kit.user_tools import display_width, harn_on_terminal, start


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo")
    git(path, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    return path


def commit_in(path: Path, name: str, content: str) -> None:
    (path / name).write_text(content)
    git(path, "add", name)
    git(path, "commit", "-q", "-m", f"add {name}")


def row_of(out: str, run_id: str) -> str:
    rows = [line for line in out.splitlines() if line.split()[:1] == [run_id]]
    assert len(rows) == 1, out
    return rows[0]


def test_a_remote_hosts_workspace_has_no_dirty_count(repo: Path) -> None:
    path = start(repo, "r1")
    (path / "wip.txt").write_text("on the other machine\n")
    assert harn(repo, "cleanup", "r1", "--yes").code == 3  # preserved_dirty, attempts 1
    git(repo, "config", "harn.host", "other-host")  # the record is now another host's
    ws = harn(repo, "status", "--json").json()["workspaces"][0]
    assert ws["location"] == "remote"
    assert ws["dirtyCount"] is None  # unknown here, not zero
    cells = row_of(harn(repo, "status").out, "r1").split()
    assert "0" not in cells and "-" in cells, cells


def test_status_all_shows_a_kept_detached_head_and_what_to_do(repo: Path) -> None:
    path = start(repo, "r1")
    git(path, "checkout", "-q", "--detach")
    commit_in(path, "only-here.txt", "on the detached HEAD\n")
    shutil.rmtree(path)
    out = harn(repo, "status", "--all").out
    assert record(repo, "r1")["state"] == "already_gone"
    assert git(repo, "rev-parse", "refs/harnery/detached/r1")  # the commit is kept there
    assert "refs/harnery/detached/r1" in out, out
    assert re.search(r"git \S+.*refs/harnery/detached/r1", out), f"no next step in: {out}"


def test_status_all_shows_a_kept_branch_and_what_to_do(repo: Path) -> None:
    path = start(repo, "r1")
    commit_in(path, "only-here.txt", "on the workspace branch\n")
    shutil.rmtree(path)
    out = harn(repo, "status", "--all").out
    assert record(repo, "r1")["state"] == "already_gone"
    assert git(repo, "rev-parse", "refs/heads/harnery/ws/r1")
    assert re.search(r"kept.*1 (unmerged )?commit", out), out
    # the way out the branch guard allows (issue 45): reclaim, never 'git branch -m'
    assert "resolve: git harn reclaim r1" in out and "branch -m" not in out, f"no next step in: {out}"


def test_unmerged_advice_never_offers_discard(repo: Path) -> None:
    path = start(repo, "r1")
    commit_in(path, "work.txt", "committed, nowhere else\n")
    cleaned = harn(repo, "cleanup", "r1", "--yes")
    assert cleaned.code == 3 and record(repo, "r1")["state"] == "preserved_unmerged"
    status = harn(repo, "status")
    document = harn(repo, "status", "--json").json()
    assert "git harn reclaim r1" in cleaned.out + status.out  # a way out is still offered
    assert "--discard" not in cleaned.out, cleaned.out
    assert "--discard" not in status.out, status.out
    assert not [step for step in document["workspaces"][0]["next"] if "--discard" in step]


def test_no_already_already_gone(repo: Path) -> None:
    path = start(repo, "r1")
    shutil.rmtree(path)
    assert harn(repo, "cleanup", "r1", "--yes").code == 0
    assert record(repo, "r1")["state"] == "already_gone"
    said = [harn(repo, *args) for args in (["cleanup", "r1"], ["cleanup", "r1", "--yes"], ["reclaim", "r1"],
                                           ["reclaim", "r1", "--json"], ["cleanup", "r1", "--json"])]
    for result in said:
        assert result.code == 0, result.err
        assert "already already" not in result.out + result.err, result.out


def test_dirty_count_and_salvaged_count_agree(repo: Path) -> None:
    path = start(repo, "r1")
    git(path, "rm", "-q", "--cached", "README.md")  # `D  README.md` and `?? README.md`
    ws = harn(repo, "status", "--json").json()["workspaces"][0]
    cleaned = harn(repo, "cleanup", "r1", "--yes")
    assert cleaned.code == 3
    reclaimed = harn(repo, "reclaim", "r1", "--json")
    assert reclaimed.code == 0, reclaimed.err
    salvage = reclaimed.json()["salvage"]
    assert salvage["pathCount"] == 1 and salvage["paths"] == ["README.md"]
    assert ws["dirtyCount"] == salvage["pathCount"], (ws["dirtyPaths"], salvage["paths"])
    assert "1 dirty path(s)" in cleaned.out, cleaned.out


def test_a_unicode_run_id_is_shown_as_typed(repo: Path) -> None:
    result = harn(repo, "start", "übung-数据")
    assert result.code == 2
    assert "übung-数据" in result.err, result.err
    assert "\\x" not in result.err and "\\u" not in result.err


def test_a_run_id_that_looks_like_an_option_is_an_invalid_id(repo: Path) -> None:
    result = harn(repo, "start", "-bad")
    assert result.code == 2
    assert "invalid run id" in result.err and "-bad" in result.err, result.err
    assert "No such option" not in result.err


def _nested(repo: Path, path: Path, kind: str) -> str:
    if kind == "nested repository":
        inner = path / "vendor" / "lib"
        inner.mkdir(parents=True)
        git(inner, "init", "-q", "-b", "main")
        (inner / "code.txt").write_text("a repository of its own\n")
        return "vendor/lib"
    sub = make_repo(repo.parent / "sub-origin", {"sub.txt": "sub\n"})
    git(path, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    git(path, "commit", "-q", "-m", "add a submodule")
    git(repo, "branch", "keep-r1", "harnery/ws/r1")  # its commits are reachable elsewhere
    return "sub"


@pytest.mark.parametrize("kind", ["nested repository", "submodule"])
def test_nested_repositories_and_submodules_get_next_steps_that_work(repo: Path, kind: str) -> None:
    path = start(repo, "r1")
    where = _nested(repo, path, kind)
    cleaned = harn(repo, "cleanup", "r1", "--yes")
    assert cleaned.code == 3 and record(repo, "r1")["state"] == "preserved_dirty"
    assert where in cleaned.out
    status = harn(repo, "status").out
    offered = {m.strip() for m in re.findall(r"git harn reclaim [^\n()']*?(?=\s{2,}|\s*\(|\s*$)",
                                             cleaned.out + "\n" + status, re.MULTILINE)}
    # Every reclaim offered for this workspace must resolve it, not refuse it or preserve it again.
    for command in sorted(offered, key=lambda c: "--discard" in c):
        tried = harn(repo, *shlex.split(command)[2:])
        assert tried.code == 0, f"offered `{command}`, which says: {tried.out}{tried.err}"


def test_discard_never_claims_to_have_discarded_what_it_left(repo: Path) -> None:
    path = start(repo, "r1")
    (path / "scratch.txt").write_text("throw me away\n")
    _nested(repo, path, "nested repository")
    result = harn(repo, "reclaim", "r1", "--discard", "--yes")
    assert (path / "vendor" / "lib" / "code.txt").exists()  # git clean -fd leaves a nested repository
    assert not (path / "scratch.txt").exists()
    assert record(repo, "r1")["state"] == "preserved_dirty"
    assert "vendor/lib" in result.out + result.err, result.out
    said = [line for line in result.out.splitlines() if "discarded" in line]
    assert all(re.search(r"\b(left|kept|not)\b", line) for line in said), said


def test_external_assessor_errors_are_shown_to_humans(tmp_path: Path) -> None:
    repo = task_repo(tmp_path)
    task_branch(repo)
    assessor = tmp_path / "assessor.py"
    assessor.write_text("print('{not json')\n")
    result = harn(repo, "assess", "roadmap-1.2", "--assessor", f"{sys.executable} {assessor}")
    assert result.code == 0, result.err
    assert "continue-manual" in result.out
    text = result.out + result.err
    assert re.search(r"attempt 1\b.*not JSON", text), text
    assert re.search(r"attempt 2\b", text), text  # every attempt, not just the verdict


def test_status_fits_an_80_column_terminal(repo: Path, tmp_path: Path) -> None:
    long_id = "nightly-refactor-of-the-payment-gateway-adapter-2024"
    start(repo, long_id, "--branch", "agents/claude/nightly-refactor-of-the-payment-gateway-adapter",
          "--path", str(tmp_path / "工作区" / "支付网关适配器的夜间重构" / long_id))
    path = start(repo, "r2", "--path", str(tmp_path / "工作区" / "第二个"))
    (path / "数据文件-很长的名字-需要两倍的宽度-还有更多的字符.txt").write_text("x\n")
    code, shown = harn_on_terminal(repo, "status", columns=80)
    assert code == 0, shown
    assert "r2" in shown
    too_wide = [line for line in shown.splitlines() if display_width(line) > 80]
    assert not too_wide, "\n".join(f"{display_width(line):3} {line}" for line in too_wide)


def test_run_header_quotes_the_command_as_a_shell_would(repo: Path) -> None:
    argv = ["sh", "-c", 'echo "two words" >/dev/null', "it's"]
    result = harn(repo, "run", "r1", "--", *argv)
    assert result.code == 0, result.err
    header = next(line for line in result.err.splitlines() if "run r1:" in line)
    shown = header.split("run r1:", 1)[1].split("  (in ", 1)[0].strip()
    try:
        read_back = shlex.split(shown)
    except ValueError as exc:
        raise AssertionError(f"a shell cannot read {shown!r}: {exc}") from exc
    assert read_back == argv, f"a shell would read {shown!r} as {read_back}"


def test_a_busy_run_is_marked_in_status(repo: Path, tmp_path: Path) -> None:
    running, release = tmp_path / "running", tmp_path / "release"
    slow = subprocess.Popen(
        ["git", "harn", "run", "r1", "--", sys.executable, "-c",
         "import pathlib, time\n"
         f"pathlib.Path({str(running)!r}).touch()\n"
         f"while not pathlib.Path({str(release)!r}).exists(): time.sleep(0.05)\n"],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(running)
        busy_row = row_of(harn(repo, "status").out, "r1").replace(record(repo, "r1")["path"], "")
    finally:
        release.touch()
        assert slow.wait(timeout=60) == 0
    assert "busy" in busy_row.lower(), busy_row
    start(repo, "r2")
    assert "busy" not in row_of(harn(repo, "status").out, "r2").replace(record(repo, "r2")["path"], "").lower()
