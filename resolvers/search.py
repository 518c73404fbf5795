"""The searchMemory and recall mutations (R40-R44).

Both record what they did (an execution of the native ``search_memory`` tool,
RETRIEVED uses, ``embed`` usage), so they are mutations. Each maps its input to
one call of :mod:`server.services.search` inside one transaction, and shows the rows
that call's ranking statement returned (a replayed key reloads its versions).
"""

from __future__ import annotations

import uuid
from typing import Any

import strawberry

from resolvers.context import Info, call_ref, labels_of
from resolvers.idempotent import once_made
from resolvers.types.base import LabelInput
from resolvers.types.memory import MemoryRecordType, MemoryVersionType
from resolvers.types.turns import ExecutionType
from server import models
from server.services import search
from server.services.lookup import get


@strawberry.input
class SearchMemoryInput:
    turn_id: uuid.UUID
    query: str | None = strawberry.field(
        default=None, description="Rank by it (R41); without it, list newest first."
    )
    kind: str | None = strawberry.field(default=None, description="Only records of this kind.")
    labels: list[LabelInput] | None = strawberry.field(
        default=None, description="Only records with every one of these label values."
    )
    ids: list[uuid.UUID] | None = strawberry.field(
        default=None, description="Only these records (read them by id)."
    )
    limit: int | None = strawberry.field(
        default=None, description="How many; default harness.memory.search.max_results."
    )
    after: str | None = strawberry.field(
        default=None, description="Without a query: the nextCursor of the previous page."
    )
    execution_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="The calling execution (a helper or program may search); "
        "default: the turn's own.",
    )
    invocation_id: uuid.UUID | None = strawberry.field(
        default=None, description="The model call that asked for the tool."
    )
    idempotency_key: str | None = None


@strawberry.input
class RecallInput:
    turn_id: uuid.UUID
    query: str = strawberry.field(description="The turn's current work: what to recall for.")
    execution_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="Whose conversation the records are for (the agent's run "
        "of the turn by default, or a helper's).",
    )
    invocation_id: uuid.UUID | None = None
    idempotency_key: str | None = None


@strawberry.type(name="MemorySearchResult", description="A record a search or recall returned.")
class MemorySearchResultType:
    version: MemoryVersionType = strawberry.field(description="The version found (its text).")
    score: float | None = strawberry.field(
        description="The ranking score (cosine, full-text rank or fused, by mode); null when "
        "listed without a query."
    )
    cosine: float | None = strawberry.field(description="Similarity of meaning, -1..1.")
    lexical: float | None = strawberry.field(description="Full-text rank, when words matched.")
    found: strawberry.Private[models.MemoryRecord | None] = None

    @strawberry.field
    async def record(self, info: Info) -> MemoryRecordType:
        row = self.found or await info.context.loaders.record.load(self.version.row.record_id)
        assert row is not None
        return MemoryRecordType(row=row)


@strawberry.type
class SearchMemoryPayload:
    execution: ExecutionType
    results: list[MemorySearchResultType]
    next_cursor: str | None = strawberry.field(
        description="Without a query: pass it as `after` for the next page; null at the end."
    )


@strawberry.type
class RecallPayload:
    kind: str = strawberry.field(description='Always "memory": the records are data.')
    notice: str = strawberry.field(description="Says the records are data, not instructions.")
    text: str = strawberry.field(
        description="The records rendered as one marked block for the model's context; "
        "empty when nothing was found."
    )
    results: list[MemorySearchResultType]
    recorded: bool = strawberry.field(
        description="False when nothing was found or an earlier recall already put exactly "
        "these versions before this conversation."
    )
    execution: ExecutionType | None = strawberry.field(
        description="The search_memory execution recording it (input recall: true)."
    )
    repeat_of: ExecutionType | None = strawberry.field(
        description="The earlier recall that already put these versions before the conversation."
    )


def _hits_json(items: list[search.Found]) -> list[dict[str, Any]]:
    return [
        {"version": str(i.version.id), "score": i.score, "cosine": i.cosine, "lexical": i.lexical}
        for i in items
    ]


def found_results(items: list[search.Found]) -> list[MemorySearchResultType]:
    """The results as this call's ranking statement returned them, rows and all."""
    return [
        MemorySearchResultType(
            version=MemoryVersionType(row=i.version),
            score=i.score,
            cosine=i.cosine,
            lexical=i.lexical,
            found=i.record,
        )
        for i in items
    ]


async def _replayed(info: Info, hits: list[dict[str, Any]]) -> list[MemorySearchResultType]:
    """The results a replayed key stored, their versions reloaded."""
    rows = await info.context.loaders.version.load_many([uuid.UUID(h["version"]) for h in hits])
    return [
        MemorySearchResultType(
            version=MemoryVersionType(row=row),
            score=h["score"],
            cosine=h["cosine"],
            lexical=h["lexical"],
        )
        for h, row in zip(hits, rows, strict=True)
        if row is not None
    ]


async def _results(
    info: Info, made: list[search.Found] | None, hits: list[dict[str, Any]]
) -> list[MemorySearchResultType]:
    return found_results(made) if made is not None else await _replayed(info, hits)


async def _execution(info: Info, value: str | None) -> ExecutionType | None:
    if value is None:
        return None
    return ExecutionType(row=await get(info.context.db, models.Execution, uuid.UUID(value)))


@strawberry.type
class SearchMutation:
    @strawberry.mutation(
        description="The native search_memory tool: rank by a query, or list newest first "
        "(R40, R41); recorded as an execution."
    )
    async def search_memory(self, info: Info, input: SearchMemoryInput) -> SearchMemoryPayload:
        labels = labels_of(input.labels)

        async def run() -> tuple[list[search.Found], dict[str, Any]]:
            found = await search.search_memory(
                info.context.db,
                info.context.embedder,
                ref=call_ref(input),
                query=input.query,
                kind=input.kind,
                labels=labels,
                ids=input.ids,
                limit=input.limit,
                after=input.after,
            )
            return found.items, {
                "execution": str(found.execution.id),
                "hits": _hits_json(found.items),
                "next": found.next_cursor,
            }

        result, made = await once_made(info, "searchMemory", input, run)
        execution = await _execution(info, result["execution"])
        assert execution is not None
        return SearchMemoryPayload(
            execution=execution,
            results=await _results(info, made, result["hits"]),
            next_cursor=result["next"],
        )

    @strawberry.mutation(
        description="Recall before a model call: the records that best match the turn's "
        "current work, marked as memory (R42-R44)."
    )
    async def recall(self, info: Info, input: RecallInput) -> RecallPayload:
        async def run() -> tuple[list[search.Found], dict[str, Any]]:
            found = await search.recall(
                info.context.db, info.context.embedder, ref=call_ref(input), query=input.query
            )
            return found.items, {
                "execution": str(found.execution.id) if found.execution else None,
                "repeat_of": str(found.repeat_of.id) if found.repeat_of else None,
                "hits": _hits_json(found.items),
                "text": found.text,
            }

        result, made = await once_made(info, "recall", input, run)
        return RecallPayload(
            kind=search.RECALL_KIND,
            notice=search.RECALL_NOTICE,
            text=result["text"],
            results=await _results(info, made, result["hits"]),
            recorded=result["execution"] is not None,
            execution=await _execution(info, result["execution"]),
            repeat_of=await _execution(info, result["repeat_of"]),
        )
