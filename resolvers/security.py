"""Hardening of the public GraphQL endpoint (docs/security.md).

Two layers, each with a secure default from :class:`server.settings.Settings`:

- schema extensions that reject a document before any resolver runs or any
  SQL is sent: depth, alias and token limits (Strawberry's limiters), a cost
  limit that multiplies the ``first`` of nested connections, introspection and
  field suggestions off outside dev mode;
- an ASGI guard in front of ``/graphql``: a body size limit, POST only with a
  JSON content type (so a form or a ``text/plain`` request, which a browser
  sends cross-site without asking, never runs), a bearer token present, and
  a wall-clock timeout that cancels a request only before it sends a COMMIT
  (:mod:`resolvers.deadline`).

Errors stay masked by :mod:`resolvers.errors`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from graphql import (
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)

from resolvers.deadline import SCOPE_KEY, Deadline
from resolvers.documents import CachedParser
from resolvers.errors import internal
from server.errors import BadInputError
from server.settings import Settings

# Arguments that multiply what a field returns: connections' ``first``, searches' ``limit``.
_log = logging.getLogger("agent_memory.errors")
_SUGGESTION = re.compile(r"\s*Did you mean [^?]*\?")


def _argument(field: FieldNode, name: str, variables: Mapping[str, Any]) -> Any:
    for argument in field.arguments or ():
        if argument.name.value != name:
            continue
        value = argument.value
        if isinstance(value, IntValueNode):
            return int(value.value)
        if isinstance(value, VariableNode):
            return variables.get(value.name.value)
        return None
    return None


class _Cost:
    """Counts the fields a document may resolve: a field under a connection asked for
    ``first: n`` counts n times (once per node), nested connections multiply."""

    def __init__(
        self,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        *,
        maximum: int,
        max_page_size: int,
    ) -> None:
        self.fragments = fragments
        self.variables = variables
        self.maximum = maximum
        self.max_page_size = max_page_size
        self.total = 0

    def walk(self, selection_set: SelectionSetNode, times: int, seen: frozenset[str]) -> None:
        for selection in selection_set.selections:
            if self.total > self.maximum:
                return
            if isinstance(selection, FieldNode):
                self.total += times
                if selection.selection_set is not None:
                    self.walk(selection.selection_set, times * self._multiplier(selection), seen)
            elif isinstance(selection, InlineFragmentNode):
                self.walk(selection.selection_set, times, seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is not None and name not in seen:
                    self.walk(fragment.selection_set, times, seen | {name})

    def _multiplier(self, field: FieldNode) -> int:
        first = _argument(field, "first", self.variables)
        if isinstance(first, int) and not isinstance(first, bool):
            if not 1 <= first <= self.max_page_size:
                raise BadInputError(
                    f"first must be from 1 to {self.max_page_size}", field=field.name.value
                )
            return first
        limit = _argument(field, "limit", self.variables)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 1:
            return min(limit, self.max_page_size)
        return 1


def document_cost(
    document: Any,
    variables: Mapping[str, Any] | None,
    *,
    maximum: int,
    max_page_size: int,
) -> int:
    """The cost of the costliest operation of a parsed document; stops counting once
    past ``maximum``. Raises BAD_INPUT for a ``first`` outside 1..max_page_size."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    worst = 0
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            cost = _Cost(fragments, variables or {}, maximum=maximum, max_page_size=max_page_size)
            cost.walk(definition.selection_set, 1, frozenset())
            worst = max(worst, cost.total)
    return worst


def refusal(error: Exception) -> ExecutionResult:
    """The result of an operation refused before it ran."""
    return ExecutionResult(data=None, errors=[GraphQLError(str(error), original_error=error)])


def cost_limiter(settings: Settings) -> Callable[[], SchemaExtension]:
    """An extension that refuses a valid document whose cost is over the limit, or whose
    ``first`` is out of range, after validation and before execution."""

    class QueryCostLimiter(SchemaExtension):
        def on_execute(self) -> Iterator[None]:
            context = self.execution_context
            if context.result is None and context.graphql_document is not None:
                try:
                    cost = document_cost(
                        context.graphql_document,
                        context.variables,
                        maximum=settings.max_query_cost,
                        max_page_size=settings.max_page_size,
                    )
                    if cost > settings.max_query_cost:
                        raise BadInputError(
                            f"the query may resolve more than {settings.max_query_cost} fields; "
                            "ask for smaller pages or fewer nested connections",
                            field="first",
                        )
                except BadInputError as exc:
                    context.result = refusal(exc)
            yield

    return QueryCostLimiter


class NoSuggestions(SchemaExtension):
    """Strips "Did you mean ...?" from errors, so that a probe learns no field names."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not result.errors:
            return
        result.errors = [
            GraphQLError(
                _SUGGESTION.sub("", e.message),
                nodes=e.nodes,
                source=e.source,
                positions=e.positions,
                path=e.path,
                original_error=e.original_error,
                extensions=e.extensions,
            )
            if _SUGGESTION.search(e.message)
            else e
            for e in result.errors
        ]


def mask_uncoded(errors: list[GraphQLError]) -> list[GraphQLError]:
    """The last net before a response leaves: an error that escaped the mapping of
    :mod:`resolvers.errors` (so has no ``extensions.code``) is masked as INTERNAL."""
    masked = []
    for error in errors:
        if (error.extensions or {}).get("code"):
            masked.append(error)
            continue
        _log.error("unmapped error masked at %s", error.path, exc_info=error.original_error)
        masked.append(internal(error))
    return masked


# Documents parsed and validated are kept, by query text and by document, so that a
# runtime's repeated documents are not validated again (docs/security.md).
DOCUMENT_CACHE_SIZE = 256


def schema_extensions(settings: Settings) -> list[Callable[[], SchemaExtension]]:
    """The limits, as factories (one extension instance per request).

    The validation rules (depth, aliases, and introspection unless ``dev``) are made
    once, so that a validated document is validated again only when the rules change:
    the validation cache is keyed by the schema, the document and the rules.
    """
    rules = [
        *QueryDepthLimiter(max_depth=settings.max_query_depth).validation_rules,
        *MaxAliasesLimiter(max_alias_count=settings.max_aliases).validation_rules,
        *([] if settings.dev else DisableIntrospection().validation_rules),
    ]
    extensions: list[Callable[[], SchemaExtension]] = [
        lambda: MaxTokensLimiter(max_token_count=settings.max_tokens),
        lambda: CachedParser(maxsize=DOCUMENT_CACHE_SIZE),
        lambda: AddValidationRules(rules),
        lambda: ValidationCache(maxsize=DOCUMENT_CACHE_SIZE),
        cost_limiter(settings),
    ]
    if not settings.dev:
        extensions.append(NoSuggestions)
    return extensions


# -- the HTTP guard ----------------------------------------------------------------------

_JSON = "application/json"


class _TooLarge(Exception):
    pass


def error_body(message: str, code: str) -> bytes:
    return json.dumps(
        {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    ).encode()


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

    def _refusal(
        self, method: str, headers: Mapping[str, str]
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]]] | None:
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
            return (
                413,
                error_body(
                    f"the request body is over {self.settings.max_body_bytes} bytes",
                    "PAYLOAD_TOO_LARGE",
                ),
                [],
            )
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
                await _send_json(
                    send,
                    413,
                    error_body(f"the request body is over {limit} bytes", "PAYLOAD_TOO_LARGE"),
                    [],
                )
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
