"""Recall (R42-R44).

``recall`` (R42-R44) runs before each model call with the turn's current work
as its query, and returns the best matches (``max_results``) marked as memory:
data, never instructions (:data:`RECALL_NOTICE`, and a rendered block that
says so). It is recorded as a ``search_memory`` execution with ``recall: true``
in its input, except:

- when it found nothing;
- when it found exactly (as a set) the record versions that an earlier
  recorded recall already put before the same conversation.

*The same conversation* is one caller execution: the agent's own run of the
turn (the default caller), or one helper's or program's run. Each has its own
context window: what a recall put before the agent is not before a helper it
starts, and a new turn (or a retry, or a replay) starts a new run whose context
the runtime builds afresh, so recalls made in earlier turns do not count. Two
recalls of one conversation are serialised (the caller's row is locked), so
the comparison sees every earlier one.

A recorded recall writes a RETRIEVED output use per record version it returned,
and its query embedding is recorded as ``embed`` usage
(:mod:`server.services.tools`): on the recall's execution, or, for a recall
that is not recorded, on the caller's.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.marking import MEMORY_KIND, MEMORY_NOTICE, Remembered, memory_block
from server.domain.text import check_text
from server.embedding import Embedder
from server.memory_search.ranking import Found, ranked_by
from server.memory_search.tool import embedding_started, run_search
from server.models import Execution
from server.services.tools import CallRef, mark_recall, open_call, record_embed, record_found
from server.services.turn_scope import TurnScope, ensure_memory_enabled
from server.storage.built import built_once

MAX_WORK = 20_000
RECALL_KIND = MEMORY_KIND
RECALL_NOTICE = MEMORY_NOTICE


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What a recall returns: the records, and whether (and as what) it was recorded."""

    items: list[Found]
    execution: Execution | None  # None: not recorded (nothing found, or a repeat)
    repeat_of: Execution | None = None

    @property
    def text(self) -> str:
        return render_memory(self.items)


def render_memory(items: Sequence[Found]) -> str:
    """The recalled records as one block for the model's context, marked as data (R44)."""
    return memory_block(
        [
            Remembered(
                record_id=item.record.id,
                kind=item.version.kind,
                saved=item.version.created_at.date(),
                summary=item.version.summary,
                content=item.version.content,
            )
            for item in items
        ]
    )


def version_set_digest(versions: Iterable[uuid.UUID]) -> bytes:
    """The digest of a set of record versions: SHA-256 of their ids' bytes, sorted (as
    PostgreSQL orders uuids; migration 0010 computes it so for the recalls it fills in)."""
    return hashlib.sha256(b"".join(sorted(v.bytes for v in versions))).digest()


@built_once
def _earlier_recall() -> Any:
    """The recorded recall of a conversation (parameter ``caller``) that returned the
    versions of a digest (``digest``): one probe of ``ix_executions_recall_digest``."""
    return (
        select(Execution)
        .where(
            col(Execution.agent_id) == bindparam("agent"),  # its shard, on Citus
            col(Execution.parent_id) == bindparam("caller"),
            col(Execution.recall_digest) == bindparam("digest"),
        )
        .order_by(col(Execution.created_at))
        .limit(1)
    )


async def recall(db: AsyncSession, embedder: Embedder, *, ref: CallRef, query: str) -> RecallResult:
    """Recall for the caller's next model call (R42-R44); see the module docstring."""
    # the query's embedding runs while the turn is read and the conversation locked
    async with embedding_started(embedder, query, maximum=MAX_WORK) as embedding:
        # One recall at a time per conversation (its caller's row is locked with the
        # turn's), so the repeat check sees every earlier one.
        scope = await open_call(db, ref, hold_caller=True)
        ensure_memory_enabled(scope)
        text = check_text(query, field="query", maximum=MAX_WORK, blank=False)
        search = scope.config.memory.search
        items, tokens = await ranked_by(
            db,
            embedder,
            reader=scope.reader,
            search=search,
            query=text,
            limit=search.max_results,
            embedding=embedding,
        )
    digest = version_set_digest(item.version.id for item in items)
    repeat: Execution | None = None
    if items:
        repeat = await db.scalar(
            _earlier_recall(),
            {"caller": scope.caller.id, "agent": scope.caller.agent_id, "digest": digest},
        )
    if not items or repeat is not None:
        if tokens is not None:
            await record_embed(db, scope, scope.caller, embedder, tokens)
        return RecallResult(items=items, execution=None, repeat_of=repeat)

    async def body(ts: TurnScope, execution: Execution) -> list[Found]:
        versions = [i.version.id for i in items]
        await record_found(db, ts, execution, embedder, tokens=tokens, versions=versions)
        mark_recall(db, execution, digest)
        return items

    result = await run_search(
        db,
        ref=ref,
        input={"recall": True, "query": text},
        body=body,
        more_output=lambda: {"kind": RECALL_KIND, "notice": RECALL_NOTICE},
        scope=scope,
    )
    return RecallResult(items=items, execution=result.execution)
