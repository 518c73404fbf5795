"""What a reader reaches of each kind's BM25 postings (migration 0011), for
:mod:`server.storage.bm25`: the same decisions as the visibility gates, over the
postings' own columns.

Memory (R10-R14): a posting carries its version's ``search_scope`` and, for
``'SESSION'``, its session. A turn reader's ranges are
:func:`server.storage.gate.settled_reaches` over those columns (with R13's check of
preview records for a preview turn); the few unsettled postings go through
:func:`server.storage.gate.unsettled_version`, the full gate. Its statistics are the
rows of the scopes it reads. An API reader (every session) has no range: its search
reads its matches (:func:`server.storage.bm25.score` still scores them), and its
statistics are the agent's every settled row.

History (R64): a part's postings carry its session, turn number and preview flag,
and :func:`server.storage.history_gate.history_condition` decides on them; the
session's postings are one range. Its statistics: the session's live parts, and its
preview parts for a preview turn.
"""

from __future__ import annotations

from types import SimpleNamespace

from sqlalchemy import ColumnElement, and_, false, or_

from server.domain.history import HistoryReader
from server.domain.visibility import Reader
from server.models import HISTORY_POSTINGS, HISTORY_TERM_STATS, MEMORY_POSTINGS, MEMORY_TERM_STATS
from server.storage.bm25 import Postings
from server.storage.gate import not_named_by_preview, settled_reaches, unsettled_version
from server.storage.history_gate import history_condition


def memory_postings(reader: Reader) -> Postings:
    """What ``reader`` reaches of the memory versions' postings (R10-R14)."""
    p = MEMORY_POSTINGS.c
    mine = p.agent_id == reader.agent_id
    ranges: list[ColumnElement[bool]] = []
    if not reader.api:
        named = not_named_by_preview(reader, p.record_id)
        for reach in settled_reaches(reader, p):
            ranges.append(and_(mine, reach) if named is None else and_(mine, reach, named))
    # the gate asks the version's key as ``id``
    version = SimpleNamespace(search_scope=p.search_scope, record_id=p.record_id, id=p.version_id)
    s = MEMORY_TERM_STATS.c
    if reader.api:
        counted: ColumnElement[bool] = s.agent_id == reader.agent_id
    else:
        reaches = settled_reaches(reader, s)
        counted = and_(s.agent_id == reader.agent_id, or_(*reaches) if reaches else false())
    return Postings(
        table=MEMORY_POSTINGS,
        key="version_id",
        agent=reader.agent_id,
        ranges=tuple(ranges),
        few=None if reader.api else and_(mine, unsettled_version(reader, version)),
        stats=MEMORY_TERM_STATS,
        stats_where=counted,
    )


def history_postings(reader: HistoryReader) -> Postings:
    """What ``reader`` reaches of the history parts' postings (R64)."""
    s = HISTORY_TERM_STATS.c
    if reader.session_id is None:
        counted: ColumnElement[bool] = false()
    else:
        counted = and_(s.agent_id == reader.agent_id, s.session_id == reader.session_id)
        if not reader.preview:
            counted = and_(counted, s.preview.is_(False))
    return Postings(
        table=HISTORY_POSTINGS,
        key="part_id",
        agent=reader.agent_id,
        ranges=(history_condition(reader, HISTORY_POSTINGS.c),),
        few=None,
        stats=HISTORY_TERM_STATS,
        stats_where=counted,
    )


__all__ = ["history_postings", "memory_postings"]
