"""Ownership is data (R10, R23, R50, R70, R71): every id an operation's arguments name,
nested ones and lists included, is checked against the caller before the field runs.

:data:`FIELDS` is the one table: for each id-typed argument or input field of the schema,
the kind of object it names (:mod:`resolvers.kinds`; whose owner
:mod:`resolvers.owners` finds) and what the caller needs of that object
(:class:`Need`). :func:`check_arguments`, which the access gate calls for every root
field, is the one function that applies it. An id field the table does not name
refuses its field (fail closed), so a new id field cannot skip the check; the test
generated from the schema (tests/api/test_ownership.py) proves every field goes through
it.

The rule (docs/security.md, "Ownership"): a runtime operation acts for one agent, the
owner of its *anchor* (the turn, review, execution, session or agent it is about), which
the caller must be the runtime of (else ``FORBIDDEN``, as before). Every other id it
names must belong to that same agent and be within the anchor's reach: of its turn, its
session, its preview or live world, committed or staged by that turn (else
``NOT_FOUND``: for the agent, an object of another agent, or of its own out of reach,
does not exist where it acts, R10). An id that names nothing is left to the resolver
(``NOT_FOUND``, or left out of a list, as before). A reader's id needs the grants that
read the object (``FORBIDDEN``, as before); what an open turn staged is ``NOT_FOUND`` to
every reader until it commits (R12).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

from graphql import (
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLResolveInfo,
    GraphQLScalarType,
)
from graphql.execution.values import VariableValues, get_argument_values

from resolvers.context import Context
from resolvers.grants import Resource, caller_of, require, require_manage
from resolvers.kinds import Kind
from resolvers.owners import Owner, owners_of
from server.domain.grants import session_requirements
from server.errors import ForbiddenError, NotFoundError

_log = logging.getLogger("agent_memory.errors")

ID_SCALARS = ("UUID", "ID")


class Need(Enum):
    """What the caller needs of the object an id names."""

    AGENT_ITSELF = "anchor"  # the runtime of its agent: the agent the operation acts for
    IN_REACH = "member"  # of the anchor's agent, within its turn, session and world
    READ = "read"  # the grants that read it; staged: NOT_FOUND
    READ_MEMORY = "read memory"  # the grants that read the agent's memory (R71)
    DELETE_MEMORY = "delete memory"  # the grants that delete the agent's memory (R71)
    MANAGE_AGENT = "manage agent"  # an admin, or INSERT on <ns>.Agent
    OPEN_SESSION = "open session"  # the agent itself, an admin, or INSERT on <ns>.Session
    EACH = "each"  # read one by one by the field itself (nodes), through read()


# Needs of the mutations of administrators and clients: the others are runtime operations.
API_NEEDS = frozenset({Need.DELETE_MEMORY, Need.MANAGE_AGENT, Need.OPEN_SESSION})

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
}
FIELDS: dict[tuple[str, str], Rule] = {
    (owner, name): rule for owner, fields in _RULES.items() for name, rule in fields.items()
}


class UnmappedIdField(Exception):
    """An id-typed field :data:`FIELDS` does not name: its operation is refused."""


@dataclass(frozen=True, slots=True)
class Slot:
    """One id-typed place of a root field's arguments."""

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


@dataclass(frozen=True, slots=True)
class Acting:
    """The agent an operation's objects belong to (for the mutation's selection check)."""

    agent_id: uuid.UUID
    namespace: str


def _named_type(type_: Any) -> Any:
    while isinstance(type_, GraphQLNonNull | GraphQLList):
        type_ = type_.of_type
    return type_


def _slots(owner: str, name: str, type_: Any, seen: frozenset[str]) -> Iterator[Slot]:
    named = _named_type(type_)
    if isinstance(named, GraphQLScalarType) and named.name in ID_SCALARS:
        rule = FIELDS.get((owner, name))
        if rule is None:
            raise UnmappedIdField(f"{owner}.{name} names an id the ownership table does not")
        yield Slot(owner, name, *rule)
    elif isinstance(named, GraphQLInputObjectType) and named.name not in seen:
        for field_name, field in named.fields.items():
            yield from _slots(named.name, field_name, field.type, seen | {named.name})


_PLANS: dict[tuple[str, str], tuple[Slot, ...]] = {}


def slots_of(parent: str, field_name: str, field: GraphQLField) -> tuple[Slot, ...]:
    """Every id-typed place of a root field's arguments, with its rule (computed once a
    field: the schema does not change). Raises :class:`UnmappedIdField`."""
    key = (parent, field_name)
    if key not in _PLANS:
        _PLANS[key] = tuple(
            slot
            for arg_name, arg in field.args.items()
            for slot in _slots(f"{parent}.{field_name}", arg_name, arg.type, frozenset())
        )
    return _PLANS[key]


