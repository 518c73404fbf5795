"""Following a session as it happens: the ``sessionTurns`` subscription, over a WebSocket
in Strawberry's ``graphql-transport-ws`` protocol at ``/graphql``.

Authorized as the query is: the token (``Authorization`` in ``connection_init``'s
payload, a browser having no headers to give a WebSocket) resolves the caller as a
request's header does; ``sessionTurns(sessionId)`` reads the session as ``session(id)``
does (:func:`resolvers.nodes.read_node`) before anything is followed; and each turn it
sends goes through the access gate, its ownership check included, as any field's answer.
Before each turn it sends, the caller is looked up again and its grants decided anew, so
a token revoked or a grant removed ends the subscription at the next turn.

Bounded (docs/security.md, "Limits"): one subscription per connection; at most
``AGENT_MEMORY_MAX_SUBSCRIPTIONS`` followed at once per server process; the turns come
from one statement per ``AGENT_MEMORY_SUBSCRIPTION_POLL_MS`` per process, whatever the
number of followers (:mod:`server.services.turn_watch`); each turn sent costs what its
selection costs, within the document limits every operation has. Between turns a
subscription holds no database connection. Queries and mutations go over HTTP: over the
WebSocket only subscriptions run, and over HTTP none.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Iterator
from typing import Annotated

import strawberry
from graphql import ExecutionResult, GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from resolvers.auth import authenticate
from resolvers.context import Context, Info
from resolvers.kinds import Kind
from resolvers.nodes import read_node
from resolvers.types.turns import TurnType
from server import models
from server.errors import BadInputError, NotAllowedError


async def _renewed(context: Context) -> None:
    """The caller looked up again and its grants to be decided anew (a revocation ends
    the subscription); a fresh database session and fresh dataloaders."""
    await context.close()
    context.reset()
    if context.credentials is not None:
        context.identity = await authenticate(context)


@strawberry.type
class Subscription:
    @strawberry.subscription(
        description="The session's turns as they begin and as they end (commit, roll "
        "back, fail), each as it then stands, over a WebSocket (graphql-transport-ws at "
        "/graphql, the token in connection_init's payload as Authorization). Needs what "
        "session(id) needs: SELECT on <namespace>.Session. A turn arrives within "
        "AGENT_MEMORY_SUBSCRIPTION_POLL_MS of the change; one subscription per connection."
    )
    async def session_turns(
        self,
        info: Info,
        session_id: Annotated[uuid.UUID, strawberry.argument(description="The session to follow.")],
    ) -> AsyncGenerator[TurnType, None]:
        context = info.context
        watch = context.turn_watch
        if watch is None:
            raise NotAllowedError("this server does not follow sessions")
        # a subscription's own resolver runs outside the resolve hooks that read ids
        # (resolvers/ids.py): the id is read here, as they read it
        try:
            session = uuid.UUID(str(session_id))
        except ValueError:
            raise BadInputError("sessionId is not an id", field="sessionId") from None
        await read_node(context, Kind.SESSION, session)
        async with watch.follow(session) as changes:
            while True:
                await context.close()  # no connection held while waiting
                turn_id = await changes.get()
                await _renewed(context)
                turn = await context.db.get(models.Turn, turn_id, populate_existing=True)
                if turn is not None:
                    yield TurnType(row=turn)


class OverWebSocket(SchemaExtension):
    """Subscriptions over the WebSocket, and only there: a query or mutation goes over
    HTTP, with the request limits and the timeout of docs/security.md. Refused before it
    runs, as :class:`resolvers.auth.Authentication` refuses."""

    def on_execute(self) -> Iterator[None]:
        execution = self.execution_context
        context = execution.context
        websocket = isinstance(context, Context) and context.websocket
        subscription = execution.operation_type is OperationType.SUBSCRIPTION
        if execution.result is None and websocket != subscription:
            refused = BadInputError(
                "over the WebSocket only subscriptions run: send it over HTTP"
                if websocket
                else "a subscription runs over a WebSocket (graphql-transport-ws at /graphql)"
            )
            execution.result = ExecutionResult(
                data=None, errors=[GraphQLError(refused.message, original_error=refused)]
            )
        yield
