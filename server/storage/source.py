"""What a search ranks (R41, R62): a searchable table, the columns a ranking reads, and
the filter of the rows it may find.

A searchable table has a ``uuid`` key, an ``embedding vector(384)`` (under an HNSW
index for memory versions), the embedding's signs ``embedding_bits bit(384)`` in an
index with the columns the filter reads (migration 0012), a ``search_tsv`` under a
GIN index and a ``created_at``; its BM25 postings are kept beside it (migration
0011, :mod:`server.storage.bm25`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, Table, and_

from server.models import HistoryPart, MemoryVersion, table
from server.storage import bm25


@dataclass(frozen=True, slots=True)
class SearchSource:
    """What to rank: a table, the searchable columns of its rows, and a filter.

    ``bits`` (optional) is the column of the embedding's signs, in an index with the
    columns ``where`` reads. ``probe`` (optional) selects a superset of the rows
    ``where`` admits, cheaply (on an index); with it the table's HNSW index may be
    chosen (:func:`server.storage.nearest.bits_below`). ``keywords``: the reader's view
    of the rows' BM25 postings (a keyword search needs it); ``bounded``: its ranges admit
    exactly the rows ``where`` admits, so the keyword candidates come from the postings
    (:func:`server.storage.bm25.bounded`) rather than from every full-text match under
    ``where``. ``owner`` (optional): the condition that names the rows' agent (the
    reader's); a statement that reads rows again by key adds it, so that on Citus every
    table it reads names the agent and it runs on that agent's shard alone
    (docs/scaling.md).
    """

    from_: Table
    key: ColumnElement[Any]
    embedding: ColumnElement[Any]
    tsv: ColumnElement[Any]
    created_at: ColumnElement[datetime]
    where: ColumnElement[bool]
    bits: ColumnElement[Any] | None = None
    probe: Select[Any] | None = None
    keywords: bm25.Postings | None = None
    bounded: bool = False
    owner: ColumnElement[bool] | None = None

    def by_key(self, key: ColumnElement[Any]) -> ColumnElement[bool]:
        """The join condition of this source's row of ``key``, with :attr:`owner`."""
        on = self.key == key
        return on if self.owner is None else and_(on, self.owner)

    @classmethod
    def of(
        cls,
        model: type[MemoryVersion] | type[HistoryPart],
        *,
        where: ColumnElement[bool],
        probe: Select[Any] | None = None,
        keywords: bm25.Postings | None = None,
        bounded: bool = False,
        agent: Any = None,
    ) -> SearchSource:
        """The rows of a searchable model's table: its ``id``, ``embedding``,
        ``embedding_bits``, ``search_tsv`` and ``created_at`` columns; ``agent``: the
        reader's agent (:attr:`owner`)."""
        rows = table(model)
        return cls(
            from_=rows,
            key=rows.c.id,
            embedding=rows.c.embedding,
            tsv=rows.c.search_tsv,
            created_at=rows.c.created_at,
            where=where,
            bits=rows.c.embedding_bits,
            probe=probe,
            keywords=keywords,
            bounded=bounded,
            owner=None if agent is None else rows.c.agent_id == agent,
        )


__all__ = ["SearchSource"]
