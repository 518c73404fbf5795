"""The ownership table (STYLE.md 14): every id-typed field of the schema's arguments and
inputs, the kind of object it names (:mod:`resolvers.kinds`) and what the caller needs of
that object (:class:`Need`), in :data:`FIELDS`; and the walk that finds, in a field's
arguments (a root field's, or a nested field's such as ``Agent.memoryRecords``), every
id they hold, nested ones and lists included, with its rule. :mod:`resolvers.ownership`
applies it. A field the table does not name, or names with a rule that does not apply
where the field is, raises :class:`UnmappedIdField`: its operation is refused (fail
closed).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

from graphql import (
    FieldNode,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLResolveInfo,
    GraphQLScalarType,
)
from graphql.execution.values import VariableValues, get_argument_values

from resolvers.kinds import Kind

ID_SCALARS = ("UUID", "ID")


class Need(Enum):
    """What the caller needs of the object an id names."""

    AGENT_ITSELF = "anchor"  # the runtime of its agent: the agent the operation acts for
    IN_REACH = "member"  # of the anchor's agent, within its turn, session and world
    READ = "read"  # the grants that read it; staged: NOT_FOUND
    READ_MEMORY = "read memory"  # the grants that read the agent's memory (R71)
    READ_SESSIONS = "read sessions"  # the grants that read the agent's sessions (R70)
    DELETE_MEMORY = "delete memory"  # the grants that delete the agent's memory (R71)
    MANAGE_AGENT = "manage agent"  # an admin, or INSERT on <ns>.Agent
    OPEN_SESSION = "open session"  # the agent itself, an admin, or INSERT on <ns>.Session
    EACH = "each"  # read one by one by the field itself (nodes), through read()
    # a nested field's: of the agent of the object the field is on, and readable as READ
    OF_PARENT = "of parent"


# Needs of the mutations of administrators and clients: the others are runtime operations.
API_NEEDS = frozenset({Need.DELETE_MEMORY, Need.MANAGE_AGENT, Need.OPEN_SESSION})
ROOTS = ("Query", "Mutation", "Subscription")

Rule = tuple[Kind | None, Need]
_ANCHOR, _MEMBER = Need.AGENT_ITSELF, Need.IN_REACH
# a native tool's call: its turn, the calling execution, the model call that asked
_TOOL_CALL: dict[str, Rule] = {
    "turnId": (Kind.TURN, _ANCHOR),
    "executionId": (Kind.EXECUTION, _MEMBER),
    "invocationId": (Kind.INVOCATION, _MEMBER),
}


def _lookup(kind: Kind | None) -> dict[str, Rule]:
    return {"id": (kind, Need.READ)}


# The one table: the input type (or "Query.<field>" for a query's arguments) -> its id
# fields -> (the kind each names, None for any Node; what the caller needs of it).
_RULES: dict[str, dict[str, Rule]] = {
    "Query.agent": _lookup(Kind.AGENT),
    "Query.agentVersion": _lookup(Kind.AGENT_VERSION),
    "Query.session": _lookup(Kind.SESSION),
    "Query.turn": _lookup(Kind.TURN),
    "Query.execution": _lookup(Kind.EXECUTION),
    "Query.agentMemory": _lookup(Kind.MEMORY_RECORD),
    "Query.historyEvent": _lookup(Kind.HISTORY_EVENT),
    "Query.node": _lookup(None),
    "Query.nodes": {"ids": (None, Need.EACH)},
    "Query.searchAgentMemory": {"agentId": (Kind.AGENT, Need.READ_MEMORY)},
    "Query.searchSessionHistory": {"agentId": (Kind.AGENT, Need.READ_SESSIONS)},
    "Subscription.sessionTurns": {"sessionId": (Kind.SESSION, Need.READ)},
    "PublishAgentVersionInput": {"agentId": (Kind.AGENT, Need.MANAGE_AGENT)},
    "CreateSessionInput": {"agentId": (Kind.AGENT, Need.OPEN_SESSION)},
    "DeleteAgentMemoryInput": {"id": (Kind.MEMORY_RECORD, Need.DELETE_MEMORY)},
    "BeginTurnInput": {
        "sessionId": (Kind.SESSION, _ANCHOR),
        "agentId": (Kind.AGENT, _ANCHOR),
        "agentVersionId": (Kind.AGENT_VERSION, _MEMBER),
        "replayOf": (Kind.TURN, _MEMBER),
        "retryOf": (Kind.TURN, _MEMBER),
    },
    "CommitTurnInput": {"turnId": (Kind.TURN, _ANCHOR)},
    "RollbackTurnInput": {"turnId": (Kind.TURN, _ANCHOR)},
    "FailTurnInput": {"turnId": (Kind.TURN, _ANCHOR)},
    "StartExecutionInput": {
        "turnId": (Kind.TURN, _ANCHOR),
        "parentExecutionId": (Kind.EXECUTION, _MEMBER),
    },
    "RecordInvocationInput": {"executionId": (Kind.EXECUTION, _ANCHOR)},
    "AddMemoryInput": _TOOL_CALL | {"replaces": (Kind.MEMORY_RECORD, _MEMBER)},
    "ReadMemoryInput": _TOOL_CALL | {"id": (Kind.MEMORY_RECORD, _MEMBER)},
    "DeleteMemoryInput": _TOOL_CALL | {"id": (Kind.MEMORY_RECORD, _MEMBER)},
    "SearchMemoryInput": _TOOL_CALL | {"ids": (Kind.MEMORY_RECORD, _MEMBER)},
    "SearchHistoryInput": _TOOL_CALL | {"ids": (Kind.HISTORY_EVENT, _MEMBER)},
    "RecallInput": _TOOL_CALL,
    "RecordEventsInput": {
        "turnId": (Kind.TURN, _ANCHOR),
        "executionId": (Kind.EXECUTION, _MEMBER),
    },
    "ConversationEventInput": {"toolExecutionId": (Kind.EXECUTION, _MEMBER)},
    "BeginMemoryReviewInput": {"turnId": (Kind.TURN, _ANCHOR)},
    "CompareMemoryCandidatesInput": {"reviewId": (Kind.MEMORY_REVIEW, _ANCHOR)},
    "ApplyMemoryReviewInput": {
        "reviewId": (Kind.MEMORY_REVIEW, _ANCHOR),
        "invocationId": (Kind.INVOCATION, _MEMBER),
    },
    "MemoryDecisionInput": {"recordId": (Kind.MEMORY_RECORD, _MEMBER)},
    # the arguments of nested fields (Agent.memoryRecords)
    "MemoryAsOf": {"turnId": (Kind.TURN, Need.OF_PARENT)},
    "MemoryRecordFilter": {"sessionId": (Kind.SESSION, Need.OF_PARENT)},
}
FIELDS: dict[tuple[str, str], Rule] = {
    (owner, name): rule for owner, fields in _RULES.items() for name, rule in fields.items()
}


class UnmappedIdField(Exception):
    """An id-typed field :data:`FIELDS` does not name: its operation is refused."""


@dataclass(frozen=True, slots=True)
class Slot:
    """One id-typed place of a field's arguments."""

    owner: str  # the FIELDS key's first part
    name: str
    kind: Kind | None
    need: Need


