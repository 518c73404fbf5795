"""The ASGI guard in front of ``/graphql`` (docs/security.md): a body size limit, POST
only with a JSON content type (so a form or a ``text/plain`` request, which a browser
sends cross-site without asking, never runs), a bearer token present, and a wall-clock
timeout that cancels a request only before it sends a COMMIT (:mod:`resolvers.deadline`).
What it refuses never reaches the parser, the database or a resolver."""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from resolvers.deadline import SCOPE_KEY, Deadline
from server.settings import Settings

_JSON = "application/json"


class _TooLarge(Exception):
    pass


_Refusal = tuple[int, bytes, list[tuple[bytes, bytes]]]  # status, body, extra headers


def error_body(message: str, code: str) -> bytes:
    """A GraphQL response of one error with its code, for what is refused before any
    operation runs."""
    return json.dumps(
        {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    ).encode()


def _too_large(limit: int) -> _Refusal:
    return 413, error_body(f"the request body is over {limit} bytes", "PAYLOAD_TOO_LARGE"), []


async def _send_json(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", _JSON.encode()),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, ``None`` without one.
    The scheme's name is case-insensitive (RFC 7235): ``bearer`` and ``BEARER`` work."""
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _media_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").split(";")[0].strip().lower()


class GraphQLGuard:
    """ASGI middleware in front of the GraphQL app: what is refused here never reaches
    the parser, the database or a resolver."""

    def __init__(self, app: ASGIApp, *, settings: Settings, require_token: bool = True) -> None:
        self.app = app
        self.settings = settings
        self.require_token = require_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        refused = self._refusal(scope["method"], headers)
        if refused is not None:
            await _send_json(send, *refused)
            return
        await self._run(scope, receive, send)

    def _refusal(self, method: str, headers: Mapping[str, str]) -> _Refusal | None:
        if method == "GET" and self.settings.dev and "text/html" in headers.get("accept", ""):
            return None  # the GraphiQL page in dev mode; it then POSTs with a token
        if method != "POST":
            return (
                405,
                error_body("GraphQL requests are POST requests", "METHOD_NOT_ALLOWED"),
                [(b"allow", b"POST")],
            )
        if _media_type(headers) != _JSON:
            return (
                415,
                error_body("the content type must be application/json", "UNSUPPORTED_MEDIA_TYPE"),
                [],
            )
        length = headers.get("content-length")
        if length is not None and (
            not length.isdigit() or int(length) > self.settings.max_body_bytes
        ):
            return _too_large(self.settings.max_body_bytes)
        if self.require_token and bearer_token(headers.get("authorization", "")) is None:
            return (
                401,
                error_body("send a token: Authorization: Bearer <token>", "UNAUTHENTICATED"),
                [(b"www-authenticate", b"Bearer")],
            )
        return None

    async def _run(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.settings.max_body_bytes
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        deadline = Deadline(self.settings.query_timeout_ms / 1000)
        try:
            async with deadline.enforced():
                await self.app({**scope, SCOPE_KEY: deadline}, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _send_json(send, *_too_large(limit))
        except TimeoutError:
            if not started:
                await _send_json(
                    send,
                    200,
                    error_body(
                        f"the request took longer than {self.settings.query_timeout_ms} ms",
                        "TIMEOUT",
                    ),
                    [],
                )
