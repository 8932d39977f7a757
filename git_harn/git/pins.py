"""The settings pinned for the length of a run: read once, before any agent
ran, and passed to every git the host runs from then on [T1] [T2].

A linked worktree shares its repository's config file: an agent can write
there a program for git to run (``core.sshCommand``, ``credential.helper``,
``gpg.program``, a filter or merge driver) or a place for it to go
(``remote.<r>.url``). The run's seal puts such a change back before the
host's next git, but a git that starts between that check and its own read
of the file would still obey it. So a workflow run (and ``git harn run``)
reads these settings as they stood at its start and passes each one
explicitly with ``-c``, where a later value in a file cannot win:

- a single-valued setting that names a program: its value then, or git's
  own default when it was unset (``PROGRAMS``);
- ``credential.helper`` (and ``credential.<url>.helper``): the list reset
  (an empty value) and each helper of then, in order;
- every filter, merge and diff driver configured then: each of its keys
  that names a program, with its value then (empty: none), so a driver
  redefined later never runs the new program; a driver that did not exist
  then is refused: the seal check that finds a config file naming it ends
  the task (a tamper fault) and, by ``refuse_drivers``, has every later git
  of the run get its programs empty, so a file that names it again before
  the next check runs nothing either (a first write that lands while a git
  is already reading the file is the one case left);
- a remote: every setting of each remote as it stood then (``PinnedRemote``);
  the remote door (``git.remote``) hands the ones that say where a fetch or
  push goes to each git under a remote name chosen afresh, so no
  ``remote.<r>.url``, ``pushurl``, ``uploadpack`` or ``receivepack`` written
  since reaches it.

``SEALED`` (fsmonitor off, the ``ext::`` transport refused) and
``GIT_NO_REPLACE_OBJECTS`` hold for every git, run or not (``git.run``).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from git_harn.git.config import GitConfig
from git_harn.git.inflight import set_in_flight
from git_harn.git.run import install_pins

# Single-valued settings that name a program git may run, and git's own
# default when unset (None: the key is left to git when unset, since its
# absence means "no program").
PROGRAMS: dict[str, str | None] = {
    "core.sshcommand": None,  # unset: GIT_SSH or ssh, decided below
    "core.askpass": None,
    "core.pager": "cat",  # the host never pages (no terminal); nothing else may either
    "core.editor": ":",  # the host never edits
    "sequence.editor": ":",
    "gpg.program": "gpg",
    "gpg.ssh.program": "ssh-keygen",
    "gpg.x509.program": "gpgsm",
    "commit.gpgsign": "false",  # a signature asked for later would run gpg.program mid-run
    "tag.gpgsign": "false",
}
# The keys of a driver that name a program (an empty value: no program).
DRIVER_PROGRAMS = {"filter": ("clean", "smudge", "process"), "merge": ("driver",),
                   "diff": ("command", "textconv")}
_HELPER = re.compile(r"^credential\.(?:.+\.)?helper$")


@dataclass(frozen=True)
class PinnedRemote:
    """A remote as configured when the run started: each of its settings
    (``url``, ``pushurl`` …, as git lowercases them) -> its values then."""

    name: str
    settings: dict[str, list[str]] = field(default_factory=dict)

    def url(self) -> str | None:
        urls = self.settings.get("url", [])
        return urls[0] if urls else None


@dataclass(frozen=True)
class Pins:
    """What a run passes to every git: ``-c`` pairs, and its remotes as they were."""

    args: tuple[str, ...]
    remotes: dict[str, PinnedRemote]
    drivers: frozenset[str]  # "<kind>.<name>" of every driver configured at the start
    refused: frozenset[str] = frozenset()  # drivers named since, each passed with empty programs


def read_pins(cwd: Path) -> Pins:
    """The pinned settings of the repository at ``cwd``, from its config now."""
    config = GitConfig(cwd)
    pairs: list[tuple[str, str]] = []
    for key, default in PROGRAMS.items():
        value = _last(config.values(key))
        chosen = value if value is not None else _program_default(key, default)
        if chosen is not None:
            pairs.append((key, chosen))
    keys = config.keys_in(frozenset({"system", "global", "local", "worktree", "command"}))
    for key in keys:
        if _HELPER.match(key):
            pairs.append((key, ""))  # an empty helper resets the list: files read later add none
            pairs += [(key, "true" if v is None else v) for v in config.values(key)]
    drivers = _drivers(keys)
    for driver in sorted(drivers):
        kind, _, name = driver.partition(".")
        for part in DRIVER_PROGRAMS[kind]:
            pairs.append((f"{kind}.{name}.{part}", _last(config.values(f"{kind}.{name}.{part}")) or ""))
    args = tuple(arg for key, value in pairs for arg in ("-c", f"{key}={value}"))
    return Pins(args, _remotes(config, keys), frozenset(drivers))


def _last(values: list[str | None]) -> str | None:
    if not values:
        return None
    return "true" if values[-1] is None else values[-1]


def _program_default(key: str, default: str | None) -> str | None:
    if key == "core.sshcommand":
        # git: GIT_SSH_COMMAND, then core.sshCommand, then GIT_SSH, then ssh
        given = os.environ.get("GIT_SSH")
        return shlex.quote(given) if given else "ssh"
    if key == "core.askpass":
        return os.environ.get("SSH_ASKPASS", "")  # empty: no program, as git reads it
    return default


def _drivers(keys: list[str]) -> set[str]:
    found = set()
    for key in keys:
        section, _, rest = key.partition(".")
        name, _, _ = rest.rpartition(".")
        if section in DRIVER_PROGRAMS and name:
            found.add(f"{section}.{name}")
    return found


def _remotes(config: GitConfig, keys: list[str]) -> dict[str, PinnedRemote]:
    """Every ``remote.<name>.<setting>`` of then, by remote. Which of them a
    fetch or push is given is the remote door's to say."""
    parts: dict[str, set[str]] = {}
    for key in keys:
        if key.startswith("remote.") and key.count(".") >= 2:
            name, _, part = key[len("remote."):].rpartition(".")
            parts.setdefault(name, set()).add(part)
    remotes = {}
    for name in sorted(parts):
        settings = {part: [("true" if v is None else v) for v in config.values(f"remote.{name}.{part}")]
                    for part in sorted(parts[name])}
        remotes[name] = PinnedRemote(name, {k: v for k, v in settings.items() if v})
    return remotes


