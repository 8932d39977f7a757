"""Who git-harn acts as: the host, the clone, the operator and the machine identity.

The operator's signatures follow git's precedence (git-commit-tree(1)):
``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*`` from the environment, then
``author.*`` / ``committer.*``, then ``user.*`` (and ``EMAIL``), all as git
reads its config; the machine identity when no name and email are found.
"""

from __future__ import annotations

import os
import re
import socket
import time
from typing import NamedTuple

import pygit2

from git_harn.errors import BadInput
from git_harn.git.objects import Signature
from git_harn.git.repo import Repo
from git_harn.git.run import error_line, run_git

DEFAULT_MACHINE_NAME = "git-harn machine"
DEFAULT_MACHINE_EMAIL = "git-harn@localhost"
# Compiled on first use (re caches them): most commands never need one.
_IDENTITY = r"\s*(?P<name>[^<>]+?)\s*<(?P<email>[^<>]*)>\s*"
_HOST = r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}"
_CLONE_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"
CLONE_ID_KEY = "harn.cloneId"


def host_name(repo: Repo) -> str:
    """This machine, as records name it (``harn.host`` overrides)."""
    configured = repo.config("harn.host")
    if configured is not None and not re.fullmatch(_HOST, configured):
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
    if not re.fullmatch(_CLONE_ID, str(value)):
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
    match = re.fullmatch(_IDENTITY, configured)
    if not match:
        raise BadInput(f"harn.machineIdentity must look like 'Name <email>', not {configured!r}")
    return signature(match["name"], match["email"])


class Identity(NamedTuple):
    author: Signature
    committer: Signature


def operator_identity(repo: Repo) -> Identity:
    """Author and committer of a commit git-harn makes for the operator (salvage)."""
    return Identity(_operator(repo, "author"), _operator(repo, "committer"))


def operator_signature(repo: Repo) -> Signature:
    """The operator as committer: who a note says acted."""
    return _operator(repo, "committer")


def _operator(repo: Repo, role: str) -> Signature:
    upper = role.upper()
    name = os.environ.get(f"GIT_{upper}_NAME") or repo.config(f"{role}.name") or repo.config("user.name")
    email = (os.environ.get(f"GIT_{upper}_EMAIL") or repo.config(f"{role}.email")
             or repo.config("user.email") or os.environ.get("EMAIL"))
    if not (name and email):
        machine = machine_signature(repo)
        name, email = machine.name, machine.email
    date = os.environ.get(f"GIT_{upper}_DATE")
    if not date:
        return signature(name, email)
    when, offset = _git_date(repo, upper, name, email, date)
    return Signature(name, email, when, offset)


def _git_date(repo: Repo, upper: str, name: str, email: str, date: str) -> tuple[int, int]:
    """``GIT_<ROLE>_DATE`` parsed by git itself, which accepts many formats."""
    env = {f"GIT_{upper}_NAME": name, f"GIT_{upper}_EMAIL": email, f"GIT_{upper}_DATE": date}
    done = run_git(["var", f"GIT_{upper}_IDENT"], repo.cli_cwd, check=False, env=env)
    fields = done.stdout.decode("utf-8", "replace").split()
    if done.returncode != 0 or len(fields) < 2 or not fields[-2].isdigit():
        raise BadInput(f"GIT_{upper}_DATE is not a date git understands: {date!r} "
                       f"({error_line(done.stderr)})")
    zone = fields[-1]
    minutes = int(zone[1:3]) * 60 + int(zone[3:5])
    return int(fields[-2]), -minutes if zone.startswith("-") else minutes


def signature(name: str, email: str, when: float | None = None) -> Signature:
    offset = -time.timezone // 60 if not time.localtime().tm_isdst else -time.altzone // 60
    return Signature(name, email, int(time.time() if when is None else when), offset)
