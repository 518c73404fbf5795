"""Prometheus metrics (``GET /metrics``; the list is in docs/operations.md).

Each app has its own ``CollectorRegistry``, so several apps in one process (tests)
count apart. GraphQL operations are counted by a schema extension, which knows the
operation's name once the document is parsed; the embedder's and the connection
pool's state is read when the metrics are scraped.

The labels are bounded, so that no client can grow the page: an operation is counted
under its own name only once the request authenticated and its document validated, and
only for the first :data:`MAX_OPERATIONS` names an app sees; every other request is
``other`` (``unparsed`` when its document did not parse). Only the operator's own
callers claim a name: an admin, or a runtime token called directly (the agents' runtimes,
whose few documents are what the page is for). A client token, which any dashboard or
tool may hold, even one without a grant, is counted under a name only once such a caller
claimed it, else ``other``: no client can take the slots. Its code is the code its
answer carries (:func:`resolvers.errors.code_of`): NOT_FOUND, FORBIDDEN, ..., not the
step that failed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from strawberry.extensions import SchemaExtension

from resolvers.errors import code_of
from server import logs
from server.database import Database
from server.embedding import Embedder

MAX_OPERATIONS = 100  # operation names counted apart; the rest are "other"
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
        self.operations: set[str] = set()

    def label(self, name: str, *, claim: bool) -> str:
        """``name`` once counted apart; else, when the caller may ``claim`` a name and
        fewer than :data:`MAX_OPERATIONS` are counted, ``name`` from now on; else
        ``other``."""
        if name in self.operations:
            return name
        if not claim or len(self.operations) >= MAX_OPERATIONS:
            return "other"
        self.operations.add(name)
        return name

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
        self.validated = False

    def on_execute(self) -> Iterator[None]:
        self.validated = True  # run only for a document that parsed and validated
        yield

    async def on_operation(self) -> AsyncIterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:  # also when a parse error is thrown in here
            context = self.execution_context
            name = _name(context)
            code = _outcome(context)
            label = name
            if context.graphql_document is not None:
                caller = getattr(context.context, "identity", None)
                valid = self.validated and code != "GRAPHQL_VALIDATION_FAILED"
                label = (
                    self.metrics.label(name, claim=_claims(caller))
                    if caller is not None and valid
                    else "other"
                )
            self.metrics.requests.labels(label, code).inc()
            self.metrics.latency.labels(label).observe(time.perf_counter() - started)
            info = logs.current.get()
            if info is not None:
                info.operation, info.code = name, code


def _claims(caller: Any) -> bool:
    """Whether the caller may give an operation name a slot of its own: an admin, or a
    runtime token called directly (not through a tool's chain)."""
    return bool(caller.admin) or (caller.runtime is not None and not caller.via_tool)


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
    """OK, or the code the first error of the answer carries. (Strawberry also keeps an
    execution's errors as ``pre_execution_errors``: the answer's are read first.)"""
    errors = context.result.errors if context.result is not None else None
    errors = errors or context.pre_execution_errors
    if not errors:
        return "OK" if context.graphql_document is not None else "GRAPHQL_PARSE_FAILED"
    if context.graphql_document is None and not (errors[0].extensions or {}).get("code"):
        return "GRAPHQL_PARSE_FAILED"  # a document over the token limit, refused unparsed
    return code_of(errors[0])
