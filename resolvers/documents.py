"""Parsing a request's document: the cache, and which operation runs.

- :class:`CachedParser` is Strawberry's ``ParserCache`` except for a document that
  does not parse: it leaves that one to Strawberry's own parse, which answers the
  syntax error as a result. Raised from the extension's hook, the error would skip
  the error mapping of :mod:`resolvers.errors` and reach the client as ``INTERNAL``.
  Failures are not cached, so nothing is parsed twice that was parsed once before.
- :class:`OneOperation` refuses a document with several operations and no
  ``operationName``: which to run is the client's to say (GraphQL-over-HTTP), and
  Strawberry would otherwise run the first. It is refused
  as Strawberry refuses an ``operationName`` the document does not hold: over HTTP,
  status 400 with code ``BAD_REQUEST``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress

from graphql import GraphQLError, OperationDefinitionNode
from strawberry.extensions import ParserCache, SchemaExtension
from strawberry.schema.exceptions import CannotGetOperationTypeError


class CachedParser(ParserCache):
    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        with suppress(GraphQLError):  # Strawberry parses it again and answers the error
            context.graphql_document = self.cached_parse_document(
                context.query, **context.parse_options
            )
        yield


class NoOperationChosenError(CannotGetOperationTypeError):
    def __init__(self) -> None:
        super().__init__(None)

    def as_http_error_reason(self) -> str:
        return "the document holds several operations: name the one to run in operationName"


class OneOperation(SchemaExtension):
    def on_parse(self) -> Iterator[None]:
        yield
        context = self.execution_context
        # ``operation_name`` falls back to the first operation's name: the name the
        # request gave is kept apart
        asked = context._provided_operation_name
        if asked is None and context.graphql_document is not None:
            operations = [
                d
                for d in context.graphql_document.definitions
                if isinstance(d, OperationDefinitionNode)
            ]
            if len(operations) > 1:
                raise NoOperationChosenError
