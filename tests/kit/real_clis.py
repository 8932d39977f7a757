"""The real Claude Code and Codex CLIs for the real-CLI tests
(``tests/workflow/agents/adapters/test_adapters_real.py``, marker ``real_cli``).

``.ci/run`` installs the versions it pins from the npm registry into
``.agent-clis/`` of the checkout (``HARN_AGENT_CLIS`` names another
folder). The tests run them with no network (``unshare -n``, which needs
root or user namespaces) and no credentials: HOME is a fresh folder of the
test, and every key, token and provider variable of the operator's
environment is removed. Without the CLIs, ``node`` (the codex wrapper is a
node script) or ``unshare -n``, every such test is skipped with the reason.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what the environment may carry that would log a CLI in, point it elsewhere, or change its output
SCRUBBED = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_MAX_RETRIES",
            "OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY", "CODEX_HOME", "IS_SANDBOX", "RUST_BACKTRACE",
            "RUST_LOG")
FAKE_CLAUDE_KEY = "sk-ant-api03-not-a-key"
FAKE_CODEX_KEY = "sk-not-a-key"


def folder() -> Path:
    return Path(os.environ.get("HARN_AGENT_CLIS") or ROOT / ".agent-clis") / "node_modules" / ".bin"


@functools.cache
def missing() -> str | None:
    """Why the real-CLI tests cannot run here, or None."""
    bin_dir = folder()
    for name in ("claude", "codex"):
        if not (bin_dir / name).exists():
            return f"the real {name} CLI is not installed in {bin_dir} (.ci/run installs it from npm)"
    if shutil.which("node") is None:
        return "node is not on PATH (the codex CLI's wrapper needs it)"
    if shutil.which("unshare") is None:
        return "unshare is not on PATH (the real-CLI tests run the CLIs with no network)"
    done = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    if done.returncode != 0:
        return "unshare -n is not permitted here (the real-CLI tests run the CLIs with no network)"
    return None


def needs_real_clis() -> pytest.MarkDecorator:
    reason = missing()
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def command(name: str) -> list[str]:
    """The CLI's argv prefix as an agent's ``command``: always with no network."""
    return ["unshare", "-n", str(folder() / name)]


def env(tmp: Path, **extra: str) -> dict[str, str]:
    """A whole environment for a command that runs a real CLI: this one, scrubbed, a fresh HOME, then ``extra``."""
    home = tmp / "cli-home"
    home.mkdir(exist_ok=True)
    clean = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    return {**clean, "HOME": str(home), **extra}


def scrub(monkeypatch: pytest.MonkeyPatch, tmp: Path, **extra: str) -> None:
    """The same, for an adapter run in this process."""
    for key in SCRUBBED:
        monkeypatch.delenv(key, raising=False)
    home = tmp / "cli-home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    for key, value in extra.items():
        monkeypatch.setenv(key, value)
