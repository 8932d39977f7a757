"""The setup: git-harn's hooks installed and current (and which hook
manager's hooks they chain), git's version against the minimum [H1], the
``harn.*`` settings that name a path on this machine that is not there, and
what an agent could have planted for every later git to obey [T1] [T2]:
config keys in the repository's own config that run a program or redirect
a remote, hooks that are neither git-harn's nor a known manager's,
``refs/replace/*``, and a remote URL other than the one the last workflow
run started with.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from git_harn.doctor.findings import SETUP, Finding, command
from git_harn.errors import HarnError
from git_harn.git import Repo
from git_harn.git.config import file_entries, origin_file
from git_harn.git.pins import without_credentials
from git_harn.git.run import git_version
from git_harn.hooks.files import CHAINED, CHAINED_DIR, OURS, UNDER_PRE_COMMIT, hooks_dir, is_ours, manager_of
from git_harn.hooks.files import status as hooks_status
from git_harn.workflow.ledger import record

# reference-transaction hooks (2.28) keep records true and guard deletions;
# ``git worktree repair`` (2.29) reconnects a moved workspace.
MIN_GIT = (2, 29)
INSTALLED = (OURS, CHAINED, UNDER_PRE_COMMIT)


def check_setup(repo: Repo) -> tuple[list[Finding], list[str], str]:
    """Findings, notes (what the hooks chain), and git's version."""
    version, numbers = git_version(repo.cli_cwd)
    found = []
    if numbers and numbers < MIN_GIT:
        found.append(Finding(SETUP, "git-too-old", f"git {version}",
                             f"git-harn needs git {'.'.join(map(str, MIN_GIT))} or later (reference-transaction "
                             "hooks, 'git worktree repair'); upgrade git", None))
    hooks = hooks_status(repo)
    notes = [f"hook {h.name} chains {h.manager or h.chained}" for h in hooks.hooks if h.chained or h.manager]
    missing = [h.name for h in hooks.hooks if h.state not in INSTALLED]
    stale = [h.name for h in hooks.hooks if h.state in INSTALLED and not h.current]
    if missing or stale:
        parts = ([f"not installed: {', '.join(missing)}"] if missing else []) + (
            [f"older than this version: {', '.join(stale)}"] if stale else [])
        found.append(Finding(SETUP, "hooks-not-current", hooks.hooksDir,
                             f"git-harn's hooks {'; '.join(parts)}; without them a branch deletion or a removed "
                             "worktree is noticed only by the next git-harn command, and preserved work is not "
                             "guarded against 'git branch -D'", "git harn hooks install",
                             subject={"missing": missing, "stale": stale}))
    planted = [*_program_settings(repo), *_unknown_hooks(repo), *_replace_refs(repo), *_remote_moved(repo)]
    return [*found, *_missing_paths(repo), *planted], notes, version


# --- what an agent could have planted [T1] [T2] ------------------------------------------

# Keys of the repository's own config that name a program git runs, or send
# a remote's traffic elsewhere (``key`` lower-case as git lists it; a
# ``*`` stands for any subsection).
_PROGRAM_KEYS = (
    "core.fsmonitor", "core.sshcommand", "core.askpass", "core.pager", "core.editor", "core.gitproxy",
    "core.alternaterefscommand", "sequence.editor", "diff.external", "gpg.program", "gpg.*.program",
    "credential.helper", "credential.*.helper", "filter.*.clean", "filter.*.smudge", "filter.*.process",
    "merge.*.driver", "diff.*.command", "diff.*.textconv", "remote.*.uploadpack", "remote.*.receivepack",
    "remote.*.pushurl", "remote.*.proxy", "url.*.insteadof", "url.*.pushinsteadof", "include.path",
    "includeif.*.path", "uploadpack.packobjectshook",
)
_NOT_A_PROGRAM = {"core.fsmonitor": ("false", "no", "off", "0", "")}  # fsmonitor=true is git's own daemon


def _matches(key: str, pattern: str) -> bool:
    if "*" not in pattern:
        return key == pattern
    head, _, tail = pattern.partition("*")
    return key.startswith(head) and key.endswith(tail) and len(key) > len(head) + len(tail)


def _program_settings(repo: Repo) -> list[Finding]:
    """Keys of the repository's own config, and of each linked worktree's
    ``config.worktree``, that run a program or redirect a remote: an agent in
    any worktree can write there."""
    entries: list[tuple[str, str, str | None, Path | None]] = [
        (key, scope, value, None) for key, scope, value in repo.repository_config_entries()]
    for own in sorted((repo.common_dir / "worktrees").glob("*/config.worktree")):
        entries += [(key, "worktree", value, own) for key, value in file_entries(repo.cli_cwd, own)]
    found = []
    for key, scope, value, path in entries:
        if not any(_matches(key, pattern) for pattern in _PROGRAM_KEYS):
            continue
        if (value or "").strip().lower() in _NOT_A_PROGRAM.get(key, ()):
            continue
        if path is not None:  # advised, shown to the operator, never run here
            fix = command("git config --file", str(path), "--unset-all", key)
        else:
            fix = command(f"git config{' --worktree' if scope == 'worktree' else ''} --unset-all", key)
        where = f"{scope}, {path}" if path is not None else scope
        found.append(Finding(SETUP, "config-runs-program", f"{key} = {value if value is not None else 'true'}",
                             f"the repository's own config ({where}) sets {key}, which runs a program or "
                             "redirects a remote for every git in every worktree, the operator's too; an agent "
                             "can write there: if you did not set it, remove it (git-harn's own gits in a "
                             "run pin it as it stood at the run's start)",
                             fix, subject={"key": key, "scope": scope,
                                                            "file": str(path) if path is not None else None}))
    return found


