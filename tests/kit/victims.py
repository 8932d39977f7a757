"""What the untrusted-agent tests share: files outside every folder an agent
may write (the victims), a fingerprint of a folder tree to show nothing in it
changed, and committed client hooks that leave a mark when they run."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

VICTIM = b"export PATH=/usr/bin\n# the operator's own file\n"

# Every hook git runs on the client side (githooks(5)); a relative
# core.hooksPath makes git look for them in the worktree it runs in.
CLIENT_HOOKS = ("applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
                "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
                "pre-push", "pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman",
                "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
                "post-index-change", "reference-transaction", "push-to-checkout")


def adapter_config(workflow: str = "stageTimeout = 60\n") -> str:
    """Claude Code plans and implements, Codex CLI reviews (both fakes), the builtin integration lands."""
    return (f"[workflow]\n{workflow}\n"
            '[agents.plan]\nadapter = "claude"\n\n[agents.implement]\nadapter = "claude"\n\n'
            '[agents.review]\nadapter = "codex"\n\n[agents.integrate]\ncommand = "builtin"\n\n'
            '[gates]\ncommands = [["sh", "-c", "test -e work-9.1.txt"]]\n')


def victims(tmp: Path) -> tuple[Path, Path]:
    """A file a symlink names, and one a hard link shares, in a folder of their own."""
    folder = tmp / "home"
    folder.mkdir(exist_ok=True)
    soft, hard = folder / ".bashrc", folder / ".profile"
    soft.write_bytes(VICTIM)
    hard.write_bytes(VICTIM)
    return soft, hard


def fingerprint(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """relative path -> kind, mode and content hash of everything under ``root``
    (symlinks by their target), leaving out the folders in ``skip``."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d not in skip]
        for name in [*dirs, *files]:
            path = here / name
            seen = os.lstat(path)
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(seen.st_mode):
                out[rel] = f"link {os.readlink(path)}"
            elif stat.S_ISREG(seen.st_mode):
                out[rel] = f"file {stat.S_IMODE(seen.st_mode):o} {hashlib.sha256(path.read_bytes()).hexdigest()}"
            else:
                out[rel] = f"other {stat.S_IFMT(seen.st_mode):o}"
    return out


def hook_files(marks: Path) -> dict[str, str]:
    """``.githooks/<name>`` for every client hook: it leaves ``marks/<name>``
    when it runs outside an agent (an agent's own git commands have HARN_STAGE)."""
    body = ('#!/bin/sh\n[ -n "$HARN_STAGE" ] || echo "$PWD $*" >> "{marks}/{name}"\n'
            'cat > /dev/null 2>&1 || true\nexit 0\n')
    return {f".githooks/{name}": body.format(marks=marks, name=name) for name in CLIENT_HOOKS}
