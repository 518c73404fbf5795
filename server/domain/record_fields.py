"""A memory record's own fields, whatever the agent's configuration: the summary is one
line (R30: it is listed as one line) and the content and label values have a
maximum length (R24)."""

from __future__ import annotations

from server.domain.marking import LINE_BREAK
from server.errors import BadInputError

# a record's fields (add_memory, and the filters of search_memory)
MAX_SUMMARY = 500
MAX_CONTENT = 20_000
MAX_LABEL_VALUE = 200


def check_summary(summary: str) -> str:
    """A record's summary, stripped: one non-empty line of at most ``MAX_SUMMARY``
    characters (R30: it is listed as one line); else BAD_INPUT."""
    text = summary.strip()
    if not text or LINE_BREAK.search(text) or len(text) > MAX_SUMMARY:
        raise BadInputError(
            f"summary must be one non-empty line of at most {MAX_SUMMARY} characters",
            field="summary",
        )
    return text


def check_content(content: str | None) -> str | None:
    """A record's content: at most ``MAX_CONTENT`` characters; else BAD_INPUT."""
    if content is not None and len(content) > MAX_CONTENT:
        raise BadInputError(f"content is over {MAX_CONTENT} characters", field="content")
    return content
