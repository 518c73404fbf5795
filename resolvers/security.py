"""Hardening of the public GraphQL endpoint (docs/security.md).

Two layers, each with a secure default from :class:`server.settings.Settings`:

- schema extensions that reject a document before any resolver runs or any
  SQL is sent: depth, alias and token limits (Strawberry's limiters), a cost
  limit that multiplies the ``first`` of nested connections
  (:mod:`resolvers.cost`), introspection and field suggestions off outside dev
  mode;
- an ASGI guard in front of ``/graphql`` (:mod:`resolvers.guard`): a body size
  limit, POST with a JSON content type only, a bearer token present, and a
  wall-clock timeout.

Errors stay masked by :mod:`resolvers.errors`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from graphql import GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)

from resolvers.cost import cost_limiter
from resolvers.documents import CachedParser
from server.settings import Settings

_SUGGESTION = re.compile(r"\s*Did you mean [^?]*\?")


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
