"""Schema assembly: the one place that puts queries, mutations and extensions together."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.tools import merge_types

from resolvers.errors import DomainErrors
from resolvers.mutations import Mutation as CoreMutation
from resolvers.queries import Query as CoreQuery

# Each feature module adds its own root fields here; merge_types joins them.
QUERIES: tuple[type, ...] = (CoreQuery,)
MUTATIONS: tuple[type, ...] = (CoreMutation,)


class _Schema(strawberry.Schema):
    def process_errors(self, errors: list, execution_context: object = None) -> None:  # type: ignore[type-arg,override]
        """Logging happens in :mod:`resolvers.errors`; expected errors are not logged."""


def build_schema(*, extensions: list[Any] | None = None) -> strawberry.Schema:
    return _Schema(
        query=merge_types("Query", QUERIES),
        mutation=merge_types("Mutation", MUTATIONS),
        extensions=[DomainErrors, *(extensions or [])],
    )


def printed_schema() -> str:
    return build_schema().as_str() + "\n"
