"""Column helpers shared by the table modules."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Column, DateTime, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field

NOW = text("clock_timestamp()")


def id_field() -> Any:
    return Field(default_factory=uuid.uuid4, primary_key=True)


def created_at_field() -> Any:
    return Field(
        default=None,
        sa_column=Column(DateTime(timezone=True), nullable=False, server_default=NOW),
    )


def optional_time_field() -> Any:
    return Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))


def json_field(*, nullable: bool = True) -> Any:
    return Field(default=None, sa_column=Column(JSONB, nullable=nullable))


def fk(
    target: str, *, nullable: bool = False, ondelete: str = "CASCADE", index: bool = True
) -> Any:
    return Field(  # type: ignore[call-overload]
        default=None,
        foreign_key=target,
        nullable=nullable,
        ondelete=ondelete,
        index=index,
    )


__all__ = ["created_at_field", "datetime", "fk", "id_field", "json_field", "optional_time_field"]
