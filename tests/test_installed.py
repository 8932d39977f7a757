"""The installed wheel, not the source tree: build it, install it in a fresh
virtual environment, and drive that ``git harn`` as a user would.

Schemas, hook templates, prompt templates and the man page must all be found
inside the installed package (the source checkout's folders are not on the
path). The new environment borrows this one's third-party packages through a
``.pth`` line (offline, fast), never this checkout's git_harn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.kit.harn import assert_valid, git, make_repo

SOURCE = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the freshly built wheel installed; returns its bin folder."""
    pytest.importorskip("hatchling")
    root = tmp_path_factory.mktemp("installed")
    wheels = root / "wheels"
    # pip and the tools it starts keep settings in a home folder: give them their own.
    (root / "home").mkdir()
    tool_env = dict(os.environ, HOME=str(root / "home"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(SOURCE)], check=True, capture_output=True, cwd=root, env=tool_env)
    wheel = next(wheels.glob("git_harn-*.whl"))
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # Third-party packages from this environment; its own .pth files (an
    # editable git_harn among them) are not processed from a plain path line.
    Path(site, "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    str(wheel)], check=True, capture_output=True, cwd=root, env=tool_env)
    return env_dir / "bin"


def run(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=120)


def test_the_installed_package_is_not_the_source_tree(installed: Path, tmp_path: Path) -> None:
    done = run(installed, tmp_path, str(installed / "python"), "-c",
               "import git_harn, git_harn.resources as r; print(git_harn.__file__); "
               "print(r.schema_path('status')); print(r.hook_template('post-checkout'))")
    assert done.returncode == 0, done.stderr
    module, schema, hook = done.stdout.split()
    for found in (module, schema, hook):
        assert str(installed.parent) in found and str(SOURCE) not in found
    assert Path(schema).is_file() and Path(hook).is_file()


def test_installed_git_harn_runs_status_hooks_and_help(installed: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "harn.worktreeRoot", str(tmp_path / "wt"))
    started = run(installed, repo, "git", "harn", "start", "r1", "--json")
    assert started.returncode == 0, started.stderr
    status = run(installed, repo, "git", "harn", "status", "--json")
    assert status.returncode == 0, status.stderr
    document = json.loads(status.stdout)
    assert_valid(document, "status")
    assert [w["runId"] for w in document["workspaces"]] == ["r1"]
    hooks = run(installed, repo, "git", "harn", "hooks", "install")
    assert hooks.returncode == 0, hooks.stderr
    assert "git-harn hook" in (repo / ".git" / "hooks" / "post-checkout").read_text()
    error = run(installed, repo, "git", "harn", "log", "nope", "--json")
    assert error.returncode == 2 and json.loads(error.stdout)["error"]["exitCode"] == 2
    assert "Usage:" in run(installed, repo, "git", "harn", "status", "--help").stdout


def test_the_man_page_is_installed_where_man_looks(installed: Path) -> None:
    page = installed.parent / "share" / "man" / "man1" / "git-harn.1"
    assert page.is_file() and page.read_text().startswith(".")
