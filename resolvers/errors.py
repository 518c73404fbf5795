"""The one place where errors become GraphQL errors.

Domain errors keep their message and gain ``extensions.code`` (and their
details, such as ``field``); anything else is masked as ``INTERNAL`` so that no
SQL text, path or stack trace reaches a client.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from graphql import ExecutionResult, GraphQLError, GraphQLSyntaxError
from strawberry.extensions import SchemaExtension

from server.errors import DomainError

_log = logging.getLogger("agent_memory.errors")


def to_graphql_error(error: GraphQLError) -> GraphQLError:
    original = error.original_error
    if isinstance(original, DomainError):
        return GraphQLError(
            original.message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions=original.extensions(),
        )
    if original is None or (isinstance(original, GraphQLError) and error.path is None):
        # syntax errors (the parser's message and location), validation errors, and
        # variables that do not coerce to their declared types (a number for a string, an
        # unknown enum value): the client's query is at fault, and the message names
        # only the client's own input
        extensions = dict(error.extensions or {})
        parse_failed = isinstance(error, GraphQLSyntaxError)
        extensions.setdefault(
            "code", "GRAPHQL_PARSE_FAILED" if parse_failed else "GRAPHQL_VALIDATION_FAILED"
        )
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


class DomainErrors(SchemaExtension):
    """Maps errors after the operation, and closes the operation's database session."""

    async def on_operation(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            result = self.execution_context.result
            if result is not None and result.errors:
                result.errors = [to_graphql_error(e) for e in result.errors]
            context = self.execution_context.context
            close = getattr(context, "close", None)
            if close is not None:
                await close()


def refusal(error: Exception) -> ExecutionResult:
    """The result of an operation refused before it ran."""
    return ExecutionResult(data=None, errors=[GraphQLError(str(error), original_error=error)])
