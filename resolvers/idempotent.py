"""The idempotent-mutation pattern, once: a runtime mutation runs its service call at
most once per caller, operation and ``idempotencyKey`` (``Context.once``, in one
transaction); a replay answers the stored result, a JSON object of ids to reload."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from resolvers.context import Info
from server.storage.owners import by_agent

R = TypeVar("R")
M = TypeVar("M")


def request_of(input: Any) -> dict[str, Any]:
    """The input as plain JSON but its idempotencyKey: what a replay must repeat."""

    def plain(value: Any) -> Any:
        if isinstance(value, Enum):
            return value.value
        if isinstance(value, list):
            return [plain(v) for v in value]
        if hasattr(value, "__dict__") and not isinstance(value, type):
            return {k: plain(v) for k, v in vars(value).items()}
        return value

    out = plain(input)
    out.pop("idempotency_key", None)
    return dict(out)


async def once_shown(
    info: Info,
    operation: str,
    input: Any,
    run: Callable[[], Awaitable[tuple[R, dict[str, Any]]]],
    reload: Callable[[dict[str, Any]], Awaitable[R]],
    *,
    request: dict[str, Any] | None = None,
) -> tuple[R, dict[str, Any]]:
    """``run`` at most once for ``input.idempotency_key`` (``Context.once``), for a call
    whose rows the resolver shows as they are: ``run`` gives them with the result to
    store. Answers the rows and the stored result; when the key replays, ``reload``
    reads the rows again by the result's ids. ``request`` (default: the input's fields)
    is what a replay must repeat."""
    async with info.context.once(
        operation,
        key=input.idempotency_key,
        request=(lambda: request_of(input)) if request is None else request,
    ) as call:
        if call.stored is None:
            rows, call.result = await run()
            return rows, call.result
    return await reload(call.stored), call.stored


async def reloaded(db: AsyncSession, model: type[M], ids: list[str]) -> list[M]:
    """The rows of ``model`` a stored result names by id, in its order; a row removed
    since is left out."""
    rows = [
        await db.get(model, row_id, options=await by_agent(db, model, row_id))
        for row_id in map(uuid.UUID, ids)
    ]
    return [r for r in rows if r is not None]
