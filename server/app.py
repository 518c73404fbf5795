"""The ASGI application. Nothing is built at import: ``create_app(settings)`` builds
the database, the embedder and the schema inside the Starlette lifespan."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from strawberry.asgi import GraphQL

from server import web
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings

_log = logging.getLogger("agent_memory")


class _GraphQL(GraphQL):
    def __init__(self, schema: Any, *, services: dict[str, Any], dev: bool) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql" if dev else None,
            allow_queries_via_get=False,
        )
        self.services = services

    @property
    def graphql_ide_html(self) -> str:
        return web.graphiql_html()

    async def process_result(self, request: Any, result: Any) -> Any:
        from resolvers.security import mask_uncoded

        if result.errors:
            result.errors = mask_uncoded(result.errors)
        return await super().process_result(request, result)

    async def get_context(self, request: Any, response: Any = None) -> Any:
        from resolvers.context import make_context

        return make_context(
            request=request,
            response=response,
            credentials=_credentials(request),
            **self.services,
        )


def _credentials(request: Any) -> Any:
    """The bearer token and the chain headers (docs/security.md); resolved into the
    caller by ``resolvers.auth.Authentication`` once the document passed the limits."""
    from resolvers.context import Credentials

    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme != "Bearer" or not token.strip():
        return None
    return Credentials(
        token=token.strip(),
        execution=request.headers.get("x-agent-memory-execution"),
        tool=request.headers.get("x-agent-memory-tool"),
    )


def create_app(
    settings: Settings,
    *,
    database: Database | None = None,
    embedder: Embedder | None = None,
    caller: Any = None,
) -> Starlette:
    """Build the app. Tests pass their own database and embedder to share them. With
    ``caller`` (a ``server.services.chain.Caller``), every request acts as that caller and
    no token is asked for: for an application that authenticates its users itself, and
    for tests."""
    from resolvers.schema import build_schema
    from resolvers.security import GraphQLGuard

    db = database or Database(settings)
    model = embedder or Embedder(
        settings.embedding_model,
        batch_size=settings.embedding_batch_size,
        cache_size=settings.embedding_cache_size,
        backend=settings.embedding_backend,
        cache_dir=settings.embedding_cache_dir,
    )
    services = {"database": db, "embedder": model, "settings": settings, "identity": caller}
    graphql = _GraphQL(build_schema(settings=settings), services=services, dev=settings.dev)
    started = time.monotonic()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        owned = database is None
        if db.engine is None:
            await db.connect()
        await model.aload()
        _log.info("agent-memory ready")
        try:
            yield
        finally:
            if owned:
                await db.dispose()
                db.stop()

    async def healthz(request: Request) -> Response:
        database_ok = await db.ping()
        body = {"database": database_ok, "model": model.loaded}
        return JSONResponse(body, status_code=200 if database_ok and model.loaded else 503)

    async def metrics(request: Request) -> Response:
        lines = [
            "# TYPE agent_memory_uptime_seconds gauge",
            f"agent_memory_uptime_seconds {time.monotonic() - started:.3f}",
            "# TYPE agent_memory_embedding_forward_passes_total counter",
            f"agent_memory_embedding_forward_passes_total {model.forward_passes}",
        ]
        return PlainTextResponse("\n".join(lines) + "\n")

    return Starlette(
        routes=[
            Route(
                "/graphql", GraphQLGuard(graphql, settings=settings, require_token=caller is None)
            ),
            Route("/healthz", healthz),
            Route("/metrics", metrics),
            *web.routes(),
        ],
        middleware=web.middleware(settings),
        lifespan=lifespan,
    )
