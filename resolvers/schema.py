"""Schema assembly: the one place that puts queries, mutations and extensions together."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.schema.types.base_scalars import DateTimeDefinition
from strawberry.types import ExecutionContext
from strawberry.types.base import get_object_definition

from resolvers.agent_mutations import AgentMutation
from resolvers.auth import ApiMutation, Authentication
from resolvers.dashboard import DashboardQuery
from resolvers.documents import OneOperation
from resolvers.errors import DomainErrors
from resolvers.execution_mutations import ExecutionMutation
from resolvers.gate import AccessGate
from resolvers.history import HistoryMutation, HistoryQuery
from resolvers.ids import ID_DEFINITION, IdArguments
from resolvers.inputs import StorableText
from resolvers.live import OverWebSocket, Subscription
from resolvers.memory_mutations import MemoryMutation
from resolvers.nodes import NodeQuery
from resolvers.queries import Query as CoreQuery
from resolvers.review_mutations import ReviewMutation
from resolvers.search import SearchMutation
from resolvers.security import schema_extensions
from resolvers.turn_mutations import TurnMutation
from server.settings import Settings

# Each feature module adds its own root fields here; _root joins them.
QUERIES: tuple[type, ...] = (CoreQuery, HistoryQuery, DashboardQuery, NodeQuery)
MUTATIONS: tuple[type, ...] = (
    AgentMutation,
    TurnMutation,
    ExecutionMutation,
    MemoryMutation,
    HistoryMutation,
    SearchMutation,
    ReviewMutation,
    ApiMutation,
)


# What a reader of the schema sees of the roots and of the built-in scalars it uses.
_GRANTS = (
    "Every object a field returns is checked against the caller's grants: an agent and its "
    "versions need SELECT on <namespace>.Agent; sessions, turns, executions, transcripts "
    "and kept history SELECT on <namespace>.Session; memory SELECT on "
    "<namespace>.AgentMemory.indexes.* and <namespace>.AgentMemory.document. An object "
    "the caller may not read is FORBIDDEN; named by an id, it is answered as an id that names "
    "nothing (NOT_FOUND, the same message)."
)
QUERY = "Reads for dashboards and tools: agents, sessions, turns, memory and history. " + _GRANTS
MUTATION = (
    "Writes: agents, versions and sessions for administrators and clients; turns, the "
    "native memory and history tools, the conversation and the memory review for an "
    "agent's runtime. " + _GRANTS
)
SCALARS: dict[object, Any] = {
    # ids of one type, in and out (resolvers/ids.py)
    uuid.UUID: ID_DEFINITION,
    strawberry.ID: ID_DEFINITION,
    datetime.datetime: dataclasses.replace(
        DateTimeDefinition,
        description="A date and time in ISO 8601, with its UTC offset, e.g. "
        "2026-01-31T09:30:00.123456+00:00.",
    ),
}


def _root(name: str, parts: tuple[type, ...], description: str) -> type:
    """One root type with the fields of every part (a part may not repeat a field)."""
    fields = [f.name for part in parts for f in get_object_definition(part, strict=True).fields]
    assert len(fields) == len(set(fields)), f"{name} repeats a field"
    return strawberry.type(type(name, parts, {}), description=description)


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
        query=_root("Query", QUERIES, QUERY),
        mutation=_root("Mutation", MUTATIONS, MUTATION),
        subscription=_root(
            "Subscription", (Subscription,), "What readers follow as it happens. " + _GRANTS
        ),
        scalar_overrides=SCALARS,
        extensions=[
            DomainErrors,
            OneOperation,
            *limits,
            StorableText,
            Authentication,
            OverWebSocket,
            IdArguments,
            AccessGate,
            *(extensions or []),
        ],
    )


def printed_schema() -> str:
    return build_schema().as_str() + "\n"
