"""Schema assembly: the one place that puts queries, mutations and extensions together."""

from __future__ import annotations

import strawberry
from strawberry.extensions import SchemaExtension

from resolvers.errors import DomainErrors
from resolvers.mutations import Mutation
from resolvers.queries import Query


class _Schema(strawberry.Schema):
    def process_errors(self, errors: list, execution_context: object = None) -> None:  # type: ignore[type-arg,override]
        """Logging happens in :mod:`resolvers.errors`; expected errors are not logged."""


def build_schema(*, extensions: list[type[SchemaExtension] | SchemaExtension] | None = None
                 ) -> strawberry.Schema:
    return _Schema(
        query=Query,
        mutation=Mutation,
        extensions=[DomainErrors, *(extensions or [])],
    )


def printed_schema() -> str:
    return build_schema().as_str() + "\n"
