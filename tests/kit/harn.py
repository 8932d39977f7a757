"""Building real repositories and driving real `git harn`, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from git_harn.schemas import schema_errors


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def harn(cwd: Path, *args: str, env: dict[str, str] | None = None,
         stdin: str | None = None, timeout: float = 120) -> Result:
    """Run `git harn <args>` in ``cwd`` the way an operator does."""
    full_env = dict(os.environ, **(env or {}))
    done = subprocess.run(["git", "harn", *args], cwd=cwd, capture_output=True, text=True,
                          env=full_env, input=stdin if stdin is not None else "",
                          timeout=timeout, check=False)
    return Result(done.returncode, done.stdout, done.stderr)


def wait_for(path: Path, seconds: float = 30) -> None:
    """Wait until ``path`` exists: a started process has reached its mark."""
    deadline = time.time() + seconds
    while not path.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"{path} never appeared"


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie has finished: only its exit status is left)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def wait_gone(pid: int, seconds: float = 30) -> None:
    """Wait until a process this test killed has really ended."""
    deadline = time.time() + seconds
    while alive(pid) and time.time() < deadline:
        time.sleep(0.02)
    assert not alive(pid), f"process {pid} still runs"


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first), from /proc: how a test
    finds the processes it started itself, and only those."""
    found: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            text = Path(f"/proc/{current}/task/{current}/children").read_text()
        except OSError:
            continue
        kids = [int(word) for word in text.split()]
        found += kids
        pending += kids
    return found


def is_python_of_git_harn(pid: int) -> bool:
    try:
        return b"git_harn" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


FIXED_DATES = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def git(cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def stored_workflow_files(cwd: Path, rev: str) -> dict[str, str]:
    """The files of a workflow record commit, read with plain git: path -> text."""
    paths = git(cwd, "ls-tree", "-r", "--name-only", rev).splitlines()
    return {path: git(cwd, "show", f"{rev}:{path}") for path in paths}


def stored_workflow(cwd: Path, rev: str) -> dict[str, Any]:
    """A workflow record as its commit holds it, put together with plain git:
    ``workflow.json`` and its tasks, one ``tasks/<index>.json`` each."""
    files = stored_workflow_files(cwd, rev)
    body = json.loads(files.pop("workflow.json"))
    assert sorted(files) == [f"tasks/{index:05d}.json" for index in range(len(files))], sorted(files)
    assert "tasks" not in body or not files, "tasks both inside workflow.json and beside it"
    body.setdefault("tasks", [json.loads(files[path]) for path in sorted(files)])
    return body


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository on branch main with one commit of ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, content in (files or {"README.md": "hello\n", "src/app.py": "x = 1\n"}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    git(path, "add", "-A")
    # A fixed date: the first commit, and so what is built on it, has the same id every run.
    git(path, "commit", "-q", "-m", "initial", env=FIXED_DATES)
    return path


def ref(repo: Path, name: str) -> str | None:
    done = subprocess.run(["git", "rev-parse", "-q", "--verify", name], cwd=repo,
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


def all_refs(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    pairs = (line.split(" ", 1) for line in out.splitlines() if line)
    return {name: oid for name, oid in pairs}


def record(repo: Path, run_id: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(git(repo, "show", f"refs/harnery/runs/{run_id}:run.json"))
    return loaded


def assert_valid(document: Any, schema: str) -> None:
    errors = schema_errors(document, schema)
    assert not errors, f"{schema}: {errors}"


def assert_error_document(stdout: str, code: int) -> None:
    """Under --json an error is one document on stdout [C3]."""
    document = json.loads(stdout)
    assert_valid(document, "error")
    assert document["error"]["exitCode"] == code and "\n" not in document["error"]["message"]


def docs_text() -> str:
    """The Markdown documentation: the README and every page of docs/."""
    root = Path(__file__).resolve().parents[2]
    return "".join(p.read_text() for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))])
