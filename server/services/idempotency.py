"""Idempotency keys for runtime mutations.

The same key with the same input returns the first result; the same key with
different input is a CONFLICT. Keys are scoped by caller and operation. The
result is stored in the mutation's own transaction, so a failed call stores
nothing and may be retried with the same key.

A call first claims its key for the rest of its transaction (a transaction-level
advisory lock on caller, operation and key), before it looks for a stored result
and before it runs. A second call with the key while the first is in flight
finds the claim taken and answers "in flight; retry it" (CONFLICT) at once,
whatever the mutation: it never runs its body against the first call's
half-done effects (a turn the first call is committing). The claim ends with the
first call's transaction: a retry then replays its result, or, if it failed,
runs afresh.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.text import check_text
from server.errors import ConflictError
from server.models import IdempotencyKey

MAX_KEY = 200


def request_hash(request: dict[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


async def once(
    db: AsyncSession,
    *,
    caller: str,
    operation: str,
    key: str | None,
    request: dict[str, Any] | Callable[[], dict[str, Any]],
    run: Callable[[], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    """Run ``run`` once per key; its result must be a JSON object (ids to reload).
    ``request`` (or the function that makes it, called only when there is a key) is
    the input the key is bound to."""
    if key is None:
        return await run()
    check_text(key, field="idempotencyKey", maximum=MAX_KEY)
    digest = request_hash(request() if callable(request) else request)
    if not await db.scalar(select(func.pg_try_advisory_xact_lock(*_claim(caller, operation, key)))):
        raise _in_flight()
    stored = await _stored(db, caller, operation, key)
    if stored is not None:
        return _replay(stored, digest)
    result = await run()
    # no other call with this key can have stored a result since: the claim is ours
    await db.execute(
        insert(IdempotencyKey).values(
            caller=caller, operation=operation, key=key, request_hash=digest, result=result
        )
    )
    return result


def _claim(caller: str, operation: str, key: str) -> tuple[int, int]:
    """The key's advisory lock: two signed 32-bit numbers (PostgreSQL keeps two-number
    locks apart from the one-number locks other checks take)."""
    digest = hashlib.sha256("\x00".join((caller, operation, key)).encode()).digest()
    return (
        int.from_bytes(digest[:4], "big", signed=True),
        int.from_bytes(digest[4:8], "big", signed=True),
    )


def _in_flight() -> ConflictError:
    return ConflictError(
        "a call with this idempotencyKey is in flight; retry it", field="idempotencyKey"
    )


async def _stored(db: AsyncSession, caller: str, operation: str, key: str) -> IdempotencyKey | None:
    return await db.scalar(
        select(IdempotencyKey).where(
            col(IdempotencyKey.caller) == caller,
            col(IdempotencyKey.operation) == operation,
            col(IdempotencyKey.key) == key,
        )
    )


def _replay(stored: IdempotencyKey, digest: str) -> dict[str, Any]:
    if stored.request_hash != digest:
        raise ConflictError(
            "this idempotencyKey was used with different input", field="idempotencyKey"
        )
    return stored.result