def is_runtime_operation(field_name: str, field: GraphQLField, slots: tuple[Slot, ...]) -> bool:
    """R23: a mutation is the agent's own unless it declares its permission classes or
    one of its ids takes an administrator's or client's need."""
    definition = field.extensions.get("strawberry-definition")
    if getattr(definition, "permission_classes", None):
        return False
    return not any(slot.need in API_NEEDS for slot in slots)


def _walk(type_: Any, value: Any, path: str, owner: str, name: str) -> Iterator[Named]:
    if value is None:
        return
    if isinstance(type_, GraphQLNonNull):
        yield from _walk(type_.of_type, value, path, owner, name)
    elif isinstance(type_, GraphQLList):
        for i, item in enumerate(value):
            yield from _walk(type_.of_type, item, f"{path}[{i}]", owner, name)
    elif isinstance(type_, GraphQLScalarType) and type_.name in ID_SCALARS:
        kind, need = FIELDS[(owner, name)]
        try:
            id_ = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
        except ValueError:
            return  # not an id at all: the field says so (BAD_INPUT)
        yield Named(path, kind, need, id_)
    elif isinstance(type_, GraphQLInputObjectType):
        for field_name, field in type_.fields.items():
            inner = f"{path}.{field_name}" if path else field_name
            yield from _walk(field.type, value.get(field_name), inner, type_.name, field_name)


def argument_values(info: GraphQLResolveInfo[Any]) -> dict[str, Any]:
    """A root field's arguments, as the executor coerces them (by their GraphQL names)."""
    field = info.parent_type.fields[info.field_name]
    variables: Any = info.variable_values
    if not isinstance(variables, VariableValues):  # strawberry hands on the coerced dict
        variables = VariableValues(sources={}, coerced=dict(variables or {}))
    return get_argument_values(field, info.field_nodes[0], variables)


def named_ids(
    parent: str, field_name: str, field: GraphQLField, values: dict[str, Any]
) -> list[Named]:
    """The ids a root field's arguments hold."""
    found: list[Named] = []
    for arg_name, arg in field.args.items():
        # a mutation's one ``input`` object stands for its arguments: its fields are named
        # as the services name them (``turnId``, ``decisions[0].recordId``)
        start = "" if arg_name == "input" else arg_name
        found.extend(
            _walk(arg.type, values.get(arg_name), start, f"{parent}.{field_name}", arg_name)
        )
    return found


async def _owners(context: Context, named: list[Named]) -> dict[uuid.UUID, Owner]:
    wanted: dict[Kind, list[uuid.UUID]] = {}
    for n in named:
        for kind in [n.kind] if n.kind is not None else list(Kind):
            wanted.setdefault(kind, []).append(n.id)
    found = await owners_of(context, wanted)
    by_id: dict[uuid.UUID, Owner] = {}
    for n in named:
        for kind in [n.kind] if n.kind is not None else list(Kind):
            owner = found.get((kind, n.id))
            if owner is not None:
                by_id[n.id] = owner
    return by_id


@dataclass(frozen=True, slots=True)
class Place:
    """Where a runtime operation acts: its anchor's agent, session, turn and world."""

    agent_id: uuid.UUID
    namespace: str
    session_id: uuid.UUID | None
    turn_id: uuid.UUID | None
    preview: bool

    @classmethod
    def of(cls, owner: Owner) -> Place:
        return cls(owner.agent_id, owner.namespace, owner.session_id, owner.turn_id, owner.preview)


_OF_TURN = frozenset({Kind.EXECUTION, Kind.INVOCATION, Kind.TRANSCRIPT_EVENT, Kind.OUTPUT_USE})
_OF_SESSION = frozenset({Kind.SESSION, Kind.TURN, Kind.MEMORY_REVIEW})
_HISTORY = frozenset({Kind.HISTORY_EVENT, Kind.HISTORY_PART})
_MEMORY = frozenset({Kind.MEMORY_RECORD, Kind.MEMORY_VERSION})


def reaches(place: Place, owner: Owner) -> bool:
    """Whether an operation acting at ``place`` may name an object of its own agent
    (R11–R13, R61, R64): what belongs to a turn, only from that turn; to a session, only
    from that session; a session-scope record, from its session; a preview turn's
    records and history, only from a preview turn; what an open turn staged, only from
    that turn."""
    kind = owner.kind
    if kind in _OF_TURN:
        return owner.turn_id == place.turn_id
    if kind in _OF_SESSION:
        return owner.session_id == place.session_id
    if kind in _HISTORY:
        return owner.session_id == place.session_id and (place.preview or not owner.preview)
    if kind in _MEMORY:
        return (
            (owner.scope == "AGENT" or owner.session_id == place.session_id)
            and (place.preview or not owner.preview)
            and (not owner.staged or owner.turn_id == place.turn_id)
        )
    return True  # an agent's own agent and versions


def _where(place: Place, owner: Owner) -> str:
    if owner.kind in _OF_TURN:
        return "in this turn"
    if owner.kind in _OF_SESSION or (
        owner.kind in _HISTORY and owner.session_id != place.session_id
    ):
        return "in this session"
    return "this turn can name"


