"""Schema assembly: the one place that puts queries, mutations and extensions together."""

from __future__ import annotations

from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.tools import merge_types
from strawberry.types import ExecutionContext

from resolvers.auth import ApiMutation, Authentication
from resolvers.dashboard import DashboardQuery
from resolvers.documents import OneOperation
from resolvers.errors import DomainErrors
from resolvers.gate import AccessGate
from resolvers.history import HistoryMutation, HistoryQuery
from resolvers.inputs import StorableText
from resolvers.mutations import Mutation as CoreMutation
from resolvers.nodes import NodeQuery
from resolvers.queries import Query as CoreQuery
from resolvers.review_mutations import ReviewMutation
from resolvers.search import SearchMutation
from resolvers.security import schema_extensions
from server.settings import Settings

# Each feature module adds its own root fields here; merge_types joins them.
QUERIES: tuple[type, ...] = (CoreQuery, HistoryQuery, DashboardQuery, NodeQuery)
MUTATIONS: tuple[type, ...] = (
    CoreMutation,
    HistoryMutation,
    SearchMutation,
    ReviewMutation,
    ApiMutation,
)


class _Schema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Logging happens in :mod:`resolvers.errors`; expected errors are not logged."""


def build_schema(
    *, extensions: list[Any] | None = None, settings: Settings | None = None
) -> strawberry.Schema:
    """With ``settings``, the hardening limits of :mod:`resolvers.security` apply. The
    limits run first, then the check that every string argument can be stored, then
    authentication, then the access gate (docs/security.md)."""
    limits = schema_extensions(settings) if settings is not None else []
    return _Schema(
        query=merge_types("Query", QUERIES),
        mutation=merge_types("Mutation", MUTATIONS),
        extensions=[
            DomainErrors,
            OneOperation,
            *limits,
            StorableText,
            Authentication,
            AccessGate,
            *(extensions or []),
        ],
    )


def printed_schema() -> str:
    return build_schema().as_str() + "\n"
