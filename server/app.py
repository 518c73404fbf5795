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

from server.database import Database
from server.embedding import Embedder
from server.settings import Settings

_log = logging.getLogger("agent_memory")


class _GraphQL(GraphQL):  # type: ignore[type-arg]
    def __init__(self, schema: Any, *, services: dict[str, Any], dev: bool) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql" if dev else None,
            allow_queries_via_get=False,
        )
        self.services = services

    async def get_context(self, request: Any, response: Any = None) -> Any:
        from resolvers.context import make_context

        return make_context(request=request, **self.services)


def create_app(
    settings: Settings,
    *,
    database: Database | None = None,
    embedder: Embedder | None = None,
) -> Starlette:
    """Build the app. Tests pass their own database and embedder to share them."""
    from resolvers.schema import build_schema

    db = database or Database(settings)
    model = embedder or Embedder(
        settings.embedding_model,
        batch_size=settings.embedding_batch_size,
        cache_size=settings.embedding_cache_size,
    )
    services = {"database": db, "embedder": model, "settings": settings}
    graphql = _GraphQL(build_schema(), services=services, dev=settings.dev)
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
            Route("/graphql", graphql, methods=["GET", "POST"]),
            Route("/healthz", healthz),
            Route("/metrics", metrics),
        ],
        lifespan=lifespan,
    )
