"""The session every operation uses: an ``AsyncSession`` that takes one database call
at a time, however many resolvers share it.

GraphQL resolves sibling fields concurrently (each in a task of its own), and a
SQLAlchemy session runs one statement at a time: two resolvers awaiting the same
session at once make it raise "concurrent operations are not permitted". Each
database method of :class:`SerialSession` holds a lock for the call's own duration,
never across the caller's other awaits, so nothing waits on a task that waits on it.
The lock is re-entrant per task, because some methods call others (``scalars`` calls
``execute``).

A call runs to its end even when the task that made it is cancelled: GraphQL cancels
the sibling fields of one that fails where null is not allowed, and a statement cut
short would leave the connection invalid, so that every later field of the operation,
and its end, would fail (docs/security.md, "Errors at the HTTP boundary").
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from psycopg import AsyncConnection
from sqlalchemy.ext.asyncio import AsyncSession

T = TypeVar("T")


class _TaskLock:
    """An asyncio lock the task holding it may take again, whose calls run to their end
    even when the task that made one is cancelled."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None
        self._depth = 0

    async def run(self, call: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        task = asyncio.current_task()
        if task is not None and self._owner is task:
            self._depth += 1
            try:
                return await call()
            finally:
                self._depth -= 1
        abandoned = False

        async def locked() -> Any:
            async with self._lock:
                if abandoned:  # its caller was cancelled before the call began
                    raise asyncio.CancelledError
                self._owner, self._depth = asyncio.current_task(), 1
                try:
                    return await call()
                finally:
                    self._owner, self._depth = None, 0

        inner = asyncio.ensure_future(locked())
        try:
            return await asyncio.shield(inner)
        except asyncio.CancelledError:
            # A cancelled caller (a sibling field's error made GraphQL cancel this one,
            # or the request's deadline) does not cut a statement short: cut, it would
            # leave the connection, and so every later field of the operation, unusable.
            # The call ends on its own (each statement is bounded by the statement
            # timeout), and the session's next call waits for it.
            abandoned = True
            inner.add_done_callback(_retrieved)
            raise


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # seen: an abandoned call's error is nobody's to raise


# The methods that talk to the database (each awaits the connection).
_SERIALISED = (
    "execute",
    "scalar",
    "scalars",
    "get",
    "get_one",
    "merge",
    "flush",
    "refresh",
    "delete",
    "commit",
    "rollback",
    "connection",
    "close",
    "run_sync",
)


class SerialSession(AsyncSession):
    """An ``AsyncSession`` whose database calls never overlap (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._serial = _TaskLock()

    async def on_driver(self, work: Callable[[AsyncConnection[Any]], Awaitable[T]]) -> T:
        """``work`` on the session's psycopg connection, in the session's transaction,
        one database call at a time like the session's own: the statements of the hot
        path, sent as written and read as plain rows (docs/architecture.md)."""

        async def call() -> T:
            connection = await self.connection()
            raw = await connection.get_raw_connection()
            driver = raw.driver_connection
            assert isinstance(driver, AsyncConnection)
            return await work(driver)

        result: T = await self._serial.run(call)
        return result


def _serialised(method: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def call(self: SerialSession, *args: Any, **kwargs: Any) -> Any:
        return await self._serial.run(lambda: method(self, *args, **kwargs))

    return call


for _name in _SERIALISED:
    setattr(SerialSession, _name, _serialised(getattr(AsyncSession, _name)))
