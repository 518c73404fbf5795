"""The cases of tests/api/test_ownership.py, generated from the schema: every id place of
every operation's arguments, the callers that make the operation, what each must be
refused for (this module's oracle, from docs/security.md "Ownership" and R10-R13, R70),
and a base call of each operation that names the caller's own objects."""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    get_named_type,
    is_leaf_type,
    parse,
)
from graphql.execution.values import get_argument_values, get_variable_values
from graphql.language import OperationDefinitionNode

from resolvers.context import make_context
from resolvers.id_fields import FIELDS, Need
from resolvers.kinds import Kind
from resolvers.schema import build_schema
from server.domain.grants import Chain, Link, Policy
from server.services.chain import Caller, RuntimeBinding
from tests.api.ownership_world import (
    CONFIG,
    OTHER_AGENT,
    OTHER_NAMESPACE,
    OTHER_SESSION,
    OTHER_TURN,
    OWN,
    PREVIEW,
    STAGED,
    World,
    distances,
)

SCHEMA = build_schema()
GRAPHQL = SCHEMA._schema
ID_SCALARS = ("UUID", "ID")
Path = tuple[str | int, ...]


# --- the schema's id places -------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    root: str  # Query or Mutation
    field: str
    path: Path  # into the variables: ("input", "decisions", 0, "recordId")
    owner: str  # the ownership table's key: the input type, or "Query.<field>"
    name: str


def _places(
    root: str, field: str, type_: Any, path: Path, owner: str, name: str
) -> Iterator[Place]:
    if isinstance(type_, GraphQLNonNull):
        yield from _places(root, field, type_.of_type, path, owner, name)
    elif isinstance(type_, GraphQLList):
        yield from _places(root, field, type_.of_type, (*path, 0), owner, name)
    elif isinstance(type_, GraphQLScalarType) and type_.name in ID_SCALARS:
        yield Place(root, field, path, owner, name)
    elif isinstance(type_, GraphQLInputObjectType):
        for inner, f in type_.fields.items():
            yield from _places(root, field, f.type, (*path, inner), type_.name, inner)


def id_places() -> list[Place]:
    found = []
    for root in ("Query", "Mutation"):
        for field, definition in GRAPHQL.get_type(root).fields.items():  # type: ignore[union-attr]
            for arg, a in definition.args.items():
                found.extend(_places(root, field, a.type, (arg,), f"{root}.{field}", arg))
    return found


PLACES = id_places()


# --- callers ------------------------------------------------------------------------------


def client(name: str, *grants: str) -> Any:
    def make(world: World) -> Caller:
        policy = Policy.parse(name, [tuple(g.format(ns=world.ns1).split(" ", 1)) for g in grants])
        return Caller(name=name, chain=Chain((Link("client", name, (policy,)),)), kind="client")

    return make


def _runtime(name: str, bound: str) -> Any:
    def make(world: World) -> Caller:
        binding = (
            RuntimeBinding(agent_id=uuid.UUID(world.lives["A"].agent))
            if bound == "agent"
            else RuntimeBinding(namespace=world.ns1)
        )
        return Caller(
            name=name, chain=Chain((Link("client", name, ()),)), kind="runtime", runtime=binding
        )

    return make


_ALL = ("SELECT", "INSERT", "UPDATE", "DELETE")
CALLERS = {
    "runtime of A": _runtime("runtime-a", "agent"),
    "runtime of NS1": _runtime("runtime-ns1", "namespace"),
    "client of NS1": client("client-ns1", *(f"{p} {{ns}}.*" for p in _ALL)),
}
# whose objects each caller may not touch (R70: the agent itself, or a grant's namespace)
FOREIGN = {
    "runtime of A": {OTHER_AGENT, OTHER_NAMESPACE},
    "runtime of NS1": {OTHER_NAMESPACE},
    "client of NS1": {OTHER_NAMESPACE},
}
# what a turn may not name of its own agent (R11-R13, R61, R64): this test's oracle
OUT_OF_REACH = {
    Kind.EXECUTION: {OTHER_SESSION, OTHER_TURN},
    Kind.INVOCATION: {OTHER_SESSION, OTHER_TURN},
    Kind.TURN: {OTHER_SESSION},
    Kind.MEMORY_RECORD: {OTHER_SESSION, PREVIEW, STAGED},
    Kind.HISTORY_EVENT: {OTHER_SESSION, PREVIEW},
}
DISTANCES = (OTHER_NAMESPACE, OTHER_AGENT, OTHER_SESSION, OTHER_TURN, PREVIEW, STAGED)
RUNTIMES = ("runtime of A", "runtime of NS1")
_CALLERS_OF = {
    Need.AGENT_ITSELF: RUNTIMES,
    Need.IN_REACH: RUNTIMES,
    Need.MANAGE_AGENT: ("client of NS1",),
}


