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

from sqlalchemy import Float, and_, bindparam, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import review as rules
from server.domain.visibility import Purpose, Reader
from server.embedding import Embedder
from server.errors import BadInputError, DomainError
from server.models import Execution, MemoryRecord, MemoryVersion, table
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

    def restated_by(self, text: str) -> bool:
        """Whether a candidate of ``text`` restates this record (R50)."""
        record = embedded_text(self.version.summary, self.version.content)
        return rules.restates(self.similarity, text, record)


async def vectors(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    """The texts' vectors, in one request."""
    if not texts:
        return []
    return list((await embedder.embed(texts)).vectors)


async def similar(
    db: AsyncSession, reader: Reader, vector: Sequence[float], k: int
) -> list[Similar]:
    """The ``k`` records most like ``vector`` that ``reader`` may change: active, visible,
    within its write scopes, ranked exactly by cosine (newer first on ties)."""
    q = bindparam("q", list(vector), type_=table(MemoryVersion).c.embedding.type)
    distance = col(MemoryVersion.embedding).op("<=>", return_type=Float)(q)
    rows: Sequence[Any] = (
        await db.execute(
            select(MemoryRecord, MemoryVersion, (literal_column("1") - distance).label("sim"))
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
            # "+ 0" keeps the vector index out: the agent's records are ranked exactly
            .order_by(distance + 0, col(MemoryRecord.seq).desc())
            .limit(k)
        )
    ).all()
    return [Similar(record, version, float(sim)) for record, version, sim in rows]


def naming(prefix: str, exc: DomainError) -> DomainError:
    """``exc`` with its message opened by ``prefix``: which candidate or decision."""
    exc.message = f"{prefix}: {exc.message}"
    exc.args = (exc.message,)
    return exc


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
    outcomes: list[dict[str, Any]] = []
    items: list[MemoryItem] = []
    for candidate, action, record_id in decisions:
        i = candidate.index
        outcome: dict[str, Any] = {
            "candidate": i,
            "summary": candidate.fields.summary,
            "action": action,
            "applied": action,
            "record": None if record_id is None else str(record_id),
            "restates": None,
            "similarity": None,
            "memories": [],
        }
        try:
            written = await _apply(db, scope, execution, ref, candidate, action, record_id, found)
        except DomainError as exc:
            raise naming(f"decision {i}", exc) from None
        if isinstance(written, Similar):
            outcome.update(
                applied="SKIP", restates=str(written.record.id), similarity=written.similarity
            )
            written = []
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
) -> list[MemoryItem] | Similar:
    async def vector() -> list[float]:
        return found[candidate.index]

    if action == "SKIP":
        return []
    if action == "DELETE":
        assert record_id is not None
        return [await delete_record(db, scope, execution, ref, record_id)]
    if action == "ADD":
        near = await similar(db, scope.reader, found[candidate.index], rules.DEFAULT_SIMILAR)
        restated = next((s for s in near if s.restated_by(candidate.fields.text)), None)
        if restated is not None:
            return restated
    return await write_record(
        db, scope, execution, ref, candidate.fields, vector=vector, replaces=record_id
    )
