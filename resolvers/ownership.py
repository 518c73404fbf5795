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

The rule (docs/security.md, "Ownership" and "Refusals look like absence"): a runtime
operation acts for one agent, the owner of its *anchor* (the turn, review, execution,
session or agent it is about), which the caller must be the runtime of. Every other id it
names must belong to that same agent and be within the anchor's reach: of its turn, its
session, its preview or live world, committed or staged by that turn (else ``NOT_FOUND``
saying where, for the agent's own object out of reach). A reader's id needs the grants
that read the object. And whatever the need, an id that names nothing the caller may know
of (none at all, another owner's object it may not read, what another open turn staged,
R10, R12) is answered as one that names nothing: ``NOT_FOUND``, the same message, naming
only the id sent (:func:`absent`); in a search's list of ids it is left out. A refusal
says ``FORBIDDEN``, with its reason, only for an object the caller may read. A nested
field's id (``Agent.memoryRecords``' ``asOf.turnId``, ``filter.sessionId``) is anchored on
the object the field is on: it must name an object of that object's agent that the
caller may read (else ``NOT_FOUND``, as for one that names nothing, R10).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLField, GraphQLResolveInfo

from resolvers.context import Context
from resolvers.grants import Resource, caller_of, decide, require, require_manage
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
    """The agent an operation's objects belong to (for the mutation's selection check),
    and the turn a runtime operation acts in, whose staged memory its answer shows."""

    agent_id: uuid.UUID
    namespace: str
    turn_id: uuid.UUID | None = None


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


def absent(kind: Kind | None, id_: uuid.UUID, field: str | None = None) -> NotFoundError:
    """The one answer for an id that names nothing the caller may know of: an unknown id,
    and one the caller may not read (another owner's, or what an open turn staged), alike
    in code and message, so that a refusal never tells that an object exists (docs/
    security.md, "Refusals look like absence"). It names only the id the caller sent."""
    what = "object" if kind is None else kind.label
    details = {} if field is None else {"field": field}
    return NotFoundError(f"no {what} with id {id_}", **details)


async def readable(context: Context, owner: Owner) -> bool:
    """Whether the caller may read the object (and so may learn that it exists): not
    staged by an open turn (R12), and every grant of its kind allowed (R70, R71)."""
    if owner.staged:
        return False
    for resource in owner.kind.resources(memory=owner.memory):
        if not (await decide(context, resource, owner.agent_id, owner.namespace)).allowed:
            return False
    return True


def _member(place: Place | None, n: Named, owner: Owner, *, acts_for_it: bool) -> bool:
    """Whether an id may be named where the operation acts; raises NOT_FOUND for one of
    its own agent's objects out of the anchor's reach, saying where. False for what, for
    the agent, does not exist (R10, R12): another agent's object, and what another open
    turn staged; answered as an unknown id is. Without an anchor (none given) it must at
    least be of an agent the caller acts for."""
    if place is None:
        return acts_for_it
    if owner.agent_id != place.agent_id:
        return False
    if owner.staged and owner.turn_id != place.turn_id:
        return False
    if not reaches(place, owner):
        raise NotFoundError(f"no {owner.kind.label} {n.id} {_where(place, owner)}", field=n.path)
    return True


async def prefetch(context: Context, ids: list[uuid.UUID]) -> None:
    """Find the owners of ids of any kind in one statement, for the :func:`read` of each
    that follows (``nodes``)."""
    await _owners(context, [Named("ids", None, Need.EACH, i) for i in ids])


async def read(context: Context, kind: Kind | None, id_: uuid.UUID) -> Owner:
    """The owner of the object a reader names, if the caller may read it: NOT_FOUND,
    alike, for none, for what an open turn staged (R12) and for an object the caller
    has not the grants of its kind to read (R70, R71). ``kind`` None: any kind
    (``node``). The one check of ``node``, ``nodes`` and every typed lookup."""
    owner = (await _owners(context, [Named("id", kind, Need.READ, id_)])).get((kind, id_))
    if owner is None or not await readable(context, owner):
        raise absent(kind, id_)
    return owner


async def _api(context: Context, n: Named, owner: Owner) -> None:
    """An administrator's or client's id: refused, FORBIDDEN with the reason, only when
    the caller may read the object it names; else as an unknown id."""
    if not await readable(context, owner):
        try:
            await _allowed(context, n.need, owner)
        except ForbiddenError:
            raise absent(n.kind, n.id, n.path) from None
        if owner.staged:  # R12: what an open turn staged is no reader's
            raise absent(n.kind, n.id, n.path)
    else:
        await _allowed(context, n.need, owner)


async def _allowed(context: Context, need: Need, owner: Owner) -> None:
    caller = caller_of(context)
    if need is Need.READ_MEMORY:
        await require(context, Resource.MEMORY, owner.agent_id, owner.namespace)
    elif need is Need.READ_SESSIONS:
        await require(context, Resource.SESSION, owner.agent_id, owner.namespace)
    elif need is Need.DELETE_MEMORY:
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
        if n.need is Need.READ:
            owner = await read(context, n.kind, n.id)
        elif owner is None:
            if n.listed:
                continue  # a search's ids: one that names nothing is left out
            raise absent(n.kind, n.id, n.path)
        elif n.need is Need.AGENT_ITSELF:
            if not caller.is_agent(agent_id=owner.agent_id, namespace=owner.namespace):
                if await readable(context, owner):
                    raise ForbiddenError(
                        f"this runtime token does not act for this {owner.kind.label}'s agent"
                    )
                raise absent(n.kind, n.id, n.path)
            if place is None:
                place = Place.of(owner)
            elif not _member(place, n, owner, acts_for_it=True):
                # a second anchor (beginTurn's agentId beside its sessionId)
                raise absent(n.kind, n.id, n.path)
        elif n.need is Need.IN_REACH:
            acts = caller.is_agent(agent_id=owner.agent_id, namespace=owner.namespace)
            if not _member(place, n, owner, acts_for_it=acts):
                if n.listed:
                    continue  # left out, as an unknown id is (the search sees none of it)
                raise absent(n.kind, n.id, n.path)
        else:
            await _api(context, n, owner)
        acting = acting or Acting(owner.agent_id, owner.namespace)
    if place is not None:
        return Acting(place.agent_id, place.namespace, place.turn_id)
    return acting


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
    must name an object of that agent that the caller may read (the grants of its kind,
    R70, R71); else NOT_FOUND, alike for another agent's object, one the caller may not
    read and none at all (R10). ``agent_id`` None: the object is of no agent yet
    (in the answer of a mutation that creates it), and no id names anything of it."""
    slots = _plan(parent, field_name, field)
    if not slots:
        return
    values = arguments if isinstance(arguments, dict) else argument_values(arguments)
    named = named_ids(parent, field_name, field, values)
    owners = await _owners(context, named)
    for n in named:
        owner = owners.get((n.kind, n.id))
        if owner is None or owner.agent_id != agent_id or not await readable(context, owner):
            what = "object" if n.kind is None else n.kind.label
            raise NotFoundError(f"no {what} {n.id} of this agent", field=n.path)