@dataclass(frozen=True, slots=True)
class Named:
    """One id an operation field's arguments hold, where, and what it needs."""

    path: str  # as errors name it: "decisions[1].recordId" inside a mutation's input
    kind: Kind | None
    need: Need
    id: uuid.UUID
    listed: bool = False  # an item of a list of ids (a search's ``ids``)


def _named_type(type_: Any) -> Any:
    while isinstance(type_, GraphQLNonNull | GraphQLList):
        type_ = type_.of_type
    return type_


def _slots(owner: str, name: str, type_: Any, seen: frozenset[str], nested: bool) -> Iterator[Slot]:
    named = _named_type(type_)
    if isinstance(named, GraphQLScalarType) and named.name in ID_SCALARS:
        rule = FIELDS.get((owner, name))
        if rule is None:
            raise UnmappedIdField(f"{owner}.{name} names an id the ownership table does not")
        if (rule[1] is Need.OF_PARENT) != nested:
            # a root field has no parent; a nested field's ids are checked against it only
            where = "a nested field's" if nested else "a root field's"
            raise UnmappedIdField(f"{owner}.{name}: {rule[1].value} is no rule for {where} id")
        yield Slot(owner, name, *rule)
    elif isinstance(named, GraphQLInputObjectType) and named.name not in seen:
        for field_name, field in named.fields.items():
            yield from _slots(named.name, field_name, field.type, seen | {named.name}, nested)


