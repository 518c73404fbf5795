"""Ownership is data (R10, R23, R50, R70, R71): every id a field's arguments name,
nested ones and lists included, is checked against the caller before the field runs.

:data:`resolvers.id_fields.FIELDS` is the one table: for each id-typed argument or
input field of the schema, the kind of object it names (:mod:`resolvers.kinds`; whose
owner :mod:`resolvers.owners` finds) and what the caller needs of that object.
:func:`check_arguments`, which the access gate calls for every root field, and
:func:`check_on`, which it calls for a nested field that takes ids (and
:mod:`resolvers.selection` for those a mutation's answer asks for, before it writes),
are the functions that apply it. An id field the table does not name
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
every reader until it commits (R12). A nested field's id (``Agent.memoryRecords``'
``asOf.turnId``, ``filter.sessionId``) is anchored on the object the field is on: it
must name an object of that object's agent (else ``NOT_FOUND``, as for one that names
nothing, R10), which the caller may read as a reader's id.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLField, GraphQLResolveInfo

from resolvers.context import Context
from resolvers.grants import Resource, caller_of, require, require_manage
from resolvers.id_fields import (
    Named,
    Need,
    Slot,
    UnmappedIdField,
    argument_values,
    is_runtime_operation,
    named_ids,
    slots_of,
)
from resolvers.kinds import Kind
from resolvers.owners import Owner, owners_of
from server.domain.grants import session_requirements
from server.errors import ForbiddenError, NotFoundError

_log = logging.getLogger("agent_memory.errors")


@dataclass(frozen=True, slots=True)
class Acting:
    """The agent an operation's objects belong to (for the mutation's selection check)."""

    agent_id: uuid.UUID
    namespace: str


async def _owners(
    context: Context, named: list[Named]
) -> dict[tuple[Kind | None, uuid.UUID], Owner]:
    """The owner of each named id, by (its field's kind, the id); None for any kind."""
    wanted: dict[Kind, list[uuid.UUID]] = {}
    for n in named:
        for kind in [n.kind] if n.kind is not None else list(Kind):
            wanted.setdefault(kind, []).append(n.id)
    found = await owners_of(context, wanted)
    owners: dict[tuple[Kind | None, uuid.UUID], Owner] = {}
    for n in named:
        for kind in [n.kind] if n.kind is not None else list(Kind):
            owner = found.get((kind, n.id))
            if owner is not None:
                owners[(n.kind, n.id)] = owner
    return owners


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


def _member(place: Place | None, n: Named, owner: Owner, *, acts_for_it: bool) -> None:
    """NOT_FOUND for an id out of the anchor's reach: of another agent (R10), or of this
    one but not where the operation acts. For the agent, that object does not exist.
    Without an anchor (none given, or one that names nothing, which the resolver then
    refuses) it must at least be of an agent the caller acts for."""
    if place is None:
        if acts_for_it:
            return
        where = "of this agent"
    elif owner.agent_id != place.agent_id:
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
    owner = (await _owners(context, [Named("id", kind, Need.READ, id_)])).get((kind, id_))
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
    elif need is Need.READ_SESSIONS:
        await require(context, Resource.SESSION, owner.agent_id, owner.namespace)
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


def _plan(parent: str, field_name: str, field: GraphQLField) -> tuple[Slot, ...]:
    try:
        return slots_of(parent, field_name, field)
    except UnmappedIdField:
        _log.error("%s.%s refused: an id field has no ownership rule", parent, field_name)
        raise


def takes_ids(parent: str, field_name: str, field: GraphQLField) -> bool:
    """Whether the field's arguments may name an id (its plan is made once)."""
    return bool(_plan(parent, field_name, field))


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
    slots = _plan(parent, field_name, field)
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
        owner = owners.get((n.kind, n.id))
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
                _member(place, n, owner, acts_for_it=True)
        elif n.need is Need.IN_REACH:
            acts = caller.is_agent(agent_id=owner.agent_id, namespace=owner.namespace)
            _member(place, n, owner, acts_for_it=acts)
        else:
            await _api(context, n.need, owner)
        acting = acting or Acting(owner.agent_id, owner.namespace)
    return Acting(place.agent_id, place.namespace) if place is not None else acting


async def check_on(
    context: Context,
    agent_id: uuid.UUID | None,
    parent: str,
    field_name: str,
    field: GraphQLField,
    arguments: GraphQLResolveInfo[Any] | dict[str, Any],
) -> None:
    """Refuse a nested field (``parent``.``field_name``, on an object of agent
    ``agent_id``) whose arguments name what the caller may not, before it runs: every id
    must name an object of that agent (else NOT_FOUND, alike for another agent's object
    and for none at all, R10) that the caller may read (:func:`read`: FORBIDDEN without
    the grants of its kind, R70, R71). ``agent_id`` None: the object is of no agent yet
    (in the answer of a mutation that creates it), and no id names anything of it."""
    slots = _plan(parent, field_name, field)
    if not slots:
        return
    values = arguments if isinstance(arguments, dict) else argument_values(arguments)
    named = named_ids(parent, field_name, field, values)
    owners = await _owners(context, named)
    for n in named:
        owner = owners.get((n.kind, n.id))
        if owner is None or owner.agent_id != agent_id:
            what = "object" if n.kind is None else n.kind.label
            raise NotFoundError(f"no {what} {n.id} of this agent", field=n.path)
        await read(context, n.kind, n.id)
