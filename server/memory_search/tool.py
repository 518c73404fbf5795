"""search_memory (R40, R41, R43, R14, R23).

``search_memory`` is a native tool: each call is an execution of it (R26),
recorded by :func:`server.services.tools.run_tool` with its input and its
output, the records it returned (``records``, and ``next``, the cursor of the
next page of a listing). Helpers and programs may search (R23).

- With a ``query`` the records are ranked (R41) by the agent version's
  ``harness.memory.search`` (``mode``, ``min_score``) with the fusion preset
  :data:`server.domain.ranking_presets.DEFAULT_PRESET`, in one statement
  (:func:`ranking_statement`: the statement of
  :func:`server.storage.hybrid.build_search`, built once per shape and run with
  the reader's values as parameters); at most ``limit`` results (default
  ``max_results``).
- Without one they are listed newest first (by record creation), ``limit`` a
  page, ``after`` the opaque cursor of the previous page's last record. The
  cursor is a keyset position, so records written meanwhile neither repeat nor
  shift later pages.
- ``kind``, ``labels`` (exact values of declared labels), ``ids`` filter both.

Only records the reader may find are candidates (:mod:`server.memory_search.ranking`,
:mod:`server.memory_search.listing`). Every recorded search writes a RETRIEVED
output use per record version it returned (all of them reach the model, in rank
order), and its query embedding is recorded as an ``embed`` invocation that no
limit counts, with a ``usage`` transcript event (R43, :mod:`server.services.tools`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.config import SEARCH_TOOL
from server.domain.text import check_text
from server.embedding import Embedder
from server.embedding_packing import Vector
from server.errors import BadInputError
from server.memory_search.listing import listed
from server.memory_search.ranking import Found, ranked_by
from server.memory_search.statement import Filters
from server.models import Execution
from server.services.tools import CallRef, ToolResult, record_found, run_tool
from server.services.turn_scope import TurnScope, ensure_memory_enabled

MAX_LIMIT = 100
MAX_QUERY = 2_000
MAX_IDS = 100


@dataclass(frozen=True, slots=True)
class SearchResult:
    execution: Execution
    items: list[Found]
    next_cursor: str | None


# -- checks ------------------------------------------------------------------------------


def _filters(
    scope: TurnScope,
    kind: str | None,
    labels: dict[str, Any] | None,
    ids: Sequence[uuid.UUID] | None,
) -> Filters:
    memory = scope.config.memory
    the_kind = None if kind is None else memory.check_kind(kind)
    pairs = tuple(sorted(memory.check_labels(labels).items()))
    if ids is not None and not 1 <= len(ids) <= MAX_IDS:
        raise BadInputError(f"ids must hold 1 to {MAX_IDS} ids", field="ids")
    return Filters(
        kind=the_kind, labels=pairs, ids=None if ids is None else tuple(dict.fromkeys(ids))
    )


def _limit(scope: TurnScope, limit: int | None) -> int:
    the_limit = scope.config.memory.search.max_results if limit is None else limit
    if not 1 <= the_limit <= MAX_LIMIT:
        raise BadInputError(f"limit must be from 1 to {MAX_LIMIT}", field="limit")
    return the_limit


# -- search_memory -----------------------------------------------------------------------


@asynccontextmanager
async def embedding_started(
    embedder: Embedder, query: str | None, *, maximum: int
) -> AsyncIterator[Awaitable[tuple[Vector, int]] | None]:
    """A query's embedding, started as the call arrives, so that its forward pass runs
    while the call reads its turn and checks its arguments instead of after; ``None``
    without a query, or for one the call will refuse. Cancelled if the call ends without
    it (a lexical search, a refusal)."""
    try:
        text = None if query is None else check_text(query, field="query", maximum=maximum)
    except BadInputError:
        text = None
    if not text or not text.strip():
        yield None
        return
    task = asyncio.ensure_future(embedder.embed_query(text))
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
        elif not task.cancelled():
            task.exception()  # looked at, whether or not the call got that far


async def search_memory(
    db: AsyncSession,
    embedder: Embedder,
    *,
    ref: CallRef,
    query: str | None = None,
    kind: str | None = None,
    labels: dict[str, Any] | None = None,
    ids: Sequence[uuid.UUID] | None = None,
    limit: int | None = None,
    after: str | None = None,
) -> SearchResult:
    """Run the native ``search_memory`` tool (R40, R41, R43); a refusal is recorded failed."""
    args = {
        "query": query,
        "kind": kind,
        "labels": labels,
        "ids": None if ids is None else [str(i) for i in ids],
        "limit": limit,
        "after": after,
    }
    page: dict[str, str | None] = {"next": None}

    # the query's embedding runs while the call's scope and checks are read
    async with embedding_started(embedder, query, maximum=MAX_QUERY) as embedding:

        async def body(scope: TurnScope, execution: Execution) -> list[Found]:
            ensure_memory_enabled(scope)
            filters = _filters(scope, kind, labels, ids)
            the_limit = _limit(scope, limit)
            tokens: int | None = None  # a listing embeds nothing
            if query is not None:
                if after is not None:
                    raise BadInputError(
                        "after pages a listing; a search with a query returns one ranked page",
                        field="after",
                    )
                search = scope.config.memory.search
                text = check_text(query, field="query", maximum=MAX_QUERY, blank=False)
                items, tokens = await ranked_by(
                    db,
                    embedder,
                    reader=scope.reader,
                    search=search,
                    query=text,
                    limit=the_limit,
                    filters=filters,
                    embedding=embedding,
                )
            else:
                items, page["next"] = await listed(
                    db, reader=scope.reader, limit=the_limit, after=after, filters=filters
                )
            versions = [i.version.id for i in items]
            await record_found(db, scope, execution, embedder, tokens=tokens, versions=versions)
            return items

        result = await run_search(
            db,
            ref=ref,
            input=args,
            body=body,
            more_output=lambda: {"next": page["next"]} if query is None else {},
        )
    return SearchResult(execution=result.execution, items=result.items, next_cursor=page["next"])


async def run_search(
    db: AsyncSession,
    *,
    ref: CallRef,
    input: dict[str, Any],
    body: Callable[[TurnScope, Execution], Awaitable[list[Found]]],
    more_output: Callable[[], dict[str, Any]],
    scope: TurnScope | None = None,
) -> ToolResult[Found]:
    """A call of search_memory (a recall is recorded as one): :func:`run_tool` listing
    the records it found."""
    return await run_tool(
        db,
        ref=ref,
        name=SEARCH_TOOL,
        input=input,
        output_key="records",
        body=body,
        more_output=more_output,
        scope=scope,
        writes=False,
    )


__all__ = [
    "MAX_LIMIT",
    "MAX_QUERY",
    "Filters",
    "Found",
    "SearchResult",
    "run_search",
    "search_memory",
]
