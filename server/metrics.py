"""Prometheus metrics (``GET /metrics``; the list is in docs/operations.md).

Each app has its own ``CollectorRegistry``, so several apps in one process (tests)
count apart. GraphQL operations are counted by a schema extension, which knows the
operation's name once the document is parsed; the embedder's and the connection
pool's state is read when the metrics are scraped.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from strawberry.extensions import SchemaExtension

from server import logs
from server.database import Database
from server.embedding import Embedder

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """The registry of one app and the metrics its requests update."""

    def __init__(self, *, database: Database, embedder: Embedder) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "agent_memory_graphql_requests",
            "GraphQL operations by operation name and outcome code (OK or the first "
            "error's extensions.code).",
            ["operation", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "agent_memory_graphql_request_duration_seconds",
            "Time to answer a GraphQL operation, parsing included.",
            ["operation"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_State(database, embedder))

    async def endpoint(self, request: Request) -> Response:
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encoder(self.registry), media_type=content_type)

    def extension(self) -> Callable[[], SchemaExtension]:
        """A factory of the schema extension that counts operations in this registry."""
        return lambda: _Operations(self)


class _State(Collector):
    """Values owned by the embedder and the pool, read at scrape time."""

    def __init__(self, database: Database, embedder: Embedder) -> None:
        self.database = database
        self.embedder = embedder
        self.started = time.monotonic()

    def collect(self) -> Iterable[Metric]:
        yield GaugeMetricFamily(
            "agent_memory_uptime_seconds",
            "Seconds since the app was built.",
            value=time.monotonic() - self.started,
        )
        yield CounterMetricFamily(
            "agent_memory_embedding_forward_passes",
            "Forward passes of the embedding model.",
            value=self.embedder.forward_passes,
        )
        yield GaugeMetricFamily(
            "agent_memory_embedding_queue_depth",
            "Texts waiting for a forward pass.",
            value=self.embedder.queue_depth,
        )
        pool: Any = self.database.engine.pool if self.database.engine is not None else None
        if pool is not None and hasattr(pool, "checkedout"):
            for name, text, value in (
                ("size", "Connections the pool keeps open.", pool.size()),
                ("checked_out", "Connections in use by a request.", pool.checkedout()),
                ("overflow", "Connections open beyond the pool size.", max(pool.overflow(), 0)),
            ):
                yield GaugeMetricFamily(f"agent_memory_db_pool_{name}", text, value=value)


class _Operations(SchemaExtension):
    """Counts each operation by name and outcome and notes both on the request log line.
    An operation without a name is named by its root fields (``query:agent,agents``)."""

    def __init__(self, metrics: Metrics) -> None:
        super().__init__()
        self.metrics = metrics

    async def on_operation(self) -> AsyncIterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:  # also when a parse error is thrown in here
            context = self.execution_context
            name = _name(context)
            code = _outcome(context)
            self.metrics.requests.labels(name, code).inc()
            self.metrics.latency.labels(name).observe(time.perf_counter() - started)
            info = logs.current.get()
            if info is not None:
                info.operation, info.code = name, code


def _name(context: Any) -> str:
    if context.graphql_document is None:
        return "unparsed"
    if context.operation_name:
        return str(context.operation_name)[:64]
    operation = context._get_first_operation()
    if operation is None:
        return "none"
    fields = sorted(
        {sel.name.value for sel in operation.selection_set.selections if hasattr(sel, "name")}
    )
    return f"{operation.operation.value}:{','.join(fields)}"[:64]


def _outcome(context: Any) -> str:
    """OK, or the first error's code; an uncoded error is named by the step that failed."""
    errors = context.pre_execution_errors or (
        context.result.errors if context.result is not None else None
    )
    if not errors:
        return "OK" if context.graphql_document is not None else "GRAPHQL_PARSE_FAILED"
    code = (errors[0].extensions or {}).get("code")
    if code:
        return str(code)
    if context.graphql_document is None:
        return "GRAPHQL_PARSE_FAILED"
    if context.pre_execution_errors:
        return "GRAPHQL_VALIDATION_FAILED"
    return "INTERNAL"
