"""The searchMemory and recall mutations (R40-R44).

Both record what they did (an execution of the native ``search_memory`` tool,
RETRIEVED uses, ``embed`` usage), so they are mutations. Each maps its input to
one call of :mod:`server.memory_search` inside one transaction, and shows the rows
that call's ranking statement returned, with its execution as written (a replayed key
reloads them).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import strawberry

from resolvers.context import Info, call_ref, labels_of
from resolvers.idempotent import once_shown, request_of
from resolvers.types.base import EXECUTION_ID, INVOCATION_ID, TURN_ID, LabelInput, idempotency_key
from resolvers.types.memory import MemoryRecordType, MemoryVersionType
from resolvers.types.ranking import ScoreExplanationType
from resolvers.types.turns import ExecutionType
from server import models
from server.memory_search import recall as memory_recall
from server.memory_search import tool as search
from server.models.rows import RecordRow
from server.services.lookup import get


@strawberry.input(description="The search_memory tool's arguments.")
class SearchMemoryInput:
    turn_id: uuid.UUID = strawberry.field(description=TURN_ID)
    query: str | None = strawberry.field(
        # R41
        default=None,
        description="The text to rank records by, 1 to 2000 characters; null or omitted: "
        "list records newest first.",
    )
    kind: str | None = strawberry.field(default=None, description="Only records of this kind.")
    labels: list[LabelInput] | None = strawberry.field(
        default=None, description="Only records with every one of these label values."
    )
    ids: list[uuid.UUID] | None = strawberry.field(
        default=None, description="Only these records (read them by id)."
    )
    limit: int | None = strawberry.field(
        default=None,
        description="How many results, 1 to 100; null or omitted: "
        "harness.memory.search.max_results (5 unless configured).",
    )
    after: str | None = strawberry.field(
        default=None, description="Without a query: the nextCursor of the previous page."
    )
    execution_id: uuid.UUID | None = strawberry.field(default=None, description=EXECUTION_ID)
    invocation_id: uuid.UUID | None = strawberry.field(default=None, description=INVOCATION_ID)
    idempotency_key: str | None = idempotency_key()


@strawberry.input(description="What to recall records for.")
class RecallInput:
    turn_id: uuid.UUID = strawberry.field(description=TURN_ID)
    query: str = strawberry.field(
        description="The turn's current work: what to recall for, 1 to 2000 characters."
    )
    execution_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="Whose conversation the records are for: a helper's execution; null or "
        "omitted: the agent's own run of the turn.",
    )
    invocation_id: uuid.UUID | None = strawberry.field(
        default=None, description="The model call the recall is for, if recorded; null: none."
    )
    idempotency_key: str | None = idempotency_key()


@strawberry.type(name="MemorySearchResult", description="A record a search or recall returned.")
class MemorySearchResultType:
    version: MemoryVersionType = strawberry.field(description="The version found (its text).")
    score: float | None = strawberry.field(
        description="The ranking score (cosine, BM25 keyword score or fused, by mode); null when "
        "listed without a query."
    )
    cosine: float | None = strawberry.field(description="Similarity of meaning, -1..1.")
    lexical: float | None = strawberry.field(description="BM25 keyword score, when words matched.")
    found: strawberry.Private[models.MemoryRecord | RecordRow | None] = None
    explained: strawberry.Private[Callable[[], Awaitable[ScoreExplanationType]] | None] = None

    @strawberry.field(
        description="Why it ranked where it did: the terms of its score. Given for "
        "searchAgentMemory's results; null for searchMemory and recall."
    )
    async def explanation(self) -> ScoreExplanationType | None:
        return None if self.explained is None else await self.explained()

    @strawberry.field(description="The record the version belongs to.")
    async def record(self, info: Info) -> MemoryRecordType:
        row = self.found or await info.context.loaders.record.load(self.version.row.record_id)
        assert row is not None
        return MemoryRecordType(row=row)


@strawberry.type(description="What search_memory found.")
class SearchMemoryPayload:
    execution: ExecutionType = strawberry.field(
        description="The tool call's execution, with its input and output."
    )
    results: list[MemorySearchResultType] = strawberry.field(
        description="The records found, best first (newest first without a query)."
    )
    next_cursor: str | None = strawberry.field(
        description="Without a query: pass it as `after` for the next page; null at the end."
    )


@strawberry.type(description="What a recall found, ready for the model's context.")
class RecallPayload:
    kind: str = strawberry.field(description='Always "memory": the records are data.')
    notice: str = strawberry.field(description="Says the records are data, not instructions.")
    text: str = strawberry.field(
        description="The records rendered as one marked block for the model's context; "
        "empty when nothing was found."
    )
    results: list[MemorySearchResultType] = strawberry.field(
        description="The records found, best first."
    )
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


# what a search or recall shows: its results, its execution, the recall it repeats
_Shown = tuple[list[MemorySearchResultType], ExecutionType | None, ExecutionType | None]


async def _replayed(info: Info, result: dict[str, Any]) -> _Shown:
    """What a replayed key stored, its versions and executions reloaded."""
    hits = result["hits"]
    rows = await info.context.loaders.version.load_many([uuid.UUID(h["version"]) for h in hits])
    results = [
        MemorySearchResultType(
            version=MemoryVersionType(row=row),
            score=h["score"],
            cosine=h["cosine"],
            lexical=h["lexical"],
        )
        for h, row in zip(hits, rows, strict=True)
        if row is not None
    ]
    return (
        results,
        await _execution(info, result["execution"]),
        await _execution(info, result.get("repeat_of")),
    )


async def _execution(info: Info, value: str | None) -> ExecutionType | None:
    if value is None:
        return None
    return ExecutionType(row=await get(info.context.db, models.Execution, uuid.UUID(value)))


@strawberry.type
class SearchMutation:
    @strawberry.mutation(
        # R40, R41
        description="The native search_memory tool: rank the agent's memory by a query "
        "(by meaning, words and recency, as harness.memory.search configures), or list it "
        "newest first; recorded as an execution whose output lists the records returned."
    )
    async def search_memory(
        self,
        info: Info,
        input: Annotated[
            SearchMemoryInput, strawberry.argument(description="The tool's arguments.")
        ],
    ) -> SearchMemoryPayload:
        ref, labels = call_ref(input), labels_of(input.labels)
        async with info.context.once(
            "searchMemory", key=input.idempotency_key, request=lambda: request_of(input)
        ) as call:
            if call.stored is None:
                found = await search.search_memory(
                    call.db,
                    info.context.embedder,
                    ref=ref,
                    query=input.query,
                    kind=input.kind,
                    labels=labels,
                    ids=input.ids,
                    limit=input.limit,
                    after=input.after,
                )
                call.result = {
                    "execution": str(found.execution.id),
                    "hits": _hits_json(found.items),
                    "next": found.next_cursor,
                }
                return SearchMemoryPayload(
                    execution=ExecutionType(row=found.execution),
                    results=found_results(found.items),
                    next_cursor=found.next_cursor,
                )
        results, execution, _ = await _replayed(info, call.stored)
        assert execution is not None
        return SearchMemoryPayload(
            execution=execution, results=results, next_cursor=call.stored["next"]
        )

    @strawberry.mutation(
        # R42-R44
        description="Recall before a model call: the records that best match the turn's "
        "current work (at most harness.memory.search.max_results), rendered as one block "
        "marked as memory: data, never instructions. Recorded as a search_memory execution "
        "unless nothing was found or the same versions were already recalled for this "
        "conversation."
    )
    async def recall(
        self,
        info: Info,
        input: Annotated[RecallInput, strawberry.argument(description="What to recall for.")],
    ) -> RecallPayload:
        async def run() -> tuple[_Shown, dict[str, Any]]:
            found = await memory_recall.recall(
                info.context.db, info.context.embedder, ref=call_ref(input), query=input.query
            )
            shown = (
                found_results(found.items),
                None if found.execution is None else ExecutionType(row=found.execution),
                None if found.repeat_of is None else ExecutionType(row=found.repeat_of),
            )
            return shown, {
                "execution": str(found.execution.id) if found.execution else None,
                "repeat_of": str(found.repeat_of.id) if found.repeat_of else None,
                "hits": _hits_json(found.items),
                "text": found.text,
            }

        (results, execution, repeat_of), result = await once_shown(
            info, "recall", input, run, lambda result: _replayed(info, result)
        )
        return RecallPayload(
            kind=memory_recall.RECALL_KIND,
            notice=memory_recall.RECALL_NOTICE,
            text=result["text"],
            results=results,
            recorded=result["execution"] is not None,
            execution=execution,
            repeat_of=repeat_of,
        )
