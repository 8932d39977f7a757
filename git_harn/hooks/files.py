"""Install, chain, uninstall and inspect git-harn's git hooks [H1]-[H3].

The hooks go to the folder git runs them from (``git rev-parse --git-path
hooks``, which honours ``core.hooksPath``). A hook git-harn did not write is
never destroyed: install moves it aside as ``<name>.harn-chained`` and our
script runs it first with the same arguments and input; uninstall renames it
back, so its bytes and mode are exactly what they were. Every step is a
rename or an atomic replace, so an install or uninstall killed half-way is
finished by running it again.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from git_harn.errors import Refused
from git_harn.files import atomic_write
from git_harn.git import Repo
from git_harn.resources import hook_template
from git_harn.results import Result

HOOK_NAMES = ("reference-transaction", "post-checkout", "pre-auto-gc")

# The second line of every script git-harn writes; it is how we know ours.
MARKER = b"# git-harn hook: "
CHAINED_SUFFIX = ".harn-chained"
BACKUP_SUFFIX = ".harn-backup"
TEMP_SUFFIX = ".harn-tmp"

# What sits at a hook's path.
OURS = "ours"  # our script, nothing chained
CHAINED = "chained"  # our script, running a hook that was there before
FOREIGN = "foreign"  # someone else's hook; ours is not installed
MISSING = "missing"  # no hook at all

# What install and uninstall did to one hook.
INSTALLED = "installed"
CHAINED_IN = "chained"
UPDATED = "updated"
UNCHANGED = "unchanged"
REMOVED = "removed"
RESTORED = "restored"
LEFT_ALONE = "left alone"
ABSENT = "absent"


@dataclass
class HookStatus:
    name: str
    path: str
    state: str
    current: bool  # our script is the one this version ships (False unless ours)
    chained: str | None  # the hook our script runs first, if any
    backups: list[str] = field(default_factory=list)


@dataclass
class HookChange:
    name: str
    action: str
    path: str
    chained: str | None = None
    setAside: str | None = None  # where --force moved a hook that blocked install


def hooks_dir(repo: Repo) -> Path:
    """The folder git runs hooks from; a relative core.hooksPath is taken
    from the worktree top, as git does."""
    return repo.git_path("hooks")


def template_bytes(name: str) -> bytes:
    return hook_template(name).read_bytes()


def is_ours(path: Path) -> bool:
    """A regular file whose first lines carry our marker."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        with path.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return any(line.startswith(MARKER) for line in head.splitlines()[:4])


def _chained_path(hook: Path) -> Path:
    return hook.with_name(hook.name + CHAINED_SUFFIX)


def _backups(hook: Path) -> list[str]:
    """What --force set aside for this hook: <name>[.harn-chained].harn-backup[-N]."""
    if not hook.parent.is_dir():
        return []
    return sorted(str(p) for p in hook.parent.iterdir()
                  if p.name.startswith(hook.name + ".") and BACKUP_SUFFIX in p.name)


def hook_status(directory: Path, name: str) -> HookStatus:
    hook, chained = directory / name, _chained_path(directory / name)
    has_chained = os.path.lexists(chained)
    if is_ours(hook):
        state = CHAINED if has_chained else OURS
        current = hook.read_bytes() == template_bytes(name)
    else:
        state = FOREIGN if os.path.lexists(hook) else MISSING
        current = False
    return HookStatus(name, str(hook), state, current,
                      str(chained) if has_chained else None, _backups(hook))


@dataclass
class HooksStatus(Result):
    SCHEMA: ClassVar[str] = "hooks-status"

    hooksDir: str
    hooks: list[HookStatus]
    outcome: str = "ok"


@dataclass
class HooksChanged(Result):
    """What install or uninstall did, hook by hook."""

    hooksDir: str
    changes: list[HookChange]
    outcome: str = "ok"


def status(repo: Repo) -> HooksStatus:
    directory = hooks_dir(repo)
    return HooksStatus(str(directory), [hook_status(directory, name) for name in HOOK_NAMES])


# --- install ----------------------------------------------------------------


@dataclass
class _Plan:
    hook: Path
    action: str
    chain_existing: bool = False  # move the foreign hook to <name>.harn-chained
    set_aside: Path | None = None  # move this to a backup first (--force)


def _blocker(hook: Path) -> tuple[str, Path] | None:
    """Why a foreign hook cannot simply be chained, and what --force sets aside."""
    chained = _chained_path(hook)
    if not hook.is_symlink() and hook.is_dir():
        return f"{hook} is a folder, not a hook", hook
    if os.path.lexists(chained):
        return (f"{hook} is not git-harn's and {chained.name} already exists "
                "(another tool replaced git-harn's hook?)"), chained
    return None


