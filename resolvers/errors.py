"""The one place where errors become GraphQL errors.

Domain errors keep their message and gain ``extensions.code`` (and their
details, such as ``field``); a database that cannot be reached is ``UNAVAILABLE``
(HTTP 503: retry later); anything else is masked as ``INTERNAL`` so that no SQL
text, path or stack trace reaches a client. :func:`code_of` says which code an
error gets, for the answer, the metrics and the log alike.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
from graphql import ExecutionResult, GraphQLError, GraphQLSyntaxError
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from strawberry.extensions import SchemaExtension

from server.errors import DomainError, UnavailableError

_log = logging.getLogger("agent_memory.errors")

UNAVAILABLE = UnavailableError("the database is unavailable: nothing was done; retry in a moment")
# SQLSTATEs of a server that cannot take the call: connection exceptions (class 08),
# shutting down or starting up (57P01-57P03), no connection slot left (53300)
_DOWN_STATES = ("57P01", "57P02", "57P03", "53300")


def unavailable(exc: BaseException | None) -> bool:
    """Whether ``exc`` says the database cannot be reached, as opposed to a statement
    that failed (a cancelled statement, 57014, is not an outage)."""
    if isinstance(exc, PoolTimeout):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        exc = exc.orig
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate
        return state is None or state.startswith("08") or state in _DOWN_STATES
    return isinstance(exc, ConnectionError)


def _client_fault(error: GraphQLError) -> bool:
    original = error.original_error
    return original is None or (isinstance(original, GraphQLError) and error.path is None)


def code_of(error: GraphQLError) -> str:
    """The ``extensions.code`` ``error`` has, or will have once mapped."""
    original = error.original_error
    if isinstance(original, DomainError):
        return original.code
    code = (error.extensions or {}).get("code")
    if code:
        return str(code)
    if _client_fault(error):
        parse_failed = isinstance(error, GraphQLSyntaxError)
        return "GRAPHQL_PARSE_FAILED" if parse_failed else "GRAPHQL_VALIDATION_FAILED"
    return UNAVAILABLE.code if unavailable(original) else "INTERNAL"


def to_graphql_error(error: GraphQLError) -> GraphQLError:
    original = error.original_error
    if unavailable(original):
        _log.warning("database unavailable at %s: %s", error.path, type(original).__name__)
        original = UNAVAILABLE
    if isinstance(original, DomainError):
        return GraphQLError(
            original.message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions=original.extensions(),
        )
    if _client_fault(error):
        # syntax errors (the parser's message and location), validation errors, and
        # variables that do not coerce to their declared types (a number for a string, an
        # unknown enum value): the client's query is at fault, and the message names
        # only the client's own input
        extensions = dict(error.extensions or {})
        extensions.setdefault("code", code_of(error))
        return GraphQLError(
            error.message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions=extensions,
        )
    _log.error("unexpected error at %s", error.path, exc_info=original)
    return internal(error)


def internal(error: GraphQLError) -> GraphQLError:
    """The error as a client sees an unexpected one: INTERNAL, nothing of its cause."""
    return GraphQLError(
        "Internal server error.",
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions={"code": "INTERNAL"},
    )


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


class DomainErrors(SchemaExtension):
    """Maps errors after the operation (an outage answers HTTP 503), and closes the
    operation's database session."""

    def on_stream_result(self, result: Any) -> Iterator[None]:
        """Each result a subscription sends, mapped as an operation's errors are, and
        masked as an HTTP answer's are (its transport answers no HTTP)."""
        if result.errors:
            result.errors = mask_uncoded([to_graphql_error(e) for e in result.errors])
        yield

    async def on_operation(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            result = self.execution_context.result
            context = self.execution_context.context
            if result is not None and result.errors:
                result.errors = [to_graphql_error(e) for e in result.errors]
                response = getattr(context, "response", None)
                if response is not None and any(
                    (e.extensions or {}).get("code") == UNAVAILABLE.code for e in result.errors
                ):
                    response.status_code = 503
            close = getattr(context, "close", None)
            if close is not None:
                await close()


def refusal(error: Exception) -> ExecutionResult:
    """The result of an operation refused before it ran."""
    return ExecutionResult(data=None, errors=[GraphQLError(str(error), original_error=error)])
