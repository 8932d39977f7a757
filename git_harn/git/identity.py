"""Who git-harn acts as: the host, the clone, the operator and the machine identity.

Signatures follow git's precedence: ``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*``
from the environment, then the configured identity, then git-harn's default.
"""

from __future__ import annotations

import re
import socket
import time

import pygit2

from git_harn.errors import BadInput
from git_harn.git.objects import Signature
from git_harn.git.repo import Repo

DEFAULT_MACHINE_NAME = "git-harn machine"
DEFAULT_MACHINE_EMAIL = "git-harn@localhost"
_IDENTITY = re.compile(r"\s*(?P<name>[^<>]+?)\s*<(?P<email>[^<>]*)>\s*")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_CLONE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
CLONE_ID_KEY = "harn.cloneId"


def host_name(repo: Repo) -> str:
    """This machine, as records name it (``harn.host`` overrides)."""
    configured = repo.config("harn.host")
    if configured is not None and not _HOST.fullmatch(configured):
        raise BadInput(f"harn.host must be a host name (letters, digits, . _ -), not {configured!r}")
    return configured or socket.gethostname()


def clone_id(repo: Repo) -> str | None:
    """This clone's id (``harn.cloneId``), None before its first workspace.
    Read from the repository's own config file only: ``git clone`` does not
    copy it, so two clones never share one, whatever the global config says."""
    try:
        value = pygit2.Config(str(repo.common_dir / "config"))[CLONE_ID_KEY]
    except (KeyError, OSError, pygit2.GitError):
        return None
    if not _CLONE_ID.fullmatch(str(value)):
        raise BadInput(f"{CLONE_ID_KEY} must be letters, digits, . _ -, not {str(value)!r}")
    return str(value)


def set_clone_id(repo: Repo, value: str) -> None:
    """Write ``harn.cloneId`` into the repository's own config file."""
    repo._git("config", "--file", str(repo.common_dir / "config"), CLONE_ID_KEY, value)


def machine_signature(repo: Repo) -> Signature:
    """The configured machine identity (``harn.machineIdentity``, 'Name <email>')."""
    configured = repo.config("harn.machineIdentity")
    if not configured:
        return signature(DEFAULT_MACHINE_NAME, DEFAULT_MACHINE_EMAIL)
    match = _IDENTITY.fullmatch(configured)
    if not match:
        raise BadInput(f"harn.machineIdentity must look like 'Name <email>', not {configured!r}")
    return signature(match["name"], match["email"])


def operator_signature(repo: Repo) -> Signature:
    """The operator's git identity, or the machine identity when none is set."""
    name, email = repo.config("user.name"), repo.config("user.email")
    if name and email:
        return signature(name, email)
    return machine_signature(repo)


def signature(name: str, email: str, when: float | None = None) -> Signature:
    offset = -time.timezone // 60 if not time.localtime().tm_isdst else -time.altzone // 60
    return Signature(name, email, int(time.time() if when is None else when), offset)
