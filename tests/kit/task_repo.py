"""Repositories with roadmap task branches, built for the assessment tests."""

from __future__ import annotations

from pathlib import Path

from tests.kit.harn import git, make_repo

PASSING_GATES = '[gates]\ncommands = [["sh", "-c", "test ! -e broken"]]\n'


def task_repo(tmp_path: Path, gates: str = PASSING_GATES) -> Path:
    """main: a roadmap, another task's ExecPlan, and gate commands."""
    return make_repo(tmp_path / "repo", {
        "README.md": "hello\n",
        "docs/roadmap.md": "# Roadmap\n\n- [x] 1.1 First\n- [ ] 1.2 Second\n  Requires: 1.1\n- [ ] 1.3 Third\n",
        "docs/execplans/1.1.md": "# 1.1\n\nStatus: COMPLETE\n",
        ".harn/workflow.toml": gates,
    })


def plan_text(status: str) -> str:
    return f"# ExecPlan 1.2\n\n**Status:** {status}\n\n- [ ] do the thing\n"


def task_branch(repo: Path, branch: str = "roadmap-1.2", plan: str | None = "IN PROGRESS",
                files: dict[str, str] | None = None, message: str = "work on 1.2",
                worktree: bool = True) -> Path:
    """``branch`` off main with one commit of ``files`` and the task's plan;
    checked out in a worktree beside the repository (returned) unless not wanted."""
    path = repo.parent / f"wt-{branch}"
    git(repo, "worktree", "add", "-q", "-b", branch, str(path), "main")
    content = dict(files if files is not None else {"src/feature.py": "def feature():\n    return 1\n"})
    if plan is not None:
        content["docs/execplans/1.2.md"] = plan_text(plan)
    if content:
        write(path, content)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", message)
    if not worktree:
        git(repo, "worktree", "remove", str(path))
    return path


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