def _member(place: Place | None, n: Named, owner: Owner) -> None:
    """NOT_FOUND for an id out of the anchor's reach: of another agent (R10), or of this
    one but not where the operation acts. For the agent, that object does not exist."""
    if place is None:  # no anchor known: the resolver refuses the call (NOT_FOUND)
        return
    if owner.agent_id != place.agent_id:
        where = "of this agent"
    elif not reaches(place, owner):
        where = _where(place, owner)
    else:
        return
    raise NotFoundError(f"no {owner.kind.label} {n.id} {where}", field=n.path)


async def prefetch(context: Context, ids: list[uuid.UUID]) -> None:
    """Find the owners of ids of any kind in one statement, for the :func:`read` of each
    that follows (``nodes``)."""
    await _owners(context, [Named("ids", None, Need.EACH, i) for i in ids])


async def read(context: Context, kind: Kind | None, id_: uuid.UUID) -> Owner:
    """The owner of the object a reader names, if the caller may read it: NOT_FOUND for
    none (and for what an open turn staged, R12), FORBIDDEN without the grants of its
    kind (R70, R71). ``kind`` None: any kind (``node``). The one check of ``node``,
    ``nodes`` and every typed lookup."""
    owner = (await _owners(context, [Named("id", kind, Need.READ, id_)])).get(id_)
    if owner is None or owner.staged:
        what = "object" if kind is None else kind.label
        raise NotFoundError(f"no {what} with id {id_}")
    for resource in owner.kind.resources(memory=owner.memory):
        await require(context, resource, owner.agent_id, owner.namespace)
    return owner


async def _api(context: Context, need: Need, owner: Owner) -> None:
    caller = caller_of(context)
    if need is Need.READ_MEMORY:
        await require(context, Resource.MEMORY, owner.agent_id, owner.namespace)
    elif need is Need.DELETE_MEMORY:
        if owner.staged:
            raise NotFoundError(f"no memory record with id {owner.id}")
        await require(context, Resource.MEMORY_DELETE, owner.agent_id, owner.namespace)
    elif need is Need.MANAGE_AGENT:
        require_manage(context, owner.namespace)
    elif need is Need.OPEN_SESSION and not caller.admin:
        decision = caller.decide(
            agent_id=owner.agent_id,
            namespace=owner.namespace,
            requirements=session_requirements(owner.namespace, "INSERT"),
        )
        if not decision.allowed:
            raise ForbiddenError(f"not allowed: {decision.reason}")


async def check_arguments(context: Context, info: GraphQLResolveInfo[Any]) -> Acting | None:
    """Refuse a root field whose arguments name what the caller may not (the module's
    rule), before it runs; the agent its objects belong to, when one is named."""
    field = info.parent_type.fields[info.field_name]
    return await check(context, info.parent_type.name, info.field_name, field, info)


async def check(
    context: Context,
    parent: str,
    field_name: str,
    field: GraphQLField,
    arguments: GraphQLResolveInfo[Any] | dict[str, Any],
) -> Acting | None:
    """:func:`check_arguments` of a root field given its (coerced) argument values, or
    the resolve info to read them from."""
    try:
        slots = slots_of(parent, field_name, field)
    except UnmappedIdField:
        _log.error("%s refused: an id field has no ownership rule", field_name)
        raise
    caller = caller_of(context)
    runtime = parent == "Mutation" and is_runtime_operation(field_name, field, slots)
    if runtime and (caller.runtime is None or caller.via_tool):
        raise ForbiddenError(f"{field_name} is for the agent itself: use its runtime token")
    if not slots:
        return None
    values = arguments if isinstance(arguments, dict) else argument_values(arguments)
    named = [n for n in named_ids(parent, field_name, field, values) if n.need is not Need.EACH]
    if not named:
        return None
    owners = await _owners(context, named)
    place: Place | None = None
    acting: Acting | None = None
    for n in sorted(named, key=lambda n: n.need is not Need.AGENT_ITSELF):
        owner = owners.get(n.id)
        if owner is None:
            continue  # names nothing: the resolver's NOT_FOUND
        if n.need is Need.READ:
            await read(context, n.kind, n.id)
        elif n.need is Need.AGENT_ITSELF:
            if not caller.is_agent(agent_id=owner.agent_id, namespace=owner.namespace):
                raise ForbiddenError(f"this runtime token does not act for agent {owner.agent_id}")
            if place is None:
                place = Place.of(owner)
            else:  # a second anchor (beginTurn's agentId beside its sessionId)
                _member(place, n, owner)
        elif n.need is Need.IN_REACH:
            _member(place, n, owner)
        else:
            await _api(context, n.need, owner)
        acting = acting or Acting(owner.agent_id, owner.namespace)
    return Acting(place.agent_id, place.namespace) if place is not None else acting
