"""The one escape of the page: every string that reaches the HTML, from a
roadmap, a plan, a report, a review finding or an agent's stream, goes
through ``esc`` (text and attribute values alike), so none of it can open a
tag, close the style sheet, or start a script. Links are built only from
the run's own file names (``relative_link``), never from the record's text.
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote

# C0 controls but tab and newline, and DEL: invalid in a page, shown as the replacement character
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def esc(value: object) -> str:
    """``value`` as text for the page: ``& < > " '`` escaped, controls replaced."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return html.escape(_CONTROL.sub("\ufffd", text), quote=True)


def relative_link(path: str) -> str:
    """An ``href`` for a relative file path: every character but ``/`` that
    could mean something in a URL percent-encoded (a ``:`` included, so no
    name can become a scheme such as ``javascript:``), and ``./`` first."""
    encoded = quote(path, safe="/")
    return esc(encoded if encoded.startswith("../") else "./" + encoded)


def fragment(name: str) -> str:
    """An ``id`` for an element, and the ``#…`` that links to it."""
    return esc(quote(name, safe=""))
