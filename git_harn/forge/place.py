"""Where a remote lives, read from its URL: the forge's host and the
repository's path there (``owner/repo``, or GitLab's ``group/sub/project``)."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from git_harn.errors import BadInput

_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.+)$")  # git@host:owner/repo.git


@dataclass(frozen=True)
class Place:
    host: str | None  # None: a path on this machine (a bare repository)
    path: str  # without leading or trailing slashes, without .git
    web: str | None  # the forge's web root as the URL suggests it: https://host[:port]

    def tail(self, parts: int) -> str:
        """The last ``parts`` components of the path (``owner/repo``)."""
        found = [part for part in self.path.split("/") if part]
        if len(found) < parts:
            raise BadInput(f"cannot read a repository path from {self.path!r}")
        return "/".join(found[-parts:])


def place_of(url: str) -> Place:
    """The host and path of a remote's URL (https, ssh, scp-like, or a local path)."""
    if "://" in url:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        if parts.scheme == "file" or not host:
            return Place(None, _path(parts.path), None)
        keep_port = parts.scheme in ("http", "https") and parts.port is not None
        scheme = parts.scheme if parts.scheme in ("http", "https") else "https"
        web = f"{scheme}://{host}" + (f":{parts.port}" if keep_port else "")
        return Place(host.lower(), _path(parts.path), web)
    scp = _SCP.match(url)
    if scp and "/" not in scp.group("host"):
        host = scp.group("host").lower()
        return Place(host, _path(scp.group("path")), f"https://{host}")
    return Place(None, _path(url), None)


def _path(path: str) -> str:
    path = path.strip("/")
    return path[: -len(".git")] if path.endswith(".git") else path


def forge_of_host(host: str | None) -> str | None:
    """The forge a host's name says (github, gitlab, gitea), or None."""
    if host is None:
        return None
    labels = host.split(".")
    if host == "github.com" or host.endswith(".ghe.com") or "github" in labels:
        return "github"
    if "gitlab" in labels or host.startswith("gitlab"):
        return "gitlab"
    if host in ("codeberg.org",) or any(word in labels for word in ("gitea", "forgejo", "codeberg")):
        return "gitea"
    return None