# --- the pins of the run in flight --------------------------------------------------------

_ACTIVE: list[Pins] = []


def active_pins() -> Pins | None:
    return _ACTIVE[0] if _ACTIVE else None


@contextmanager
def pinned(cwd: Path) -> Iterator[Pins]:
    """The settings read now, passed to every git git-harn runs until the block ends."""
    pins = read_pins(cwd)
    _ACTIVE[:] = [pins]
    set_in_flight(True)
    install_pins(pins.args)
    try:
        yield pins
    finally:
        _ACTIVE[:] = []
        set_in_flight(False)
        install_pins(())


_HEADER = re.compile(r'^\s*\[\s*([A-Za-z][A-Za-z0-9-]*)(?:\s+"((?:[^"\\]|\\.)*)"|\.([^\]\s]+))?\s*\]')


def driver_sections(raw: bytes) -> set[str]:
    """``<kind>.<name>`` of every filter, merge or diff driver section in config text ``raw``."""
    found = set()
    for line in raw.decode("utf-8", "surrogateescape").splitlines():
        header = _HEADER.match(line)
        if header is None:
            continue
        kind, quoted, dotted = header.group(1).lower(), header.group(2), header.group(3)
        name = quoted.replace('\\"', '"').replace("\\\\", "\\") if quoted is not None else dotted
        if kind in DRIVER_PROGRAMS and name:
            found.add(f"{kind}.{name}" if quoted is not None else f"{kind}.{name.lower()}")
    return found


def refuse_drivers(found: set[str]) -> list[str]:
    """Drivers a config file named that were not configured at the run's start:
    from now on every git of the run gets each of their program keys empty,
    so none runs even if a file names it again before the next check (the
    seal ends the task that wrote it) [T1] [T2]. The ones newly refused."""
    pins = active_pins()
    if pins is None:
        return []
    new = sorted(found - pins.drivers - pins.refused)
    if not new:
        return []
    blanks = tuple(arg for driver in new for part in DRIVER_PROGRAMS[driver.partition(".")[0]]
                   for arg in ("-c", f"{driver}.{part}="))
    _ACTIVE[:] = [Pins(pins.args + blanks, pins.remotes, pins.drivers, pins.refused | frozenset(new))]
    install_pins(_ACTIVE[0].args)
    return new


def without_credentials(url: str) -> str:
    """``url`` without a user name or password (``https://user:token@host/…``):
    what a record may keep of it."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


def remote_url(remote: str) -> str | None:
    """The URL ``remote`` had when the run's settings were pinned, without credentials."""
    pins = active_pins()
    found = pins.remotes.get(remote) if pins is not None else None
    url = found.url() if found is not None else None
    return without_credentials(url) if url is not None else None
