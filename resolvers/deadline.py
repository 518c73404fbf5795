"""A request's wall-clock limit, and the COMMIT it must not cut (docs/security.md).

The HTTP guard (:class:`resolvers.guard.GraphQLGuard`) runs each request
under ``AGENT_MEMORY_QUERY_TIMEOUT_MS`` and answers TIMEOUT when it is reached.
That answer promises that nothing the request did is kept, so the limit may
cancel a request only before any of its transactions has sent COMMIT. The
operation's session tells its :class:`Deadline` when a COMMIT is about to be
sent; from then on the request is no longer cancelled: it waits for the COMMIT
and answers its real result, even past the limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

# Where the guard leaves the request's deadline in the ASGI scope.
SCOPE_KEY = "agent_memory.deadline"


class Deadline:
    """The limit of one request: enforced by the guard, lifted at the first COMMIT."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._timeout: asyncio.Timeout | None = None

    @asynccontextmanager
    async def enforced(self) -> AsyncIterator[None]:
        """Cancels the block, raising TimeoutError, if it runs past the limit before a
        COMMIT is sent."""
        async with asyncio.timeout(self.seconds) as timeout:
            self._timeout = timeout
            try:
                yield
            finally:
                self._timeout = None

    def watch(self, session: AsyncSession) -> None:
        """Lift the limit when ``session`` is about to send COMMIT."""
        event.listen(session.sync_session, "before_commit", self._lift)

    def _lift(self, _session: Any) -> None:
        timeout = self._timeout
        if timeout is not None and timeout.expired():
            # the limit was reached first: the request is being cancelled, and this
            # COMMIT must not be sent (the guard answers TIMEOUT)
            raise asyncio.CancelledError
        if timeout is not None:
            timeout.reschedule(None)
