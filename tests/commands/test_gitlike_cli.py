"""Issue 11, items 2, 3 and 4: one JSON document, usage and suggestions, and
shell completion that plugs into git's own."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.kit.harn import assert_valid, git, harn, make_repo
from tests.kit.user_tools import bash_git_completion, start

# --- item 2: one JSON document ----------------------------------------------------


def _strings(document: Any) -> list[str]:
    if isinstance(document, dict):
        return [s for v in document.values() for s in _strings(v)]
    if isinstance(document, list):
        return [s for v in document for s in _strings(v)]
    return [document] if isinstance(document, str) else []


def test_run_json_prints_one_document_and_the_commands_output_elsewhere(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    result = harn(repo, "run", "r1", "--json", "--", "sh", "-c", "echo from-the-command; echo to-stderr >&2")
    assert result.code == 0, result.err
    try:
        document = json.loads(result.out)
    except ValueError as exc:
        raise AssertionError(f"stdout is not one JSON document: {result.out!r}") from exc
    assert_valid(document, "run-result")
    # The output is not lost: it is on stderr, or in a log file the document names.
    logs = [Path(s) for s in _strings(document) if s.startswith("/") and Path(s).is_file()]
    assert "from-the-command" in result.err or any("from-the-command" in p.read_text() for p in logs)
    assert "to-stderr" in result.err or any("to-stderr" in p.read_text() for p in logs)


# --- item 3: usage without a subcommand, suggestions ------------------------------

GROUPS = {
    (): ["start", "run", "status", "cleanup", "reclaim", "log", "hooks", "assess", "gates", "integrate", "report"],
    ("hooks",): ["install", "uninstall", "status"],
    ("gates",): ["run"],
    ("report",): ["check"],
}


@pytest.mark.parametrize("group", list(GROUPS), ids=lambda g: " ".join(("git harn", *g)))
def test_a_group_without_a_subcommand_prints_the_multi_line_usage(tmp_path: Path, group: tuple[str, ...]) -> None:
    result = harn(tmp_path, *group)
    assert result.code in (0, 2)
    text = result.out + result.err
    lines = text.splitlines()
    assert any(line.startswith(f"Usage: {' '.join(('git harn', *group))} ") for line in lines), text
    assert max(len(line) for line in lines) <= 120, "help squashed into one long line"
    for name in GROUPS[group]:
        assert any(re.match(rf"\s+{re.escape(name)}(\s|$)", line) for line in lines), \
            f"{name} is not listed on a line of its own"


def test_a_mistyped_command_gets_a_suggestion(tmp_path: Path) -> None:
    result = harn(tmp_path, "statu")
    assert result.code == 2
    assert "statu" in result.err
    assert re.search(r"did you mean.*\bstatus\b", result.err, re.IGNORECASE | re.DOTALL), result.err


# --- item 4: shell completion ---------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_a_script_for_each_shell(tmp_path: Path, shell: str) -> None:
    result = harn(tmp_path, "completion", shell)
    assert result.code == 0, result.err
    assert "harn" in result.out and len(result.out.splitlines()) > 3
    if shell == "bash":
        assert re.search(r"^\s*(function\s+)?_git_harn\s*(\(\))?", result.out, re.MULTILINE), \
            "bash: no _git_harn function for git's completion to call"
    # The script completes `git harn …` through git's completion; it never
    # registers a completion of its own for `git` (that takes over git's).
    assert not re.search(r"^\s*complete\b.*\s-F\s+\S+\s+git\s*$", result.out, re.MULTILINE)
    bad = harn(tmp_path, "completion", "tcsh")
    assert bad.code == 2


COMPLETE = r"""
source "$GIT_COMPLETION"
eval "$(git harn completion bash)" || exit 97
wrapper=$(complete -p git | sed -n 's/.* -F \([^ ]*\) git$/\1/p')
[ -n "$wrapper" ] || { echo "git's completion is gone: $(complete -p git)"; exit 98; }
complete_line() {
    COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
    read -r -a COMP_WORDS <<< "$COMP_LINE"
    case $COMP_LINE in *' ') COMP_WORDS+=(''); esac
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
    COMPREPLY=()
    "$wrapper"
    printf '%s|' "$1"
    printf '%s ' "${COMPREPLY[@]}"
    printf '\n'
}
"""


def _completions(repo: Path, script: Path, *lines: str) -> dict[str, set[str]]:
    body = COMPLETE + "".join(f"complete_line {shlex.quote(line)}\n" for line in lines)
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", body], cwd=repo, capture_output=True,
                          text=True, env={**os.environ, "GIT_COMPLETION": str(script)},
                          timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    out: dict[str, set[str]] = {}
    for row in done.stdout.splitlines():
        if "|" in row:
            line, words = row.split("|", 1)
            out[line] = set(words.split())
    return out


@pytest.mark.skipif(bash_git_completion() is None, reason="git's bash completion script is not on this machine")
def test_bash_completion_completes_subcommands_options_run_ids_and_task_branches(tmp_path: Path) -> None:
    script = bash_git_completion()
    assert script is not None
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    start(repo, "alpha-run")
    git(repo, "branch", "roadmap-1.2")
    got = _completions(repo, script, "git harn ", "git harn st", "git harn status --", "git harn cleanup ",
                       "git harn assess ", "git chec")
    assert {"start", "run", "status", "cleanup", "reclaim", "hooks"} <= got["git harn "]
    assert {"status", "start"} <= got["git harn st"] and "stash" not in got["git harn st"]
    assert {"--all", "--json", "--limit"} <= got["git harn status --"]
    assert "alpha-run" in got["git harn cleanup "]
    assert "roadmap-1.2" in got["git harn assess "]
    assert "checkout" in got["git chec"]  # git's own completion still works


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_parse_in_their_shell(tmp_path: Path, shell: str) -> None:
    import shutil

    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not on this machine")
    script = tmp_path / f"completion.{shell}"
    script.write_text(harn(tmp_path, "completion", shell).out)
    check = [exe, "--no-execute", str(script)] if shell == "fish" else [exe, "-n", str(script)]
    done = subprocess.run(check, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
