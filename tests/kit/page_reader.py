"""Reading a report page back: its elements (with the standard library's
HTML parser), what could run in it, its bars against the record's times,
records made hostile in every field, a PNG screenshot's pixels (a tiny
decoder over ``zlib``), and Debian's chromium, headless, where the machine
has it."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from git_harn.clock import parse_iso

# What a page of data must never hold: elements that run, embed or fetch, and where URLs go.
ACTIVE_TAGS = {"script", "iframe", "object", "embed", "link", "base", "form", "frame", "frameset", "applet",
               "portal", "noscript", "meta-refresh"}
URL_ATTRIBUTES = {"href", "src", "xlink:href", "action", "formaction", "data", "poster", "background"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""  # the text directly inside it


@dataclass
class Page(HTMLParser):
    elements: list[Element] = field(default_factory=list)
    styles: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        HTMLParser.__init__(self, convert_charrefs=True)
        self._open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(element)
        self._open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1].text += data
            if self._open[-1].tag == "style":
                self.styles.append(data)

    def find(self, tag: str, **wanted: str) -> list[Element]:
        def matches(e: Element) -> bool:
            return all(e.attrs.get(k.replace("_", "-")) == v for k, v in wanted.items())
        return [e for e in self.elements if e.tag == tag and matches(e)]


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


def what_could_run(page: Page) -> list[str]:
    """Every element, event handler or URL in ``page`` that could run or fetch something."""
    found = []
    for e in page.elements:
        if e.tag in ACTIVE_TAGS or (e.tag == "meta" and e.attrs.get("http-equiv", "").lower() == "refresh"):
            found.append(f"<{e.tag}>")
        for name, value in e.attrs.items():
            if name.startswith("on"):
                found.append(f"<{e.tag} {name}=…>")
            squeezed = "".join(c for c in value if c.isprintable() and not c.isspace()).lower()
            if name in URL_ATTRIBUTES and (":" in squeezed.split("/", 1)[0] or squeezed.startswith("//")):
                found.append(f"<{e.tag} {name}={value[:40]!r}>")  # a scheme or another host: only ./ and # here
    return found


def structure(page: Page) -> list[str]:
    """The page's shape: its tags in order (what a string may never change)."""
    return [e.tag for e in page.elements]


# --- the timeline, and records made hostile -------------------------------------------------


def scale(page: Page) -> tuple[float, float, float, float]:
    [svg] = page.find("svg")
    return (float(svg.attrs["data-t0"]), float(svg.attrs["data-t1"]), float(svg.attrs["data-x0"]),
            float(svg.attrs["data-plot-width"]))


def drawn(page: Page, task: str, kind: str) -> list[dict[str, str]]:
    return [e.attrs for e in page.elements if e.tag == "rect" and e.attrs.get("data-task") == task
            and e.attrs.get("data-kind") == kind]


def assert_at_the_records_times(page: Page, bars: list[dict[str, str]], spans: list[dict[str, Any]]) -> None:
    """Bar by bar, in order: the span's start and end, and x and width on the chart's scale."""
    t0, t1, x0, width = scale(page)
    assert len(bars) == len(spans), (bars, spans)
    for bar, span in zip(bars, spans, strict=True):
        start, end = parse_iso(span["startedAt"]), parse_iso(span["finishedAt"])
        assert start is not None and end is not None and t0 <= start <= end <= t1
        assert abs(float(bar["data-start"]) - start) < 0.001 and abs(float(bar["data-end"]) - end) < 0.001
        assert abs(float(bar["x"]) - (x0 + (start - t0) / (t1 - t0) * width)) < 0.02, (bar, span)
        assert abs(float(bar["width"]) - (end - start) / (t1 - t0) * width) < 0.02, (bar, span)


HOSTILE = ('<script>alert(1)</script></style><style>body{display:none}</style><img src=x onerror=alert(2)>'
           '"\' onmouseover="alert(3)" <a href="javascript:alert(4)">x</a> javascript:alert(5) ]]> --> '
           '<svg onload=alert(6)><foreignObject><iframe src="javascript:alert(7)"></iframe>' + "W" * 10_000)


def hostile(value: Any, payload: str) -> Any:
    """Every string of ``value`` (keys of its maps too) replaced by ``payload``."""
    if isinstance(value, str):
        return payload
    if isinstance(value, list):
        return [hostile(v, payload) for v in value]
    if isinstance(value, dict):
        out = {k: hostile(v, payload) for k, v in value.items()}
        for name in ("attempts", "stages", "faultMetrics", "settings", "agents"):  # maps keyed by data
            if isinstance(out.get(name), dict):
                out[name][payload] = hostile(next(iter(out[name].values()), 1), payload)
        return out
    return value


def everything_hostile(doc: dict[str, Any], payload: str) -> dict[str, Any]:
    """As ``hostile``, but the times stay times, so the timeline is drawn too."""
    out = hostile(doc, payload)

    def times(mine: Any, theirs: Any) -> None:
        if isinstance(mine, dict):
            for key, value in theirs.items():
                if key in ("startedAt", "finishedAt"):
                    mine[key] = value
                elif key in mine:
                    times(mine[key], value)
        elif isinstance(mine, list):
            for a, b in zip(mine, theirs, strict=False):
                times(a, b)

    times(out, doc)
    return out


# --- a screenshot's pixels ------------------------------------------------------------------


def png_pixels(data: bytes, rows: int | None = None) -> tuple[int, int, list[bytes]]:
    """(width, height, the first ``rows`` rows as RGB bytes) of an 8-bit,
    non-interlaced RGB or RGBA PNG, as chromium writes its screenshots."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks, header = 8, [], b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        at += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    previous = bytearray(stride)
    out = []
    for y in range(min(height, rows or height)):
        line = _unfilter(raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]),
                         previous, channels)
        out.append(bytes(line) if channels == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3))
        previous = line
    return width, height, out


def _unfilter(kind: int, line: bytearray, up: bytearray, bpp: int) -> bytearray:
    if kind == 1:
        for i in range(bpp, len(line)):
            line[i] = (line[i] + line[i - bpp]) & 0xFF
    elif kind == 2:
        line = bytearray((a + b) & 0xFF for a, b in zip(line, up, strict=True))
    elif kind == 3:
        for i in range(len(line)):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + up[i]) >> 1)) & 0xFF
    elif kind == 4:
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b, c = up[i], up[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    return line


# --- the browser ------------------------------------------------------------------------------


def chromium() -> str | None:
    return next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None)


def headless(browser: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Chromium, headless, with a profile and a home of its own, no network of its own making."""
    home = tmp / "browser-home"
    home.mkdir(exist_ok=True)
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
            f"--user-data-dir={tmp / 'browser-profile'}", *args]
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=False)


def dump_dom(browser: str, tmp: Path, page: Path) -> str:
    done = headless(browser, tmp, "--dump-dom", page.resolve().as_uri())
    assert done.returncode == 0 and "<svg" in done.stdout, done.stderr[-2000:]
    return done.stdout


def screenshot(browser: str, tmp: Path, page: Path, size: tuple[int, int] = (1400, 1000)) -> bytes:
    shot = tmp / "shot.png"
    done = headless(browser, tmp, f"--screenshot={shot}", f"--window-size={size[0]},{size[1]}",
                    "--hide-scrollbars", page.resolve().as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    return shot.read_bytes()