_PLANS: dict[tuple[str, str], tuple[Slot, ...]] = {}


def slots_of(parent: str, field_name: str, field: GraphQLField) -> tuple[Slot, ...]:
    """Every id-typed place of a field's arguments, with its rule (computed once a field:
    the schema does not change; a field without arguments has none). ``parent``: the
    object type the field is on, ``Query`` or ``Mutation`` for a root field. Raises
    :class:`UnmappedIdField`."""
    key = (parent, field_name)
    plan = _PLANS.get(key)
    if plan is None:
        nested = parent not in ROOTS
        plan = _PLANS[key] = tuple(
            slot
            for arg_name, arg in field.args.items()
            for slot in _slots(f"{parent}.{field_name}", arg_name, arg.type, frozenset(), nested)
        )
    return plan


def is_runtime_operation(field_name: str, field: GraphQLField, slots: tuple[Slot, ...]) -> bool:
    """R23: a mutation is the agent's own unless it declares its permission classes or
    one of its ids takes an administrator's or client's need."""
    definition = field.extensions.get("strawberry-definition")
    if getattr(definition, "permission_classes", None):
        return False
    return not any(slot.need in API_NEEDS for slot in slots)


def _walk(
    type_: Any, value: Any, path: str, owner: str, name: str, *, listed: bool = False
) -> Iterator[Named]:
    if value is None:
        return
    if isinstance(type_, GraphQLNonNull):
        yield from _walk(type_.of_type, value, path, owner, name, listed=listed)
    elif isinstance(type_, GraphQLList):
        for i, item in enumerate(value):
            yield from _walk(type_.of_type, item, f"{path}[{i}]", owner, name, listed=True)
    elif isinstance(type_, GraphQLScalarType) and type_.name in ID_SCALARS:
        kind, need = FIELDS[(owner, name)]
        try:
            id_ = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
        except ValueError:
            return  # not an id at all: the field says so (BAD_INPUT)
        yield Named(path, kind, need, id_, listed)
    elif isinstance(type_, GraphQLInputObjectType):
        for field_name, field in type_.fields.items():
            inner = f"{path}.{field_name}" if path else field_name
            yield from _walk(field.type, value.get(field_name), inner, type_.name, field_name)


def argument_values(info: GraphQLResolveInfo[Any]) -> dict[str, Any]:
    """A field's arguments, as the executor coerces them (by their GraphQL names)."""
    field = info.parent_type.fields[info.field_name]
    return arguments_at(field, info.field_nodes[0], info.variable_values)


def arguments_at(field: GraphQLField, node: FieldNode, variable_values: Any) -> dict[str, Any]:
    """The arguments ``node`` gives ``field``, coerced with the operation's variables."""
    variables = variable_values
    if not isinstance(variables, VariableValues):  # strawberry hands on the coerced dict
        variables = VariableValues(sources={}, coerced=dict(variables or {}))
    return get_argument_values(field, node, variables)


def named_ids(
    parent: str, field_name: str, field: GraphQLField, values: dict[str, Any]
) -> list[Named]:
    """The ids a field's arguments hold."""
    found: list[Named] = []
    for arg_name, arg in field.args.items():
        # a mutation's one ``input`` object stands for its arguments: its fields are named
        # as the services name them (``turnId``, ``decisions[0].recordId``)
        start = "" if arg_name == "input" else arg_name
        found.extend(
            _walk(arg.type, values.get(arg_name), start, f"{parent}.{field_name}", arg_name)
        )
    return found
