"""Which turns began or ended, for the readers that follow sessions live (the
``sessionTurns`` subscription): one watcher per server process.

The watcher asks the database once per interval, in one statement, which turns of every
followed session began or ended since it last asked, and hands each turn's id to the
followers of its session. So its cost is one indexed statement per interval per process,
whatever the number of followers, and none when nobody follows; each follower then reads
what it shows of the turn with its own grants. A turn's times are those of its
transaction's start, which may commit after a later look: each look reaches back
:data:`OVERLAP` further, and a turn already handed on in the same state is not handed
on again. At most ``limit`` followers are served at once; a follower that does not keep
up loses the oldest news (its queue holds :data:`BACKLOG`), and reads the turns again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlmodel import col

from server.database import Database
from server.errors import NotAllowedError
from server.models import Turn

OVERLAP = timedelta(seconds=10)
BACKLOG = 100

_log = logging.getLogger("agent_memory")


class TurnWatch:
    def __init__(self, database: Database, *, interval: float, limit: int) -> None:
        self.database = database
        self.interval = interval
        self.limit = limit
        self._followers: dict[uuid.UUID, set[asyncio.Queue[uuid.UUID]]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None
        self._seen: dict[tuple[uuid.UUID, str], datetime] = {}
        self._since: datetime | None = None
        # the sessions looked at once: what changed before they were followed is not news
        self._known: set[uuid.UUID] = set()

    @property
    def following(self) -> int:
        return sum(len(queues) for queues in self._followers.values())

    @contextlib.asynccontextmanager
    async def follow(self, session_id: uuid.UUID) -> AsyncIterator[asyncio.Queue[uuid.UUID]]:
        """A queue of the ids of the session's turns as they begin or end, until the block
        ends."""
        if self.following >= self.limit:
            raise NotAllowedError(
                f"this server follows {self.limit} sessions already "
                "(AGENT_MEMORY_MAX_SUBSCRIPTIONS); try again later"
            )
        queue: asyncio.Queue[uuid.UUID] = asyncio.Queue(maxsize=BACKLOG)
        self._followers[session_id].add(queue)
        if self._task is None or self._task.done():
            self._since = None
            self._seen.clear()
            self._task = asyncio.create_task(self._run(), name="turn-watch")
        try:
            yield queue
        finally:
            queues = self._followers.get(session_id)
            if queues is not None:
                queues.discard(queue)
                if not queues:
                    del self._followers[session_id]
                    self._known.discard(session_id)
            if not self._followers and self._task is not None:
                self._task.cancel()
                self._task = None

    async def _run(self) -> None:
        while self._followers:
            try:
                await self._look()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database is away: look again later
                _log.warning("the turn watch could not look for turns", exc_info=True)
            await asyncio.sleep(self.interval)

    async def _look(self) -> None:
        sessions = list(self._followers)
        changed = func.greatest(
            col(Turn.created_at), func.coalesce(col(Turn.ended_at), col(Turn.created_at))
        )
        async with self.database.session() as db:
            now = (await db.execute(select(func.now()))).scalar_one()
            since = now if self._since is None else self._since
            rows = (
                await db.execute(
                    select(col(Turn.id), col(Turn.session_id), col(Turn.status), changed)
                    .where(col(Turn.session_id).in_(sessions), changed > since - OVERLAP)
                    .order_by(changed, col(Turn.id))
                )
            ).all()
            await db.commit()  # read only: COMMIT keeps the connection's prepared statements
        for turn_id, session_id, status, at in rows:
            if (turn_id, status) in self._seen:
                continue
            self._seen[(turn_id, status)] = at
            if session_id not in self._known:
                continue  # it changed before the session was followed
            for queue in list(self._followers.get(session_id, ())):
                if queue.full():
                    queue.get_nowait()  # the oldest news goes
                queue.put_nowait(turn_id)
        horizon = now - 2 * OVERLAP
        self._seen = {k: at for k, at in self._seen.items() if at > horizon}
        self._known.update(sessions)
        self._since = now
