"""git config as git itself reads it.

libgit2 (pygit2) reads the config files but not what git passes in the
environment: ``git -c k=v`` (``GIT_CONFIG_PARAMETERS``),
``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n``, ``GIT_CONFIG_GLOBAL``,
``GIT_CONFIG_SYSTEM``/``NOSYSTEM``. So every value git-harn reads comes from
one ``git config --list -z --show-scope``, run once per repository handle
and cached: the same precedence and includes as git, for one process.

Each value keeps the scope git read it in (``system``, ``global``, ``local``,
``worktree``, ``command``; an included file takes the scope of the file that
includes it). An agent in a linked worktree can write the repository's own
config (``local``, ``worktree``), never the operator's: a setting that names
a program, a variable or a place is read from the operator's scopes only
(``OPERATOR_SCOPES``) [T1].
"""

from __future__ import annotations

from pathlib import Path

from git_harn.errors import BadInput
from git_harn.git.run import error_line, run_git


def normal_key(key: str) -> str:
    """git's spelling of ``key``: section and name lower-case, a subsection as written."""
    section, _, rest = key.partition(".")
    middle, _, name = rest.rpartition(".")
    return ".".join(part for part in (section.lower(), middle, name.lower()) if part)


# The scopes an agent cannot write: the operator's system and global files,
# and ``git -c`` (or GIT_CONFIG_PARAMETERS) of the command the operator ran.
OPERATOR_SCOPES = frozenset({"system", "global", "command"})
# The repository's own files, which any worktree of it (an agent's) can write.
REPOSITORY_SCOPES = frozenset({"local", "worktree"})
# git-harn's own settings that name a command, an environment variable or a
# guard: during a run (``git.pins``) read from the operator's scopes only,
# whatever the repository's own files say [T1] (docs/configuration.md).
RUN_OPERATOR_SPELLING = {key.lower(): key for key in (
    "harn.gate", "harn.gateEnv", "harn.assessor", "harn.assessorEnv", "harn.sandbox", "harn.gateNetwork",
    "harn.stageDiskLimit", "harn.stageProcessLimit", "harn.sandboxWritable", "harn.notify", "harn.notifyTimeout")}
RUN_OPERATOR_KEYS = frozenset(RUN_OPERATOR_SPELLING)


class GitConfig:
    """Every config entry git sees from ``cwd``, in git's order (last wins)."""

    def __init__(self, cwd: Path) -> None:
        self._cwd = cwd
        self._entries: dict[str, list[tuple[str, str | None]]] | None = None

    def _load(self) -> dict[str, list[tuple[str, str | None]]]:
        if self._entries is None:
            done = run_git(["config", "--list", "-z", "--show-scope"], self._cwd, check=False)
            if done.returncode != 0:
                raise BadInput(f"cannot read git config: {error_line(done.stderr)}")
            self._entries = parse_scoped_list(done.stdout.decode("utf-8", "surrogateescape"))
        return self._entries

    def values(self, key: str) -> list[str | None]:
        """Every value of ``key``, lowest precedence first; None for a bare
        ``key`` line (no ``=``), which git reads as true."""
        return [value for _, value in self._load().get(normal_key(key), [])]

    def scoped(self, key: str) -> list[tuple[str, str | None]]:
        """(scope, value) of every value of ``key``, lowest precedence first."""
        return list(self._load().get(normal_key(key), []))

    def operator_values(self, key: str) -> list[str | None]:
        """The values of ``key`` from the operator's scopes only [T1]."""
        return [value for scope, value in self.scoped(key) if scope in OPERATOR_SCOPES]

    def keys_in(self, scopes: frozenset[str]) -> list[str]:
        """Every key set in any of ``scopes``, in git's order, once each."""
        return [key for key, pairs in self._load().items() if any(scope in scopes for scope, _ in pairs)]

    def forget(self) -> None:
        """After git-harn wrote config: read it again next time."""
        self._entries = None


_TRUE_WORDS = ("true", "yes", "on")
_FALSE_WORDS = ("", "false", "no", "off")
_UNIT = ("k", "m", "g")  # a scale: it never makes 0 anything else


def as_bool(key: str, value: str) -> bool:
    """A config value read as git reads a boolean: true, yes, on, false, no,
    off or empty (any case), else an integer (k, m, g units), true unless 0;
    anything else is an error, as git makes it one."""
    word = value.lower()
    if word in _TRUE_WORDS or word in _FALSE_WORDS:
        return word in _TRUE_WORDS
    number = word[:-1] if word[-1] in _UNIT else word
    digits = number[1:] if number[:1] in ("+", "-") else number
    if not (digits.isascii() and digits.isdigit()):
        raise BadInput(f"git config {key} is not a boolean: {value!r}")
    return int(digits) != 0


def parse_scoped_list(text: str) -> dict[str, list[tuple[str, str | None]]]:
    """``git config --list -z --show-scope``: ``scope\0key\nvalue\0``, or
    ``scope\0key\0`` without a value."""
    entries: dict[str, list[tuple[str, str | None]]] = {}
    items = text.split("\0")
    for scope, item in zip(items[0::2], items[1::2], strict=False):  # the text ends in a lone \0
        if not item:
            continue
        key, newline, value = item.partition("\n")
        entries.setdefault(key, []).append((scope, value if newline else None))
    return entries


def origin_file(cwd: Path, key: str) -> Path | None:
    """The config file that sets the value git uses for ``key`` (the last
    one), or None when it is not set or set outside a file (``git -c``)."""
    done = run_git(["config", "--show-origin", "-z", "--get-all", key], cwd, check=False)
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    origins = fields[0:-1:2]
    if done.returncode != 0 or not origins or not origins[-1].startswith("file:"):
        return None
    path = Path(origins[-1].removeprefix("file:"))
    return path if path.is_absolute() else cwd / path


def file_entries(cwd: Path, path: Path) -> list[tuple[str, str | None]]:
    """(key, value) of every entry of the config file ``path`` (includes
    followed), in its order; none when it is not there or git cannot read it."""
    done = run_git(["config", "--file", str(path), "--includes", "--list", "-z"], cwd, check=False)
    if done.returncode != 0:
        return []
    out: list[tuple[str, str | None]] = []
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if item:
            key, newline, value = item.partition("\n")
            out.append((key, value if newline else None))
    return out
