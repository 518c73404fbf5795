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

from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.marking import MEMORY_KIND, MEMORY_NOTICE, Remembered, memory_block
from server.domain.text import check_text
from server.embedding import Embedder
from server.errors import DomainError, NotAllowedError
from server.memory_search import recorded
from server.memory_search.ranking import Found
from server.memory_search.recorded import Call, Recall
from server.memory_search.statement import MemoryQuery
from server.memory_search.tool import embedding_started, read_facts
from server.models.rows import ExecutionRow
from server.services.tools import CallRef, model_label, open_call
from server.services.turn_scope import ensure_memory_enabled, known_turn

MAX_WORK = 20_000
RECALL_KIND = MEMORY_KIND
RECALL_NOTICE = MEMORY_NOTICE


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What a recall returns: the records, and whether (and as what) it was recorded."""

    items: list[Found]
    execution: ExecutionRow | None  # None: not recorded (nothing found, or a repeat)
    repeat_of: ExecutionRow | None = None

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


async def recall(db: AsyncSession, embedder: Embedder, *, ref: CallRef, query: str) -> RecallResult:
    """Recall for the caller's next model call (R42-R44); see the module docstring. Its
    conversation held, then one statement ranks, checks for a repeat and records
    (:mod:`server.memory_search.recorded`)."""
    # the query's embedding runs while the turn is read and the conversation locked
    async with embedding_started(embedder, query, maximum=MAX_WORK) as embedding:
        facts = known_turn(db, ref.turn_id) or await read_facts(db, ref)
        try:
            if not facts.config.memory.enabled:
                raise NotAllowedError("memory is not enabled")
            text = check_text(query, field="query", maximum=MAX_WORK, blank=False)
        except DomainError:
            await _refuse(db, ref, query)
            raise
        search = facts.config.memory.search
        vector, tokens = (
            (None, None)
            if search.mode == "lexical"
            else await (embedding if embedding is not None else embedder.embed_query(text))
        )
        found = await recorded.run(
            db,
            facts=facts,
            call=Call(
                ref.turn_id,
                ref.caller_execution_id,
                ref.invocation_id,
                {"recall": True, "query": text},
            ),
            query=MemoryQuery(text, vector, search.mode, search.min_score, search.max_results),
            tokens=tokens,
            model=model_label(embedder),
            recall=Recall(RECALL_KIND, RECALL_NOTICE),
        )
    return RecallResult(items=found.items, execution=found.execution, repeat_of=found.repeat_of)


async def _refuse(db: AsyncSession, ref: CallRef, query: str) -> None:
    """Raise the refusal of a recall as its scope says it first: a turn not open or a
    caller that may not recall, then memory disabled, then the query (R1, R24)."""
    scope = await open_call(db, ref)
    ensure_memory_enabled(scope)
    check_text(query, field="query", maximum=MAX_WORK, blank=False)