ABSENT = "as an unknown id"  # NOT_FOUND, as the same call with an unknown id answers
# another agent's object, and what another open turn staged: for the agent acting, they
# do not exist (R10, R12)
_NOT_THERE = {OTHER_AGENT, OTHER_NAMESPACE, STAGED}


def expected(need: Need | None, kind: Kind, caller: str, distance: str) -> str | None:
    """What a call answers when the id at a place of ``need`` names an object of ``kind``
    at ``distance``: ABSENT, when the caller may not read it (docs/security.md,
    "Refusals look like absence"); NOT_FOUND saying where, for the agent's own object
    out of its turn's reach; None: not refused (not a case)."""
    if need is Need.AGENT_ITSELF:
        return ABSENT if distance in FOREIGN[caller] else None
    if need is Need.IN_REACH:
        if distance in _NOT_THERE:
            return ABSENT
        return "NOT_FOUND" if distance in OUT_OF_REACH.get(kind, set()) else None
    if distance in FOREIGN[caller] or distance == STAGED:
        return ABSENT
    return None


# --- base calls: each operation with the caller's own objects -------------------------------


def base_variables(world: World, field: str) -> dict[str, Any] | None:
    a = world.lives["A"]
    at = world.at
    record, event = at[Kind.MEMORY_RECORD][OWN], at[Kind.HISTORY_EVENT][OWN]
    tool = {"turnId": a.turn, "executionId": a.execution, "invocationId": a.invocation}
    inputs: dict[str, dict[str, Any]] = {
        "publishAgentVersion": {"agentId": a.agent, "config": CONFIG},
        "createSession": {"agentId": a.agent},
        "deleteAgentMemory": {"id": record},
        "beginTurn": {
            "sessionId": a.s1,
            "agentId": a.agent,
            "agentVersionId": a.version,
            "replayOf": a.t1,
            "retryOf": world.extra["A.failed_turn"],
        },
        "commitTurn": {"turnId": a.turn},
        "rollbackTurn": {"turnId": a.turn},
        "failTurn": {"turnId": a.turn},
        "startExecution": {
            "turnId": a.turn,
            "kind": "HELPER",
            "name": "h",
            "parentExecutionId": a.execution,
        },
        "recordInvocation": {"executionId": a.execution, "purpose": "TURN", "model": "m"},
        "addMemory": {**tool, "summary": "new", "replaces": record},
        "readMemory": {**tool, "id": record},
        "deleteMemory": {**tool, "id": record},
        "recordEvents": {
            "turnId": a.turn,
            "executionId": a.helper,
            "events": [
                {"type": "TOOL_RESULT", "toolCallId": "c1", "toolExecutionId": a.tool_execution}
            ],
        },
        "searchHistory": {**tool, "ids": [event]},
        "searchMemory": {**tool, "ids": [record, world.extra["A.agent_scope_elsewhere"]]},
        "recall": {**tool, "query": "tea"},
        "beginMemoryReview": {"turnId": a.turn},
        "compareMemoryCandidates": {"reviewId": a.review, "candidates": [{"summary": "c"}]},
        "applyMemoryReview": {
            "reviewId": a.review,
            "decisions": [{"candidate": {"summary": "c"}, "action": "REPLACE", "recordId": record}],
            "invocationId": a.review_invocation,
        },
    }
    if field in inputs:
        return {"input": inputs[field]}
    queries: dict[str, dict[str, Any]] = {
        "agent": {"id": a.agent},
        "agentVersion": {"id": a.version},
        "session": {"id": a.s1},
        "turn": {"id": a.turn},
        "execution": {"id": a.execution},
        "agentMemory": {"id": record},
        "historyEvent": {"id": event},
        "searchAgentMemory": {"agentId": a.agent, "query": "tea"},
        "searchSessionHistory": {"namespace": world.ns1, "agentId": a.agent, "query": "tea"},
        "node": {"id": a.turn},
        "nodes": {"ids": [a.turn]},
    }
    return queries.get(field)


