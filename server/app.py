"""The ASGI application. Nothing is built at import: ``create_app(settings)`` builds
the database, the embedder and the schema inside the Starlette lifespan."""

from __future__ import annotations

import ctypes
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.unset import UNSET

from memory_mcp.endpoint import McpEndpoint
from memory_mcp.operations import Operations
from resolvers.context import Credentials, make_context
from resolvers.deadline import SCOPE_KEY
from resolvers.errors import mask_uncoded
from resolvers.guard import GraphQLGuard, bearer_token, error_body
from resolvers.schema import build_schema
from server import logs, web
from server.database import Database
from server.embedding import Embedder
from server.logs import RequestLog
from server.metrics import Metrics
from server.services.callers import Callers
from server.services.turn_watch import TurnWatch
from server.settings import Settings

_log = logging.getLogger("agent_memory")


_PR_SET_PDEATHSIG = 1  # prctl(2)

# What a request Strawberry refuses before running it answers, besides its status.
_HTTP_CODES = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}


class _GraphQL(GraphQL):
    """Strawberry's ASGI app; a request it refuses is answered in JSON with a code, like
    every other error (docs/security.md, "Errors at the HTTP boundary")."""

    def __init__(self, schema: Any, *, services: dict[str, Any], settings: Settings) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.dev else None,
            allow_queries_via_get=False,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            max_subscriptions_per_connection=1,
            connection_init_wait_timeout=timedelta(seconds=10),
            # a WebSocket from a page of another origin is refused at its handshake, as
            # CORS refuses its requests: this server's own origin, and the configured ones
            allowed_origins=settings.cors_allowed_origins,
        )
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        response: Response
        try:
            response = await self.run(Request(scope, receive))
        except HTTPException as exc:
            code = _HTTP_CODES.get(exc.status_code, "BAD_REQUEST")
            response = Response(
                error_body(exc.reason, code),
                status_code=exc.status_code,
                media_type="application/json",
            )
        await response(scope, receive, send)

    def decode_json(self, data: str | bytes) -> object:
        """One JSON object: not a batch (a list), a string or a number; a body that is not
        UTF-8 or nests too deeply for the parser is malformed like any other."""
        try:
            value = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise HTTPException(400, "the request body is not valid JSON") from exc
        if isinstance(value, list):
            raise HTTPException(400, "batched requests are not supported: send one per request")
        if not isinstance(value, dict):
            raise HTTPException(400, "the request body must be a JSON object with a query")
        return value

    @property
    def graphql_ide_html(self) -> str:
        return web.graphiql_html()

    async def process_result(self, request: Any, result: Any) -> Any:
        if result.errors:
            result.errors = mask_uncoded(result.errors)
        return await super().process_result(request, result)

    async def get_context(self, request: Any, response: Any = None) -> Any:
        websocket = request.scope["type"] == "websocket"
        return make_context(
            request=request,
            response=response,
            credentials=None if websocket else _credentials(request.headers),
            deadline=request.scope.get(SCOPE_KEY),
            websocket=websocket,
            **self.services,
        )

    async def on_ws_connect(self, context: Any) -> Any:
        """A WebSocket's token is ``Authorization`` in connection_init's payload (a browser
        gives a WebSocket no header), read as a request's header is and resolved when its
        subscription starts."""
        params = context.connection_params or {}
        found = {k.lower(): str(v) for k, v in params.items() if isinstance(v, str)}
        context.credentials = _credentials(found)
        return UNSET


def _credentials(headers: Any) -> Credentials | None:
    """The bearer token and the chain headers (docs/security.md); resolved into the
    caller by ``resolvers.auth.Authentication`` once the document passed the limits."""
    token = bearer_token(headers.get("authorization", ""))
    if token is None:
        return None
    return Credentials(
        token=token,
        execution=headers.get("x-agent-memory-execution"),
        tool=headers.get("x-agent-memory-tool"),
    )


def _model_threads(settings: Settings) -> int | None:
    """The forward passes one server process runs at once: its share of the cores when
    ``serve`` runs several (``workers``), else as many as the model's threads."""
    if settings.workers is None or settings.workers == 1:
        return None
    return max(1, (os.cpu_count() or 1) // settings.workers)


def from_environment() -> Starlette:
    """The app of one of ``serve --workers``' processes: its settings from the
    environment ``serve`` gave it (the database it resolved, the processes' number)."""
    _stop_with_parent()
    settings = Settings()
    logs.configure(settings)
    return create_app(settings)


def _stop_with_parent() -> None:
    """On Linux, SIGTERM this process when the ``serve`` process that started it dies,
    even by SIGKILL: no worker outlives its supervisor, holding the port."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def create_app(
    settings: Settings,
    *,
    database: Database | None = None,
    embedder: Embedder | None = None,
    caller: Any = None,
    address: str | None = None,
) -> Starlette:
    """Build the app. Tests pass their own database and embedder to share them. With
    ``caller`` (a ``server.services.chain.Caller``), every request acts as that caller and
    no token is asked for: for an application that authenticates its users itself, and
    for tests. ``address``: where it serves, for the line that says it is ready."""
    db = database or Database(settings)
    model = embedder or Embedder.from_settings(settings, workers=_model_threads(settings))
    services = {
        "database": db,
        "embedder": model,
        "settings": settings,
        "identity": caller,
        "callers": Callers(),
        "turn_watch": TurnWatch(
            db,
            interval=settings.subscription_poll_ms / 1000,
            limit=settings.max_subscriptions,
        ),
    }
    metrics = Metrics(database=db, embedder=model)
    schema = build_schema(settings=settings, extensions=[metrics.extension()])
    graphql = _GraphQL(schema, services=services, settings=settings)
    mcp = McpEndpoint(
        Operations(
            schema, database=db, embedder=model, settings=settings, callers=services["callers"]
        ),
        identity=caller,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        owned = database is None
        if db.engine is None:
            await db.connect()
        await model.aload()
        _log.info("agent-memory ready%s", f" on {address}" if address else "")
        try:
            async with mcp.run():
                yield
        finally:
            if owned:
                await db.dispose()
                db.stop()

    async def healthz(request: Request) -> Response:
        database_ok = await db.ping()
        body = {"database": database_ok, "model": model.loaded}
        return JSONResponse(body, status_code=200 if database_ok and model.loaded else 503)

    return Starlette(
        routes=[
            Route(
                "/graphql", GraphQLGuard(graphql, settings=settings, require_token=caller is None)
            ),
            WebSocketRoute("/graphql", graphql),
            Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
            Route("/healthz", healthz),
            Route("/metrics", metrics.endpoint),
            *web.routes(settings),
        ],
        middleware=[Middleware(RequestLog), *web.middleware(settings)],
        lifespan=lifespan,
    )
