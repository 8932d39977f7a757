"""Who git-harn acts as: the host, the operator and the machine identity."""

from __future__ import annotations

import re
import socket
import time

import pygit2

from git_harn.errors import BadInput
from git_harn.git import Repo

DEFAULT_MACHINE_NAME = "git-harn machine"
DEFAULT_MACHINE_EMAIL = "git-harn@localhost"
_IDENTITY = re.compile(r"\s*(?P<name>[^<>]+?)\s*<(?P<email>[^<>]*)>\s*")


_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


def host_name(repo: Repo) -> str:
    """This machine, as records name it (``harn.host`` overrides)."""
    configured = repo.config("harn.host")
    if configured is not None and not _HOST.fullmatch(configured):
        raise BadInput(f"harn.host must be a host name (letters, digits, . _ -), not {configured!r}")
    return configured or socket.gethostname()


def machine_signature(repo: Repo) -> pygit2.Signature:
    """The configured machine identity (``harn.machineIdentity``, 'Name <email>')."""
    configured = repo.config("harn.machineIdentity")
    if not configured:
        return _signature(DEFAULT_MACHINE_NAME, DEFAULT_MACHINE_EMAIL)
    match = _IDENTITY.fullmatch(configured)
    if not match:
        raise BadInput(f"harn.machineIdentity must look like 'Name <email>', not {configured!r}")
    return _signature(match["name"], match["email"])


def operator_signature(repo: Repo) -> pygit2.Signature:
    """The operator's git identity, or the machine identity when none is set."""
    name, email = repo.config("user.name"), repo.config("user.email")
    if name and email:
        return _signature(name, email)
    return machine_signature(repo)


def _signature(name: str, email: str) -> pygit2.Signature:
    offset = -time.timezone // 60 if not time.localtime().tm_isdst else -time.altzone // 60
    return pygit2.Signature(name, email, int(time.time()), offset)
