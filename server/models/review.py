"""Turn-end memory reviews (R8, R50): one row per review, which is also the watermark.

A review covers the conversation of its place (a session, or the agent of an agent
without sessions) from the turn after the watermark through its own turn
(``through_number``). The watermark of a place is the ``through_number`` of the last
review that was applied in a turn that committed: it is read, never stored apart, so a
turn that rolls back or fails moves nothing without anything to undo.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Index
from sqlmodel import SQLModel

from server.models._columns import created_at_field, fk, id_field, one_of, optional_time_field

REVIEW_STATUSES = ("open", "applied")


class MemoryReview(SQLModel, table=True):
    __tablename__ = "memory_reviews"
    __table_args__ = (
        one_of("status", ("open", "applied"), name="review_status"),
        Index("ix_memory_reviews_place", "agent_id", "session_id", "through_number"),
        Index("ix_memory_reviews_turn", "turn_id", unique=True),
    )

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id", index=False)
    session_id: uuid.UUID | None = fk("sessions.id", nullable=True, index=False)
    turn_id: uuid.UUID = fk("turns.id", index=False)
    execution_id: uuid.UUID = fk("executions.id")
    after_number: int  # the watermark it started from: turns after it are reviewed
    through_number: int  # the turn it reviews through (its own turn's number)
    messages: int  # messages in the reviewed conversation
    preview: bool = False
    replay: bool = False
    status: str = "open"
    created_at: datetime = created_at_field()
    applied_at: datetime | None = optional_time_field()
