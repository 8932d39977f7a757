"""Which forge a remote is: named (``github``, ``gitlab``, ``gitea``), or
read from the remote's URL; and its API root and token."""

from __future__ import annotations

import os
from collections.abc import Mapping

from git_harn.errors import BadInput
from git_harn.forge.gitea import Gitea
from git_harn.forge.github import GitHub, api_roots
from git_harn.forge.gitlab import GitLab
from git_harn.forge.model import Forge
from git_harn.forge.place import Place, forge_of_host, place_of
from git_harn.forge.rest import checked_url
from git_harn.forge.tokens import from_env, github_token
from git_harn.git.env import GITEA_VARS, GITLAB_VARS
from git_harn.git.remote import remote_url
from git_harn.git.repo import Repo
from git_harn.text import one_line

FORGES = ("github", "gitlab", "gitea")
ALIASES = {"forgejo": "gitea", "codeberg": "gitea"}


def forge_name(name: str | None, place: Place, remote: str) -> str:
    """The forge named, or the one the remote's host says; BadInput when neither tells."""
    if name:
        named = ALIASES.get(name.strip().lower(), name.strip().lower())
        if named not in FORGES:
            raise BadInput(f"unknown forge {one_line(name, 40)!r}: github, gitlab or gitea")
        return named
    found = forge_of_host(place.host)
    if found is None:
        where = place.host or "a path on this machine"
        raise BadInput(f"cannot tell which forge remote {remote} is ({where}): "
                       "set workflow.forge to github, gitlab or gitea")
    return found


def forge_for(repo: Repo, remote: str, name: str | None = None, url: str | None = None,
              env: Mapping[str, str] | None = None) -> Forge:
    """The forge of ``remote``: ``name`` or its URL's host decides which;
    ``url`` (``workflow.forgeUrl``) is where its API is when the remote's
    URL does not say (GitHub Enterprise, a forge behind another name);
    ``env`` (default: this process's) holds the operator's tokens."""
    found = remote_url(repo, remote)
    if found is None:
        raise BadInput(f"unknown remote: {remote}")
    place = place_of(found)
    env = os.environ if env is None else env
    which = forge_name(name, place, remote)
    if url is not None:
        url = checked_url(url, "workflow.forgeUrl")
    if which == "github":
        rest, graphql = api_roots(url, place.host)
        host = place_of(rest).host or "github.com"
        return GitHub(rest, graphql, place.tail(2), github_token(host, env))
    web = url or place.web
    if web is None:
        raise BadInput(f"remote {remote} is a path on this machine: set workflow.forgeUrl to the forge's address")
    if which == "gitlab":
        api = web if web.endswith("/api/v4") else f"{web}/api/v4"
        project = place.path if place.host is not None else place.tail(2)
        return GitLab(api, project, from_env(GITLAB_VARS, env))
    api = web if web.endswith("/api/v1") else f"{web}/api/v1"
    return Gitea(api, place.tail(2), from_env(GITEA_VARS, env))
