"""The visibility gate as SQL: :mod:`server.domain.visibility` turned into one condition.

Every memory query of an agent or an API reader filters through
:func:`record_condition`; nothing else filters by agent, session or preview.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, case, exists, false, func, not_, or_, select, true
from sqlalchemy.orm import aliased

from server.domain.visibility import Purpose, Reader
from server.models import MemoryRecord


def effective_status(reader: Reader, r: Any = MemoryRecord) -> ColumnElement[str]:
    staged_by_other = r.pending_turn_id.is_not(None)
    if reader.turn_id is not None:
        staged_by_other = and_(staged_by_other, r.pending_turn_id != reader.turn_id)
    return case((staged_by_other, func.coalesce(r.prior_status, r.status)), else_=r.status)


def _base(reader: Reader, r: Any) -> ColumnElement[bool]:
    conds: list[ColumnElement[bool]] = [r.agent_id == reader.agent_id]
    if reader.api or reader.turn_id is None:
        conds.append(r.committed.is_(True))
        if reader.api:
            return and_(*conds)
    else:
        conds.append(or_(r.committed.is_(True), r.turn_id == reader.turn_id))
    if not reader.preview:
        conds.append(r.preview.is_(False))
    scopes: list[ColumnElement[bool]] = []
    if "agent" in reader.read_scopes:
        scopes.append(r.scope == "AGENT")
    if "session" in reader.read_scopes and reader.session_id is not None:
        scopes.append(and_(r.scope == "SESSION", r.session_id == reader.session_id))
    conds.append(or_(*scopes) if scopes else false())
    return and_(*conds)


def record_condition(
    reader: Reader, *, purpose: Purpose, r: Any = MemoryRecord
) -> ColumnElement[bool]:
    """The SQL twin of ``visible_records``: true for the rows of ``r`` the reader may see."""
    conds = [_base(reader, r)]
    if reader.preview and not reader.api:
        p = aliased(MemoryRecord)
        conds.append(
            not_(
                exists(
                    select(p.id).where(
                        p.replaces_id == r.id, p.preview.is_(True), _base(reader, p)
                    )
                )
            )
        )
    if purpose is Purpose.SEARCH:
        conds.append(effective_status(reader, r) == "ACTIVE")
    if purpose is Purpose.CHANGE and not reader.api:
        writable = [
            r.scope == scope.upper() for scope in sorted(reader.write_scopes)
        ]
        conds.append(or_(*writable) if writable else false())
    return and_(*conds) if conds else true()