def _unknown_hooks(repo: Repo) -> list[Finding]:
    """Hooks git would run that are neither git-harn's nor a known manager's."""
    try:
        folder = hooks_dir(repo)
    except HarnError:
        return []
    found = []
    for path in _hook_files(folder) + _hook_files(folder / CHAINED_DIR):
        if is_ours(path) or manager_of(path, path.name) is not None:
            continue
        found.append(Finding(SETUP, "hook-unknown", str(path),
                             "a hook that is neither git-harn's nor a known hook manager's (pre-commit, husky, "
                             "git-lfs): git runs it for the operator's own commands; an agent can write there. "
                             "If it is not yours, remove it", command("rm", "--", str(path)),
                             subject={"path": str(path)}))
    return found


def _hook_files(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for name in names:
        path = folder / name
        if name.endswith(".sample") or not path.is_file() or not os.access(path, os.X_OK):
            continue
        out.append(path)
    return out


def _replace_refs(repo: Repo) -> list[Finding]:
    """``refs/replace/*``: git would show one commit where libgit2 (and every
    git git-harn runs) reads another."""
    return [Finding(SETUP, "replace-ref", name,
                    f"{name} makes git show another object in place of {name.rsplit('/', 1)[-1][:12]}: the "
                    "operator's git would then see something other than what git-harn's gates, reviews and "
                    "squash judge; if you did not make it, delete it", command("git", "update-ref", "-d", name, oid),
                    subject={"ref": name, "oid": oid})
            for name, oid in sorted(repo.ref_ids(["refs/replace/"]).items())]


def _remote_moved(repo: Repo) -> list[Finding]:
    """The remote of the last workflow run, now at another URL than the run started with."""
    try:
        last = record.latest(repo).body
    except HarnError:
        return []
    remote, was = last.get("remote"), last.get("remoteUrl")
    if not isinstance(remote, str) or not isinstance(was, str):
        return []
    now = repo.config(f"remote.{remote}.url")
    if now is None or without_credentials(now) == was:
        return []
    return [Finding(SETUP, "remote-url-changed", f"remote.{remote}.url = {without_credentials(now)}",
                    f"the last workflow run ({last.get('workflowId')}) started with {remote} at {was}; an agent "
                    "can rewrite the repository's config: if you did not change it, set it back",
                    command("git", "remote", "set-url", remote, was),
                    subject={"remote": remote, "recorded": was, "now": without_credentials(now)})]


def _missing_paths(repo: Repo) -> list[Finding]:
    """``harn.worktreeRoot`` whose folder and its parent are both missing (a
    root that has held no workspace yet is missing alone; a missing parent
    is a typo or an unplugged disk, and the next workspace would make the
    whole path, on whatever disk is there), and a ``harn.assessor`` whose
    program is an absolute path that is not there (every assessment fails).
    Report-only: unsetting either changes where workspaces go or who
    assesses, which is the operator's call."""
    found = []
    root = repo.config("harn.worktreeRoot")
    if root and Path(os.path.expanduser(root)).is_absolute():
        path = Path(os.path.expanduser(root))
        if not os.path.lexists(path) and not os.path.lexists(path.parent):
            found.append(_setting(repo, "harn.worktreeRoot", path,
                                  "names a folder that is not there, nor its parent (a typo, or a disk not "
                                  "mounted): the next workspace would create the whole path; mount the disk, "
                                  "or unset it so workspaces go to the default folder"))
    program = _assessor_program(repo.config("harn.assessor"))
    if program is not None and not os.path.lexists(program):
        found.append(_setting(repo, "harn.assessor", program,
                              "names a program that is not there: every assessment would fail; install it, "
                              "or unset it to use the built-in assessor"))
    return found


def _assessor_program(value: str | None) -> Path | None:
    """The program of a ``harn.assessor`` command when it is an absolute path."""
    try:
        words = shlex.split(value or "")
    except ValueError:
        return None  # the assessor itself says what is wrong with it
    program = Path(os.path.expanduser(words[0])) if words else None
    return program if program is not None and program.is_absolute() else None


def _setting(repo: Repo, key: str, path: Path, why: str) -> Finding:
    where = origin_file(repo.cli_cwd, key)
    fix = command("git config --file", str(where), "--unset-all", key) if where is not None else None
    return Finding(SETUP, "setting-path-missing", f"{key} = {path}", f"git config {key} {why}", fix,
                   subject={"key": key, "path": str(path), "file": str(where) if where else None})
