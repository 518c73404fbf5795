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
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class Claim:
    """A key claimed for the rest of a transaction, and the input it is bound to."""

    caller: str
    operation: str
    key: str
    digest: str


async def claim(
    db: AsyncSession,
    *,
    caller: str,
    operation: str,
    key: str,
    request: dict[str, Any] | Callable[[], dict[str, Any]],
) -> tuple[Claim, dict[str, Any] | None]:
    """Claim ``key`` for this transaction (CONFLICT while another call holds it); and
    the result a first call stored with it, to answer instead of running (CONFLICT when
    that call's input was another). ``request`` (or the function that makes it) is the
    input the key is bound to."""
    check_text(key, field="idempotencyKey", maximum=MAX_KEY)
    digest = request_hash(request() if callable(request) else request)
    if not await db.scalar(select(func.pg_try_advisory_xact_lock(*_claim(caller, operation, key)))):
        raise _in_flight()
    claimed = Claim(caller, operation, key, digest)
    stored = await _stored(db, caller, operation, key)
    return claimed, None if stored is None else _replay(stored, digest)


async def store(db: AsyncSession, claimed: Claim, result: dict[str, Any]) -> None:
    """Keep the result of the call that claimed the key (a JSON object: ids to reload),
    in its transaction: no other call with the key can have stored one since."""
    await db.execute(
        insert(IdempotencyKey).values(
            caller=claimed.caller,
            operation=claimed.operation,
            key=claimed.key,
            request_hash=claimed.digest,
            result=result,
        )
    )


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