def document(root: str, field: str, variables: dict[str, Any]) -> str:
    definition = GRAPHQL.get_type(root).fields[field]  # type: ignore[union-attr]
    declared = ", ".join(f"${n}: {definition.args[n].type}" for n in variables)
    passed = ", ".join(f"{n}: ${n}" for n in variables)
    selection = "" if is_leaf_type(get_named_type(definition.type)) else " { __typename }"
    return f"{root.lower()}({declared}) {{ {field}({passed}){selection} }}"


def value_at(variables: dict[str, Any], path: Path) -> Any:
    value: Any = variables
    for key in path:
        value = value[key] if isinstance(key, int) or key in value else None
        if value is None:
            return None
    return value


def replaced(variables: dict[str, Any], path: Path, new: str) -> dict[str, Any]:
    changed = copy.deepcopy(variables)
    target: Any = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return changed


# --- the cases --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    place: Place
    need: Need | None
    caller: str
    distance: str

    @property
    def id(self) -> str:
        where = ".".join(str(p) for p in self.place.path)
        return f"{self.place.field}:{where}:{self.caller}:{self.distance}"


def callers_for(need: Need | None, root: str) -> tuple[str, ...]:
    if need is None:
        return RUNTIMES if root == "Mutation" else tuple(CALLERS)
    return _CALLERS_OF.get(need, tuple(CALLERS))


def cases() -> list[Case]:
    """Every (operation, id place, caller, distance) that must be refused. The kind of
    each place is the ownership table's (the test checks it against the object the base
    call names); a place without a rule gets every distance and no expectation (it
    fails: the server refuses it as INTERNAL)."""
    out = []
    for place in PLACES:
        rule = FIELDS.get((place.owner, place.name))
        kind, need = rule if rule else (None, None)
        for caller in callers_for(need, place.root):
            for distance in DISTANCES:
                if rule is None or (
                    distance in distances(kind or Kind.TURN)
                    and expected(need, kind or Kind.TURN, caller, distance) is not None
                ):
                    out.append(Case(place, need, caller, distance))
    return out


CASES = cases()


def coerced_arguments(root: str, field: str, variables: dict[str, Any]) -> dict[str, Any]:
    """The field's arguments as the executor coerces them."""
    parsed = parse(document(root, field, variables))
    operation = parsed.definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    coerced = get_variable_values(GRAPHQL, operation.variable_definitions, variables)
    assert not isinstance(coerced, list), coerced
    node = operation.selection_set.selections[0]
    assert isinstance(node, FieldNode)
    return get_argument_values(GRAPHQL.get_type(root).fields[field], node, coerced)  # type: ignore[union-attr]


def context_as(world: World, caller: Caller) -> Any:
    return make_context(
        database=world.api.database,
        embedder=world.api.embedder,
        settings=world.api.settings,
        identity=caller,
    )


def callers_of_field(root: str, field: str) -> tuple[str, ...]:
    needs = {c.need for c in CASES if c.place.root == root and c.place.field == field}
    return tuple(dict.fromkeys(c for need in needs for c in callers_for(need, root)))


def kind_of(world: World, id_: str) -> Kind:
    for kind, found in world.at.items():
        if id_ in found.values():
            return kind
    a = world.lives["A"]
    special = {
        a.helper: Kind.EXECUTION,
        a.tool_execution: Kind.EXECUTION,
        a.t1: Kind.TURN,
        world.extra["A.failed_turn"]: Kind.TURN,
        world.extra["A.agent_scope_elsewhere"]: Kind.MEMORY_RECORD,
        a.review_invocation: Kind.INVOCATION,
    }
    return special[id_]


# --- what an answer tells -------------------------------------------------------------------

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def ids_in(value: Any) -> set[str]:
    """The ids (UUIDs, lowercased) anywhere in ``value``."""
    return {i.lower() for i in _UUID.findall(json.dumps(value))}


def unsent_ids(result: Any, variables: dict[str, Any]) -> list[str]:
    """The ids an answer's errors name that the caller did not send (docs/security.md:
    an error names only what the caller gave)."""
    named = ids_in([(e.message, e.extensions or {}) for e in result.errors or []])
    return sorted(named - ids_in(variables))


def answer(result: Any, id_: str) -> tuple[Any, ...]:
    """What a caller learns from an answer to a call naming ``id_``: each error's code,
    message and details, and the data, with ``id_`` itself written as ``<id>``."""
    errors = tuple(
        (tuple(e.path or ()), e.message.replace(id_, "<id>"), json.dumps(e.extensions or {}))
        for e in result.errors or []
    )
    return errors, json.dumps(result.data).replace(id_, "<id>")
