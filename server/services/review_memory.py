"""What a memory review reads and writes of memory (R50): the records most like a
candidate, and its decisions applied as add_memory and delete_memory write them
(:func:`server.services.memory_write.write_record`,
:func:`~server.services.memory_write.delete_record`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Float, and_, bindparam, cast, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import Grouping
from sqlmodel import col

from server.domain import review as rules
from server.domain.visibility import Purpose, Reader
from server.embedding import Embedder
from server.errors import BadInputError, DomainError
from server.models import Execution, MemoryRecord, MemoryVersion, table
from server.models._columns import Floats
from server.models.memory import EMBEDDING_DIM
from server.services.memory_versions import MemoryItem
from server.services.memory_write import (
    NewRecord,
    check_new_record,
    delete_record,
    embedded_text,
    write_record,
)
from server.services.tools import CallRef
from server.services.turn_scope import TurnScope
from server.storage.gate import effective_status, record_condition, version_in_force


@dataclass(frozen=True, slots=True)
class Candidate:
    """A candidate fact, checked as add_memory checks a record (R3, R4, R20, R24)."""

    index: int
    fields: NewRecord

    @classmethod
    def check(cls, scope: TurnScope, index: int, raw: dict[str, Any]) -> Candidate:
        summary = raw.get("summary")
        if not isinstance(summary, str):
            raise BadInputError("a candidate needs a summary", field="summary")
        fields = check_new_record(
            scope,
            summary=summary,
            content=raw.get("content"),
            kind=raw.get("kind"),
            labels=raw.get("labels"),
            scope=raw.get("scope"),
        )
        return cls(index, fields)


@dataclass(frozen=True, slots=True)
class Similar:
    record: MemoryRecord
    version: MemoryVersion
    similarity: float
    distance: float = 0.0  # the cosine distance the ranking ordered by

    def restated_by(self, text: str) -> bool:
        """Whether a candidate of ``text`` restates this record (R50)."""
        record = embedded_text(self.version.summary, self.version.content)
        return rules.restates(self.similarity, text, record)


async def vectors(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    """The texts' vectors, in one request."""
    if not texts:
        return []
    return list((await embedder.embed(texts)).vectors)


async def similar_each(
    db: AsyncSession, reader: Reader, vectors: Sequence[Sequence[float]], k: int
) -> list[list[Similar]]:
    """For each vector, the ``k`` records most like it that ``reader`` may change:
    active, visible, within its write scopes, ranked exactly by cosine (newer first on
    ties). One statement, whatever the number of vectors."""
    if not vectors:
        return []
    rows = (await db.execute(_similar(reader, len(vectors), k), {"vectors": vectors})).all()
    out: list[list[Similar]] = [[] for _ in vectors]
    for n, record, version, distance in rows:
        out[n - 1].append(Similar(record, version, 1 - float(distance), float(distance)))
    return out


def _queries(count: int) -> Any:
    """The vectors of parameter ``vectors`` (``count`` runs of ``EMBEDDING_DIM`` floats, in
    binary), numbered from 1: rows ``(n, q)``."""
    vectors = Grouping(bindparam("vectors", type_=Floats()))
    n = func.generate_series(1, count).table_valued("n").render_derived(name="queries")
    q = cast(
        vectors[(n.c.n - 1) * EMBEDDING_DIM + 1 : n.c.n * EMBEDDING_DIM],
        table(MemoryVersion).c.embedding.type,
    )
    return select(n.c.n.label("n"), q.label("q")).subquery("c")


def _similar(reader: Reader, count: int, k: int) -> Any:
    """:func:`similar_each`'s statement: the records ``reader`` may change, found once
    (the gate evaluated once, not once per candidate), then for each query vector a
    lateral ranking of them by cosine distance, exactly (newer first on ties)."""
    queries = _queries(count)
    changeable = (
        select(
            col(MemoryRecord.id).label("record_id"),
            col(MemoryVersion.id).label("version_id"),
            col(MemoryRecord.seq).label("seq"),
            col(MemoryVersion.embedding).label("embedding"),
        )
        .select_from(MemoryRecord)
        .join(
            MemoryVersion,
            and_(
                col(MemoryVersion.id) == version_in_force(reader),
                col(MemoryVersion.agent_id) == col(MemoryRecord.agent_id),
            ),
        )
        .where(
            record_condition(reader, purpose=Purpose.CHANGE),
            effective_status(reader) == "ACTIVE",
        )
        .cte("changeable")
        .prefix_with("MATERIALIZED")
    )
    distance = changeable.c.embedding.op("<=>", return_type=Float)(queries.c.q)
    top = (
        select(
            changeable.c.record_id,
            changeable.c.version_id,
            distance.label("distance"),
            changeable.c.seq,
        )
        .order_by(distance, changeable.c.seq.desc())
        .limit(k)
        .correlate(queries)
        .lateral("top")
    )
    record, version = aliased(MemoryRecord), aliased(MemoryVersion)
    agent: Any = bindparam("agent", reader.agent_id)  # on Citus: every table on one shard
    return (
        select(queries.c.n, record, version, top.c.distance)
        .select_from(queries)
        .join(top, true())
        .join(record, and_(col(record.id) == top.c.record_id, col(record.agent_id) == agent))
        .join(version, and_(col(version.id) == top.c.version_id, col(version.agent_id) == agent))
        .order_by(queries.c.n, top.c.distance, top.c.seq.desc())
    )


