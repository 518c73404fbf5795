"""The one typed request context, built by one factory for the server and the tests."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession
from strawberry.types import Info as _Info

from resolvers.deadline import Deadline
from resolvers.loaders import Loaders
from server.database import Database
from server.embedding import Embedder
from server.errors import BadInputError, OutcomeUnknownError
from server.services import idempotency
from server.services.callers import Callers
from server.services.chain import Caller
from server.services.tools import CallRef
from server.services.turn_watch import TurnWatch
from server.settings import Settings

_log = logging.getLogger("agent_memory.errors")


@dataclass
class Context:
    """Per operation: one database session (opened on first use), fresh dataloaders."""

    database: Database
    embedder: Embedder
    settings: Settings
    request: Any = None
    identity: Caller | None = None
    credentials: Credentials | None = None
    response: Any = None
    deadline: Deadline | None = None
    callers: Callers | None = None  # the server's kept callers; None: built every time
    # the open turn the running mutation acts in (or began): the one whose staged memory
    # its answer shows (R12); None in a query, where no turn acts
    acting_turn: uuid.UUID | None = None
    turn_watch: TurnWatch | None = None  # the server's watch of turns (subscriptions)
    websocket: bool = False  # the operation came over the WebSocket (subscriptions)
    connection_params: dict[str, Any] | None = None  # a WebSocket's connection_init payload
    _session: AsyncSession | None = field(default=None, repr=False)
    _loaders: Loaders | None = field(default=None, repr=False)
    decisions: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def caller(self) -> str:
        """Who calls, as idempotency keys and logs name it (derived from the principal)."""
        return self.identity.key if self.identity is not None else "anonymous"

    @property
    def db(self) -> AsyncSession:
        if self._session is None:
            assert self.database.sessionmaker is not None
            self._session = self.database.sessionmaker()
            if self.deadline is not None:
                self.deadline.watch(self._session)
        return self._session

    @property
    def loaders(self) -> Loaders:
        if self._loaders is None:
            self._loaders = Loaders(self.db)
        return self._loaders

    def reset(self) -> None:
        """Forget what was decided and loaded: a subscription decides each turn it sends
        anew."""
        self.decisions.clear()
        self._loaders = None

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[AsyncSession]:
        """One mutation: commit on success, roll back on any error.

        Everything up to the COMMIT may be cancelled by the request's deadline; the
        COMMIT itself is awaited to its answer (shielded), so that a TIMEOUT answer
        means nothing was kept. A connection lost while COMMIT is on its way leaves
        the outcome unknown: OUTCOME_UNKNOWN (a retry with the same idempotencyKey
        answers the real result)."""
        db = self.db
        try:
            yield db
            await db.flush()
            await _commit(db)
        except BaseException:
            await db.rollback()
            raise
        finally:
            if self._loaders is not None:
                self._loaders.clear()

    @asynccontextmanager
    async def once(
        self,
        operation: str,
        *,
        key: str | None,
        request: dict[str, Any] | Callable[[], dict[str, Any]],
    ) -> AsyncIterator[Once]:
        """One idempotent mutation, in a :meth:`unit`: at most once per caller, operation
        and key. The block runs the call when :attr:`Once.stored` is None and sets
        :attr:`Once.result` (a JSON object of ids to reload), which the key keeps;
        otherwise the key replays the stored result and the block runs nothing."""
        async with self.unit() as db:
            call = Once(db)
            claimed = None
            if key is not None:
                claimed, call.stored = await idempotency.claim(
                    db, caller=self.caller, operation=operation, key=key, request=request
                )
            yield call
            if claimed is not None and call.stored is None:
                assert call.result is not None, "a call with a key sets its result"
                await idempotency.store(db, claimed, call.result)

    async def close(self) -> None:
        """End the operation's session. A transaction still open holds only reads (every
        write commits or rolls back in its :meth:`unit`): it ends with COMMIT, which keeps
        the connection's prepared statements, where a ROLLBACK makes the driver
        deallocate them all (docs/scaling.md, "The request path")."""
        session, self._session = self._session, None
        if session is None:
            return
        try:
            if session.in_transaction() and session.is_active:
                await session.commit()
        except Exception:
            # the answer is made: a read-only transaction that cannot end well (its
            # connection was lost) has nothing to keep, and must not turn the answer
            # into an error; closing the session rolls it back and returns the connection
            _log.warning("the operation's read-only transaction did not commit", exc_info=True)
        finally:
            try:
                await session.close()
            except Exception:
                _log.warning("the operation's session did not close", exc_info=True)


@dataclass
class Once:
    """An idempotent mutation's transaction: its session, the result a replayed key
    stored (None: run the call), and the result of the call that ran."""

    db: AsyncSession
    stored: dict[str, Any] | None = None
    result: dict[str, Any] | None = None


async def _commit(db: AsyncSession) -> None:
    try:
        await asyncio.shield(db.commit())
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise  # the database refused the COMMIT: nothing was kept
        raise OutcomeUnknownError(
            "the connection to the database was lost while committing: what this call "
            "did may or may not be kept; send it again with the same idempotencyKey"
        ) from None


@dataclass(frozen=True, slots=True)
class Credentials:
    """What the HTTP request presented: its bearer token and the chain headers naming the
    execution and the tool it comes from (resolved into a :class:`Caller` before any
    resolver runs, by :class:`resolvers.auth.Authentication`)."""

    token: str
    execution: str | None = None
    tool: str | None = None


def call_ref(input: Any) -> CallRef:
    """The call a native tool's input names: its turn, the calling execution (default:
    the turn's own) and the model call that asked for it."""
    return CallRef(
        turn_id=input.turn_id,
        caller_execution_id=input.execution_id,
        invocation_id=input.invocation_id,
    )


def labels_of(labels: Sequence[Any] | None) -> dict[str, str] | None:
    """Labels given as a list of ``LabelInput`` (name, value), as the object of name:
    value the services check against the declared labels (R4); a name given twice is
    refused before the call is recorded."""
    if labels is None:
        return None
    out: dict[str, str] = {}
    for label in labels:
        if label.name in out:
            raise BadInputError(f"label {label.name} is given twice", field="labels")
        out[label.name] = label.value
    return out


def make_context(
    *,
    database: Database,
    embedder: Embedder,
    settings: Settings,
    request: Any = None,
    response: Any = None,
    identity: Caller | None = None,
    credentials: Credentials | None = None,
    deadline: Deadline | None = None,
    callers: Callers | None = None,
    turn_watch: TurnWatch | None = None,
    websocket: bool = False,
) -> Context:
    return Context(
        database=database,
        embedder=embedder,
        settings=settings,
        request=request,
        response=response,
        identity=identity,
        credentials=credentials,
        deadline=deadline,
        callers=callers,
        turn_watch=turn_watch,
        websocket=websocket,
    )


Info = _Info[Context, None]
