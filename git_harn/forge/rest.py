"""A forge's REST API through urllib, and nothing else.

Only https (plain http to this machine alone, for a forge run locally), no
redirect followed (urllib would send the token on to wherever a redirect
points), a bounded answer, a time limit, and every word of an error
scrubbed of the token [T5].
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from git_harn.errors import BadInput, ForgeFailure
from git_harn.forge.tokens import Token, scrub
from git_harn.git.objects import Oid, to_oid
from git_harn.text import one_line

SECONDS = 30
ANSWER_LIMIT = 8 * 1024 * 1024  # bytes of one answer
PAGES = 50  # pages of one listing followed at most
LOOPBACK = ("127.0.0.1", "localhost", "::1")
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
USER_AGENT = "git-harn"


def checked_url(url: str, what: str) -> str:
    """``url`` if it may carry a token: https, or http to this machine; no credentials in it."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise BadInput(f"{what}: not an http(s) URL: {one_line(url, 120)}")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise BadInput(f"{what}: a token is never sent over plain http: {one_line(url, 120)}")
    if parts.username or parts.password:
        raise BadInput(f"{what}: the URL holds a user name or password; give the token in the environment")
    return url.rstrip("/")


@dataclass(frozen=True)
class Reply:
    status: int
    data: Any
    next_url: str | None = None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                         headers: Any, newurl: str) -> None:
        return None  # the 3xx comes back as an HTTPError, reported with where it pointed


_OPENER = urllib.request.build_opener(_NoRedirect())


class Api:
    """One forge's API root, with the header its token goes in."""

    def __init__(self, root: str, forge: str, token: Token | None, auth: str, scheme: str = "") -> None:
        self.root = checked_url(root, f"{forge} API")
        self.forge = forge
        self.token = token
        self._auth = auth  # the header's name: Authorization, PRIVATE-TOKEN
        self._scheme = scheme  # what goes before the token in it: "Bearer ", "token ", ""
        self.headers: dict[str, str] = {"User-Agent": USER_AGENT, "Accept": "application/json"}

    def url(self, path: str, query: Mapping[str, str | int] | None = None) -> str:
        return self.root + path + (f"?{urllib.parse.urlencode(query)}" if query else "")

    def call(self, method: str, url: str, body: Any = None, accept: tuple[int, ...] = ()) -> Reply:
        """``method url`` with ``body`` as JSON; a status outside 2xx and
        ``accept`` raises ForgeFailure with the forge's words."""
        self._same_place(url)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers=self._headers(data is not None))
        try:
            with _OPENER.open(request, timeout=SECONDS) as answer:
                return Reply(answer.status, _json(answer.read(ANSWER_LIMIT + 1), self.forge),
                             self._next(answer.headers.get("Link")))
        except urllib.error.HTTPError as error:
            raw = error.read(ANSWER_LIMIT + 1) if error.fp is not None else b""
            data_back = _json(raw, self.forge, strict=False)
            if error.code in accept:
                return Reply(error.code, data_back)
            raise ForgeFailure(self.scrub(f"{self.forge}: {method} {self._path(url)} answered {error.code}: "
                                          f"{words(data_back) or error.reason}"
                                          f"{_moved(error)}")) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise ForgeFailure(self.scrub(f"{self.forge}: cannot reach {self.root}: {reason}")) from None

    def pages(self, path: str, query: Mapping[str, str | int]) -> Iterator[Any]:
        """Each item of a listing, page after page by the Link header's ``next``."""
        url: str | None = self.url(path, query)
        for _ in range(PAGES):
            if url is None:
                return
            reply = self.call("GET", url)
            if not isinstance(reply.data, list):
                raise ForgeFailure(f"{self.forge}: {path} is not a list")
            yield from reply.data
            url = reply.next_url

    def scrub(self, text: str) -> str:
        return one_line(scrub(text, [self.token]), 400)

    def _headers(self, has_body: bool) -> dict[str, str]:
        headers = dict(self.headers)
        if has_body:
            headers["Content-Type"] = "application/json"
        if self.token is not None:
            headers[self._auth] = self._scheme + self.token.reveal()
        return headers

    def _same_place(self, url: str) -> None:
        """A URL the forge gave (a next page) may not take the token elsewhere."""
        mine, theirs = urllib.parse.urlsplit(self.root), urllib.parse.urlsplit(url)
        if (mine.scheme, mine.netloc) != (theirs.scheme, theirs.netloc):
            raise ForgeFailure(self.scrub(f"{self.forge}: refusing to send the token to {theirs.netloc}"))

    def _next(self, link: str | None) -> str | None:
        found = _NEXT.search(link or "")
        return found.group(1) if found else None

    def _path(self, url: str) -> str:
        return urllib.parse.urlsplit(url).path


def _moved(error: urllib.error.HTTPError) -> str:
    where = error.headers.get("Location") if error.headers else None
    return f" (it points to {one_line(where, 200)}; set workflow.forgeUrl)" if where else ""


def _json(raw: bytes, forge: str, strict: bool = True) -> Any:
    if len(raw) > ANSWER_LIMIT:
        raise ForgeFailure(f"{forge}: an answer larger than {ANSWER_LIMIT} bytes")
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        if strict:
            raise ForgeFailure(f"{forge}: an answer that is not JSON") from None
        return {"message": raw.decode("utf-8", "replace")[:400]}


def words(data: Any) -> str:
    """The forge's own words in an error document (GitHub's ``message`` and
    ``errors[].message``, GitLab's ``message``/``error``, Gitea's ``message``)."""
    if not isinstance(data, dict):
        return ""
    said = [str(data[key]) for key in ("message", "error") if isinstance(data.get(key), (str, list, dict))]
    for item in data.get("errors") or []:
        if isinstance(item, dict) and item.get("message"):
            said.append(str(item["message"]))
        elif isinstance(item, str):
            said.append(item)
    return "; ".join(said)


# --- the forge's values, untrusted: the type asked for, or None ---------------------


def oid_of(value: object) -> Oid | None:
    try:
        return to_oid(value) if isinstance(value, str) else None
    except ValueError:
        return None


def number_of(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text_of(value: object, limit: int = 400) -> str | None:
    return one_line(value, limit) if isinstance(value, str) else None
