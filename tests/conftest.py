"""Hermetic test session: no real HOME, no global or system git config, no
stray GIT_* variables, and ``git harn`` on PATH running the code under test.

HOME points at a folder that does not exist (as dulwich's tests do): anything
that writes to the home folder fails loudly, and a guard after every test
checks that nothing created it. A test that needs a home makes its own under
tmp_path and passes it in the environment of the commands it runs.
"""

from __future__ import annotations

import getpass
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import git_harn

_SANDBOX = Path(tempfile.mkdtemp(prefix="git-harn-tests-"))
_REAL_HOME = os.environ.get("HOME", "")
_TEST_FOLDERS = Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"  # pytest's tmp_path root


def _isolate() -> None:
    for key in list(os.environ):
        if key.startswith(("GIT_", "HARN_", "XDG_")):
            del os.environ[key]
    home = _SANDBOX / "no-home"  # never created
    # The XDG place, which libgit2 reads too (it ignores GIT_CONFIG_GLOBAL).
    gitconfig = _SANDBOX / "config" / "git" / "config"
    gitconfig.parent.mkdir(parents=True)
    gitconfig.write_text(
        "[user]\n\tname = Test Operator\n\temail = operator@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
        "[protocol \"file\"]\n\tallow = always\n"
        # Agents and gates run in the sandbox where bubblewrap runs; the tests' scripted agents
        # keep their logs beside themselves, in the tests' folders: those stay writable (the
        # sandbox's own tests use a config without this).
        f"[harn]\n\tsandboxWritable = {_TEST_FOLDERS}\n"
    )
    os.environ.update(
        HOME=str(home),
        XDG_DATA_HOME=str(_SANDBOX / "data"),
        XDG_CONFIG_HOME=str(_SANDBOX / "config"),
        XDG_CACHE_HOME=str(_SANDBOX / "cache"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(gitconfig),
        LC_ALL="C.UTF-8",
        TZ="UTC",
    )
    # `git harn` and `git-harn` run the code under test, wherever it is.
    bin_dir = _SANDBOX / "bin"
    bin_dir.mkdir()
    source_root = Path(git_harn.__file__).resolve().parent.parent
    shim = bin_dir / "git-harn"
    shim.write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH='{source_root}'${{PYTHONPATH:+:$PYTHONPATH}} exec '{sys.executable}' -m git_harn \"$@\"\n"
    )
    shim.chmod(0o755)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


_isolate()


def _real_home_state() -> dict[str, float]:
    """What git-harn could write in the real home: its data folder and the git config."""
    home = Path(_REAL_HOME) if _REAL_HOME else None
    if home is None:
        return {}
    watched = [home / ".gitconfig", home / ".local" / "share" / "git-harn", home / ".githooks"]
    return {str(p): p.stat().st_mtime for p in watched if p.exists()}


_REAL_HOME_BEFORE = _real_home_state()


@pytest.fixture(autouse=True)
def _no_home_writes() -> Iterator[None]:
    """Fail the test that wrote to a home folder, the sandboxed one or the real one."""
    yield
    home = Path(os.environ["HOME"])
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*")) if home.exists() else None
    if written is not None:
        shutil.rmtree(home)  # so that only the test that wrote there fails
    assert written is None, f"a test wrote to the home folder {home}: {written[:5]}"
    assert _real_home_state() == _REAL_HOME_BEFORE, "a test wrote to the real home folder"


@pytest.fixture
def unsandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``git -c harn.sandbox=off`` for every git harn the test runs: for the tests that
    check, by the pids an agent reports, that its processes died; inside the sandbox those
    are pids of its own PID namespace (tests/trust/test_sandbox.py checks the sandboxed case)."""
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "harn.sandbox")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "off")