def _plan(directory: Path, name: str, force: bool) -> _Plan:
    hook = directory / name
    if is_ours(hook):
        same = hook.read_bytes() == template_bytes(name)
        return _Plan(hook, UNCHANGED if same else UPDATED)
    if not os.path.lexists(hook):
        return _Plan(hook, INSTALLED)
    blocked = _blocker(hook)
    if blocked is None:
        return _Plan(hook, CHAINED_IN, chain_existing=True)
    reason, aside = blocked
    if not force:
        raise Refused(f"cannot install the {name} hook: {reason}; nothing changed "
                      f"(--force moves {aside.name} aside as {aside.name}{BACKUP_SUFFIX}, deleting nothing)")
    return _Plan(hook, CHAINED_IN if aside != hook else INSTALLED,
                 chain_existing=aside != hook, set_aside=aside)


def _free_backup_name(path: Path) -> Path:
    candidate = path.with_name(path.name + BACKUP_SUFFIX)
    number = 1
    while os.path.lexists(candidate):
        number += 1
        candidate = path.with_name(f"{path.name}{BACKUP_SUFFIX}-{number}")
    return candidate


def _write_ours(hook: Path, content: bytes) -> None:
    """Write our script through a temporary file and an atomic replace."""
    atomic_write(hook, content, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def _apply(plan: _Plan) -> HookChange:
    hook = plan.hook
    change = HookChange(hook.name, plan.action, str(hook))
    if plan.set_aside is not None:
        backup = _free_backup_name(plan.set_aside)
        os.rename(plan.set_aside, backup)
        change.setAside = str(backup)
    if plan.chain_existing:
        os.rename(hook, _chained_path(hook))
    if plan.action != UNCHANGED:
        _write_ours(hook, template_bytes(hook.name))
    if os.path.lexists(_chained_path(hook)):
        change.chained = str(_chained_path(hook))
    return change


def install(repo: Repo, force: bool = False) -> HooksChanged:
    """Install every hook, chaining foreign ones. All hooks are checked before
    any is touched, so a refusal changes nothing [P7]."""
    directory = hooks_dir(repo)
    if os.path.lexists(directory) and not directory.is_dir():
        raise Refused(f"the hooks path {directory} exists and is not a folder")
    configured = repo.config("core.hooksPath")
    if configured and not os.path.isabs(os.path.expanduser(configured)) and not force:
        # git reads a relative core.hooksPath from each worktree's top, so
        # git-harn's own workspaces would run no guard at all [H1].
        raise Refused(f"core.hooksPath is relative ({configured}): git looks for hooks relative to "
                      "each worktree, so workspaces would run none; set it to an absolute path "
                      f"(git config core.hooksPath {directory}) and install again, or pass --force")
    plans = [_plan(directory, name, force) for name in HOOK_NAMES]
    directory.mkdir(parents=True, exist_ok=True)
    return HooksChanged(str(directory), [_apply(plan) for plan in plans])


def manual_instructions(repo: Repo) -> str:
    """What to do by hand instead of ``install``; changes nothing."""
    directory = hooks_dir(repo)
    parts = [
        f"git-harn's hooks belong in {directory}",
        "For each hook below:",
        "  1. if a hook of that name is already there, rename it to <name>" + CHAINED_SUFFIX,
        "     (git-harn's script runs it first, with the same arguments and input);",
        "  2. save the script as <name> in that folder and make it executable (chmod +x).",
        "'git harn hooks status' then reports them as ours or chained.",
    ]
    for name in HOOK_NAMES:
        state = hook_status(directory, name).state
        parts += ["", f"--- {directory / name}  (now: {state}) ---",
                  template_bytes(name).decode("utf-8").rstrip("\n")]
    return "\n".join(parts)


# --- uninstall ----------------------------------------------------------------


def _uninstall_one(directory: Path, name: str) -> HookChange:
    hook = directory / name
    chained = _chained_path(hook)
    temp = hook.with_name(hook.name + TEMP_SUFFIX)
    if os.path.lexists(temp):
        temp.unlink()
    if os.path.lexists(hook) and not is_ours(hook):
        return HookChange(name, LEFT_ALONE, str(hook),
                          chained=str(chained) if os.path.lexists(chained) else None)
    if os.path.lexists(chained):
        # One atomic rename puts the old hook back over ours.
        os.replace(chained, hook)
        return HookChange(name, RESTORED, str(hook))
    if os.path.lexists(hook):
        hook.unlink()
        return HookChange(name, REMOVED, str(hook))
    return HookChange(name, ABSENT, str(hook))


def uninstall(repo: Repo) -> HooksChanged:
    """Remove our scripts and put chained hooks back exactly as they were.
    A hook that is not ours is left alone."""
    directory = hooks_dir(repo)
    if not directory.is_dir():
        return HooksChanged(str(directory), [HookChange(name, ABSENT, str(directory / name)) for name in HOOK_NAMES])
    return HooksChanged(str(directory), [_uninstall_one(directory, name) for name in HOOK_NAMES])
