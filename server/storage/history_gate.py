"""Which kept history a turn may search (R64), as SQL.

The twin of :func:`server.domain.history.visible_part`: the reader's session's
parts (or events) from turns numbered before the reader's (a replay of turn N
carries N), preview ones only for a preview reader. An agent without sessions
has no history.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, false

from server.domain.history import HistoryReader
from server.models import HistoryPart


def history_condition(reader: HistoryReader, m: Any = HistoryPart) -> ColumnElement[bool]:
    """The SQL twin of :func:`server.domain.history.visible_part` over ``m`` (a part or
    an event: both carry the agent, session, turn number and preview flag)."""
    if reader.session_id is None:
        return false()
    conds = [
        m.agent_id == reader.agent_id,
        m.session_id == reader.session_id,
        m.turn_number < reader.turn_number,
    ]
    if not reader.preview:
        conds.append(m.preview.is_(False))
    return and_(*conds)
