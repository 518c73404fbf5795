"""Text the model reads as data, kept from forging the marks around it (R30, R44).

Recalled records reach the model inside a ``<memory>`` block that says they are
data, never instructions; the pinned list gives one line per record. A record's
own text must not end that block early (``</memory>``) or open another, and a
summary must stay on its one line: otherwise what follows reads as instructions,
or as a second, forged pinned line.

- A summary is one line (the spec): :data:`LINE_BREAK` matches every character
  Python (and so the renderer) splits lines on, which ``add_memory`` refuses in
  a summary.
- Rendering still neutralises what got in before: :func:`one_line` joins a
  summary's lines with spaces, :func:`unmarked` escapes the ``<`` of anything
  spelling the memory marks (``&lt;/memory>``), case and spacing aside.
"""

from __future__ import annotations

import re

# str.splitlines() boundaries: \n \r \v \f \x1c \x1d \x1e \x85 \u2028 \u2029
LINE_BREAK = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_MARK = re.compile(r"<(?=\s*/?\s*memory)", re.IGNORECASE)


def unmarked(text: str) -> str:
    """``text`` unable to open or close a ``<memory>`` block."""
    return _MARK.sub("&lt;", text)


def one_line(text: str) -> str:
    """``text`` on one line: each run of line breaks becomes a space."""
    return re.sub(f"(?:{LINE_BREAK.pattern})+", " ", text)
