"""Column helpers shared by the table modules."""

from __future__ import annotations

import struct
import uuid
from datetime import datetime
from typing import Any, Literal

import numpy as np
import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector_async
from pgvector.sqlalchemy import VECTOR
from psycopg.adapt import Dumper
from psycopg.pq import Format
from sqlalchemy import CheckConstraint, Column, DateTime, TypeDecorator, func, text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REAL
from sqlmodel import Field

NOW = text("clock_timestamp()")
CHANGED_AT = func.statement_timestamp()
"""The database's time of a change an UPDATE makes: when its statement started, so after
every row an earlier statement wrote. Not ``clock_timestamp()``: Citus refuses a volatile
function in an UPDATE of a distributed table (docs/scaling.md)."""


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


class _BinaryDumper(Dumper):
    """Sends a :class:`_Floats` as it is. The parameter's type is left to PostgreSQL,
    which takes it from the column or operator and reads the binary."""

    format = Format.BINARY

    def dump(self, obj: _Floats) -> bytes:
        return obj.data


class _Floats:
    """A ``real[]`` in PostgreSQL's binary array format (dimensions, no nulls, element
    type, length and lower bound, then each float4 with its size)."""

    __slots__ = ("data",)

    def __init__(self, values: Any) -> None:
        floats = np.asarray(values, dtype=">f4").ravel()
        if floats.shape[0] == 0:
            self.data = struct.pack(">iii", 0, 0, _FLOAT4)
            return
        items = np.empty(floats.shape[0], dtype=[("size", ">i4"), ("value", ">f4")])
        items["size"] = 4
        items["value"] = floats
        self.data = struct.pack(">iiiii", 1, 0, _FLOAT4, floats.shape[0], 1) + items.tobytes()


_FLOAT4 = 700  # PostgreSQL's oid of float4


def register_types(connection: psycopg.AsyncConnection[Any]) -> Any:
    """Teach a new connection the project's binary parameters: pgvector's own adapters
    for ``vector`` (``register_vector_async``) and :class:`_Floats` for ``real[]``."""
    connection.adapters.register_dumper(_Floats, _BinaryDumper)
    return register_vector_async(connection)


class Embedding(VECTOR):
    """pgvector's column type, its values handed to pgvector's psycopg adapter (binary)
    rather than formatted as text (docs/scaling.md, "Figures behind the code")."""

    cache_ok = True

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: Any) -> Vector | None:
            return None if value is None else Vector(value)

        return process


class Floats(TypeDecorator[Any]):
    """``real[]`` (with its operators: slices), its values (any sequence or array of
    floats, flattened) sent in binary: many vectors travel as one parameter."""

    impl = ARRAY(REAL)
    cache_ok = True

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: Any) -> _Floats | None:
            return None if value is None else _Floats(value)

        return process


def one_of(column: str, values: tuple[str, ...], *, name: str) -> CheckConstraint:
    """The check that a text column holds one of ``values``."""
    return CheckConstraint(f"{column} IN ({', '.join(repr(v) for v in values)})", name=name)


# what a foreign key does when the row it names is deleted
OnDelete = Literal["CASCADE", "SET NULL", "RESTRICT"]


def fk(
    target: str, *, nullable: bool = False, ondelete: OnDelete = "CASCADE", index: bool = True
) -> Any:
    return Field(
        default=None,
        foreign_key=target,
        nullable=nullable,
        ondelete=ondelete,
        index=index,
    )


__all__ = [
    "Embedding",
    "Floats",
    "created_at_field",
    "datetime",
    "fk",
    "id_field",
    "json_field",
    "one_of",
    "optional_time_field",
]
