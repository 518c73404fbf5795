"""An agent's memory at a moment, as SQL: :mod:`server.domain.as_of` in one condition.

:func:`version_at` is the id of a record's newest version in force by ``:at`` (its
turn committed by then, or its deletion through the API made by then); a listing joins
versions on it, so a record that did not exist yet has no row. :func:`standing_condition`
is the visibility gate (:mod:`server.storage.gate`) for a reader at that moment: the
records of its agent (R10), committed (R12), in the reader's reach (R11, and the live
half of R13) and, for a preview reader, not named by a preview record that existed then
(R13).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, exists, literal, not_, or_, select
from sqlalchemy.orm import aliased
from sqlmodel import col

from server.domain.visibility import Reader
from server.models import MemoryDeletion, MemoryRecord, MemoryVersion, Turn
from server.storage.built import built_once
from server.storage.gate import in_reach


@built_once
def _standing_version() -> Any:
    """The alias of "a version of this record", made once so that statements keep one
    text (and one cache key)."""
    return aliased(MemoryVersion, name="standing_version")


@built_once
def _naming_record() -> Any:
    return aliased(MemoryRecord, name="naming_record_then")


def in_force_by(v: Any, at: Any, agent: Any) -> ColumnElement[bool]:
    """The version (of ``agent``) came into force by ``at``: its turn committed, or its
    deletion through the API was made, by then. Every table named with the agent: on
    Citus, its shard alone."""
    by_turn = exists(
        select(literal(1)).where(
            col(Turn.id) == v.turn_id,
            col(Turn.agent_id) == agent,
            col(Turn.status) == "committed",
            col(Turn.ended_at) <= at,
        )
    )
    by_deletion = exists(
        select(literal(1)).where(
            col(MemoryDeletion.id) == v.deletion_id,
            col(MemoryDeletion.agent_id) == agent,
            col(MemoryDeletion.created_at) <= at,
        )
    )
    return or_(by_turn, by_deletion)


def version_at(at: Any, agent: Any, r: Any = MemoryRecord) -> Any:
    """The id of ``r``'s (a record of ``agent``) newest version in force by ``at``; NULL
    before it existed."""
    v = _standing_version()
    return (
        select(v.id)
        .where(v.record_id == r.id, v.agent_id == agent, in_force_by(v, at, agent))
        .order_by(v.number.desc())
        .limit(1)
        .scalar_subquery()
    )


def standing_condition(reader: Reader, at: Any, r: Any = MemoryRecord) -> ColumnElement[bool]:
    """The records of ``r`` the reader could see at ``at`` (in any status)."""
    conds: list[ColumnElement[bool]] = [r.agent_id == reader.agent_id, r.committed.is_(True)]
    if not reader.api:
        conds.append(in_reach(reader, r))
        if reader.preview:
            p = _naming_record()
            conds.append(
                not_(
                    exists(
                        select(p.id).where(
                            p.replaces_id == r.id,
                            p.preview.is_(True),
                            p.agent_id == reader.agent_id,
                            version_at(at, reader.agent_id, p).is_not(None),
                        )
                    )
                )
            )
    return and_(*conds)