async def distances_between(
    db: AsyncSession, vectors: Sequence[Sequence[float]]
) -> dict[tuple[int, int], float]:
    """The cosine distance of each pair of the vectors (by their positions), as the
    database computes it between a stored vector and a query: the same figures
    :func:`similar_each` would give a record written with one of them."""
    if len(vectors) < 2:
        return {}
    a, b = _queries(len(vectors)), _queries(len(vectors)).alias("d")
    distance = a.c.q.op("<=>", return_type=Float)(b.c.q)
    rows = await db.execute(
        select(a.c.n, b.c.n, distance).select_from(a).join(b, a.c.n != b.c.n),
        {"vectors": vectors},
    )
    return {(i - 1, j - 1): float(d) for i, j, d in rows}


def naming(prefix: str, exc: DomainError) -> DomainError:
    """``exc`` with its message opened by ``prefix``: which candidate or decision."""
    exc.message = f"{prefix}: {exc.message}"
    exc.args = (exc.message,)
    return exc


@dataclass
class _Nearby:
    """The records like each ADD candidate, read in one statement before any decision is
    applied, kept current as the decisions write: what ``similar_each`` would answer at
    each ADD, without a statement per ADD. The records a decision changed (replaced or
    deleted) drop out; the records a decision wrote come in, at the distance the database
    computes between their vectors (:func:`distances_between`), newest first on ties, as
    their sequence numbers order them after every earlier record."""

    existing: dict[int, list[Similar]]
    between: dict[tuple[int, int], float]
    written: list[tuple[int, MemoryItem]]
    changed: set[uuid.UUID]

    @classmethod
    async def read(
        cls,
        db: AsyncSession,
        reader: Reader,
        decisions: Sequence[tuple[Candidate, rules.Action, uuid.UUID | None]],
        found: dict[int, list[float]],
    ) -> _Nearby:
        adds = [c.index for c, action, _ in decisions if action == "ADD"]
        changes = sum(action in ("REPLACE", "DELETE") for _, action, _ in decisions)
        # each change can push one record out of a candidate's first DEFAULT_SIMILAR
        near = await similar_each(
            db, reader, [found[i] for i in adds], rules.DEFAULT_SIMILAR + changes
        )
        order = list(found)
        apart = await distances_between(db, [found[i] for i in order]) if adds else {}
        between = {(order[a], order[b]): d for (a, b), d in apart.items()}
        return cls(dict(zip(adds, near, strict=True)), between, [], set())

    def near(self, index: int) -> list[Similar]:
        """The records most like candidate ``index`` now, best first."""
        ranked: list[tuple[float, int, int, Similar]] = [
            (s.distance, 1, -(s.record.seq or 0), s)
            for s in self.existing[index]
            if s.record.id not in self.changed
        ]
        for written, (other, item) in enumerate(self.written):
            if item.record.id in self.changed:
                continue
            d = self.between[(index, other)]
            ranked.append((d, 0, -written, Similar(item.record, item.version, 1 - d, d)))
        ranked.sort(key=lambda r: r[:3])
        return [r[3] for r in ranked[: rules.DEFAULT_SIMILAR]]


async def apply_decisions(
    db: AsyncSession,
    embedder: Embedder,
    scope: TurnScope,
    execution: Execution,
    invocation_id: uuid.UUID,
    decisions: Sequence[tuple[Candidate, rules.Action, uuid.UUID | None]],
) -> tuple[list[dict[str, Any]], list[MemoryItem]]:
    """Write what the decisions say, in order; the first that cannot be applied is raised,
    naming it (the caller's transaction then changes nothing). An ADD that restates a
    record it may change, one written by an earlier decision included, is a SKIP."""
    ref = CallRef(turn_id=scope.turn.id, invocation_id=invocation_id)
    writes = [c for c, action, _ in decisions if action in ("ADD", "REPLACE")]
    found = dict(
        zip(
            (c.index for c in writes),
            await vectors(embedder, [c.fields.text for c in writes]),
            strict=True,
        )
    )
    nearby = await _Nearby.read(db, scope.reader, decisions, found)
    outcomes: list[dict[str, Any]] = []
    items: list[MemoryItem] = []
    for candidate, action, record_id in decisions:
        i = candidate.index
        outcome: dict[str, Any] = {
            "candidate": i,
            "summary": candidate.fields.summary,
            "action": action,
            "applied": action,
            "recordId": None if record_id is None else str(record_id),
            "restates": None,
            "similarity": None,
            "memories": [],
        }
        try:
            written = await _apply(
                db, scope, execution, ref, candidate, action, record_id, found, nearby
            )
        except DomainError as exc:
            raise naming(f"decision {i}", exc) from None
        if isinstance(written, Similar):
            outcome.update(
                applied="SKIP", restates=str(written.record.id), similarity=written.similarity
            )
            written = []
        if record_id is not None:
            nearby.changed.add(record_id)
        if action in ("ADD", "REPLACE") and written:
            nearby.written.append((i, written[0]))
        outcome["memories"] = [str(item.version.id) for item in written]
        items.extend(written)
        outcomes.append(outcome)
    return outcomes, items


async def _apply(
    db: AsyncSession,
    scope: TurnScope,
    execution: Execution,
    ref: CallRef,
    candidate: Candidate,
    action: rules.Action,
    record_id: uuid.UUID | None,
    found: dict[int, list[float]],
    nearby: _Nearby,
) -> list[MemoryItem] | Similar:
    async def vector() -> list[float]:
        return found[candidate.index]

    if action == "SKIP":
        return []
    if action == "DELETE":
        assert record_id is not None
        return [await delete_record(db, scope, execution, ref, record_id)]
    if action == "ADD":
        restated = next(
            (s for s in nearby.near(candidate.index) if s.restated_by(candidate.fields.text)),
            None,
        )
        if restated is not None:
            return restated
    return await write_record(
        db, scope, execution, ref, candidate.fields, vector=vector, replaces=record_id
    )
