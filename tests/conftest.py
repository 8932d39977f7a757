"""Hermetic test session: no real HOME, no global or system git config, no
stray GIT_* variables, and ``git harn`` on PATH running the code under test."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

import git_harn

_SANDBOX = Path(tempfile.mkdtemp(prefix="git-harn-tests-"))
_REAL_HOME = os.environ.get("HOME", "")


def _isolate() -> None:
    for key in list(os.environ):
        if key.startswith(("GIT_", "HARN_", "XDG_")):
            del os.environ[key]
    home = _SANDBOX / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Operator\n\temail = operator@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
        "[protocol \"file\"]\n\tallow = always\n"
    )
    os.environ.update(
        HOME=str(home),
        XDG_DATA_HOME=str(_SANDBOX / "data"),
        XDG_CONFIG_HOME=str(_SANDBOX / "config"),
        XDG_CACHE_HOME=str(_SANDBOX / "cache"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
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


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path: Path) -> None:
    """Every test runs with the sandboxed HOME; fail loudly if it leaks."""
    assert os.environ["HOME"] != _REAL_HOME
    assert os.environ["HOME"].startswith(str(_SANDBOX))
