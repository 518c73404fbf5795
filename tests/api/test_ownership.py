"""Ownership, generated from the schema (STYLE.md 14; R10-R13, R23, R50, R70, R71;
docs/security.md, "Ownership").

For every query and mutation, and every id-typed place of its arguments (``UUID`` or
``ID``, alone or in a list, nested in input objects), found by walking the schema: an
existing object of the same kind is put in place of the caller's own, one owned by
another agent, by another namespace, and (for what a turn names) in another session,
another turn, a preview turn, or staged by another open turn; the call must be refused
(``FORBIDDEN`` or ``NOT_FOUND``, as docs/security.md decides) with every table's rows
unchanged. Every Node type is read through ``node``, ``nodes`` and its typed lookup by
readers of every kind, and the three must answer alike.

The world is built once a module, in a database of its own (so that a snapshot of
every table is small). A new id field without a base value (tests/api/ownership_cases.py)
or without an ownership rule (resolvers/id_fields.py) fails this module.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import psycopg
import pytest
from graphql import GraphQLField, GraphQLObjectType
from mcp import types
from sqlalchemy.engine import URL

from resolvers.id_fields import FIELDS, ROOTS, UnmappedIdField, slots_of
from resolvers.kinds import BY_TYPE, Kind
from resolvers.ownership import check
from server import migrate
from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings
from tests.api.ownership_cases import (
    ABSENT,
    CALLERS,
    CASES,
    GRAPHQL,
    PLACES,
    RUNTIMES,
    SCHEMA,
    Case,
    Path,
    Place,
    _places,
    answer,
    base_variables,
    callers_of_field,
    coerced_arguments,
    context_as,
    document,
    expected,
    ids_in,
    kind_of,
    replaced,
    unsent_ids,
    value_at,
)
from tests.api.ownership_mcp import MCP_CASES, McpPlace, base_call, refused_at, substituted
from tests.api.ownership_reads import (
    LOOKUPS,
    NODE_CASES,
    READ_NEEDS,
    READERS,
    NodeCase,
    node_object,
    read_expected,
)
from tests.api.ownership_world import (
    OTHER_AGENT,
    OTHER_NAMESPACE,
    OTHER_TURN,
    OWN,
    PREVIEW,
    STAGED,
    World,
    distances,
    snapshot,
)
from tests.conftest import Api
from tests.live_server import served
from tests.mcp.clients import connected


@pytest.fixture(scope="module")
async def world_api(
    database_url: URL, settings: Settings, embedder: Embedder
) -> AsyncIterator[Api]:
    """An API on a database of its own, dropped afterwards."""
    name = f"agent_memory_own_{uuid.uuid4().hex[:8]}"
    admin = database_url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = database_url.set(database=name)
    migrate.upgrade(url)
    own = settings.model_copy(update={"database_url": url.render_as_string(hide_password=False)})
    database = Database(own)
    await database.connect()
    yield Api(schema=SCHEMA, database=database, embedder=embedder, settings=own)
    await database.dispose()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
async def world(world_api: Api) -> World:
    return await World(world_api).build()


@pytest.fixture(scope="module")
async def baseline(world: World) -> dict[str, dict[str, str]]:
    return {"rows": await snapshot(world.api)}


def test_every_id_place_has_an_ownership_rule() -> None:
    """Every id field of every operation goes through the ownership table
    (resolvers/id_fields.py): a field without a rule fails here (and refuses its
    operation: fail closed)."""
    unmapped = []
    for root in ROOTS:  # the subscription's behaviour: tests/e2e/test_live.py
        for field, definition in GRAPHQL.get_type(root).fields.items():  # type: ignore[union-attr]
            try:
                slots_of(root, field, definition)
            except UnmappedIdField as exc:
                unmapped.append(str(exc))
    assert not unmapped, unmapped
    assert len(PLACES) >= 40


async def test_every_id_place_has_a_base_value_the_table_lets_through(world: World) -> None:
    """The base call of each operation names the caller's own objects in every id place
    (so that every place is substituted below), and the ownership check lets it through
    (run alone: the base calls are not made, the world stays as it is)."""
    missing = []
    for place in PLACES:
        variables = base_variables(world, place.field)
        if variables is None or value_at(variables, place.path) is None:
            missing.append(f"{place.root}.{place.field}:{'.'.join(map(str, place.path))}")
    assert not missing, f"give these id places a base value: {missing}"
    for root, field in sorted({(p.root, p.field) for p in PLACES}):
        variables = base_variables(world, field)
        assert variables is not None
        definition = GRAPHQL.get_type(root).fields[field]  # type: ignore[union-attr]
        for caller in callers_of_field(root, field):
            context = context_as(world, CALLERS[caller](world))
            try:
                values = coerced_arguments(root, field, variables)
                await check(context, root, field, definition, values)
            finally:
                await context.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_a_foreign_id_is_refused_and_changes_nothing(
    world: World, baseline: dict[str, dict[str, str]], case: Case
) -> None:
    """The operation with one id replaced by an object at ``case.distance``: an object
    the caller may not read is answered exactly as an unknown id is (the same code, the
    same message, the same data: NOT_FOUND, or, in a search's list of ids, left out); the
    agent's own object out of reach is NOT_FOUND saying where. A refused call changes no
    table, and no error names an id the caller did not send."""
    variables = base_variables(world, case.place.field)
    assert variables is not None
    kind = kind_of(world, str(value_at(variables, case.place.path)))
    rule = FIELDS.get((case.place.owner, case.place.name))
    assert rule is not None, f"{case.place.owner}.{case.place.name} has no ownership rule"
    assert rule[0] in (kind, None), f"the table says {rule[0]}, the field takes {kind}"
    want = expected(case.need, kind, case.caller, case.distance)
    foreign = world.at[kind][case.distance]
    changed = replaced(variables, case.place.path, foreign)
    result = await _run(world, case, changed)
    assert not unsent_ids(result, changed), [e.message for e in result.errors or []]
    listed = isinstance(case.place.path[-1], int) and case.place.root == "Mutation"
    if want == ABSENT:
        unknown = str(uuid.uuid4())
        as_unknown = await _run(world, case, replaced(variables, case.place.path, unknown))
        assert answer(result, foreign) == answer(as_unknown, unknown)
        if listed:  # a search's ids: left out, as an unknown one is; the search ran
            assert not result.errors, result.errors
            baseline["rows"] = await snapshot(world.api)
            return
    assert result.errors, f"not refused: {result.data}"
    error = result.errors[0]
    code = "NOT_FOUND" if want == ABSENT else want
    assert (error.extensions or {}).get("code") == code, (error.message, error.extensions)
    data = (result.data or {}).get(case.place.field)
    assert data is None or data == [None], data
    now, before = await snapshot(world.api), baseline["rows"]
    baseline["rows"] = now  # the next case is judged on its own
    assert now == before, f"changed: {[t for t in now if now[t] != before[t]]}"


async def _run(world: World, case: Case, variables: dict[str, Any]) -> Any:
    return await SCHEMA.execute(
        document(case.place.root, case.place.field, variables),
        variable_values=variables,
        context_value=context_as(world, CALLERS[case.caller](world)),
    )


@pytest.fixture(scope="module")
async def mcp_servers(world: World) -> AsyncIterator[dict[str, str]]:
    """A live server for each runtime the MCP cases call as (its caller given, as an
    application that authenticates its users itself gives it)."""
    api = world.api
    async with AsyncExitStack() as stack:
        urls = {}
        for caller in RUNTIMES:
            app = create_app(
                api.settings,
                database=api.database,
                embedder=api.embedder,
                caller=CALLERS[caller](world),
            )
            urls[caller] = await stack.enter_async_context(served(app))
        yield urls


@pytest.mark.parametrize("case", MCP_CASES, ids=lambda c: f"{c[0].tool}:{c[0].key}:{c[1]}")
async def test_a_foreign_id_in_an_mcp_call_is_refused_and_changes_nothing(
    world: World,
    baseline: dict[str, dict[str, str]],
    mcp_servers: dict[str, str],
    case: tuple[McpPlace, str],
) -> None:
    """The same for MCP (memory_mcp): each id place of each tool's arguments, and the
    turn, execution, model call, session or agent a call's _meta names, holding an
    object at each distance the GraphQL field it becomes must refuse: answered as the
    same call with an unknown id is (a tool result with isError and the same error; in a
    search's ids, left out), no error naming an id the call did not send, and no table
    changed. One rule, one place: the ownership table decides for MCP calls too."""
    place, caller = case
    listed = place.many and not place.bound
    before = baseline["rows"]
    async with connected(mcp_servers[caller], "given") as mcp:
        # the tools as the base call's binding lists them: the client checks a result
        # against its tool's output schema, and a runtime of many agents lists none unbound
        bound = types.RequestParams.Meta(**base_call(world, place.tool)[1])
        await mcp.list_tools(params=types.PaginatedRequestParams(_meta=bound))
        for distance, want in refused_at(place, caller):
            foreign = world.at[place.rule[0]][distance]
            arguments, meta = substituted(world, place, foreign)
            if want == ABSENT and listed:  # the search runs and records its call
                assert await snapshot(world.api) == before
            result = await mcp.call_tool(place.tool, arguments, meta=meta)
            named = ids_in((result.structuredContent or {}).get("error"))
            assert named <= ids_in([arguments, meta]), (distance, result.structuredContent)
            if want == ABSENT:
                unknown = str(uuid.uuid4())
                arguments, meta = substituted(world, place, unknown)
                as_unknown = await mcp.call_tool(place.tool, arguments, meta=meta)
                assert _mcp_answer(result, foreign) == _mcp_answer(as_unknown, unknown)
                if listed:
                    assert not result.isError, (distance, result.structuredContent)
                    before = await snapshot(world.api)
                    continue
            assert result.isError, (distance, result.structuredContent)
            error = (result.structuredContent or {})["error"]
            assert error["code"] == ("NOT_FOUND" if want == ABSENT else want), (distance, error)
    now = await snapshot(world.api)
    baseline["rows"] = now
    assert now == before, f"changed: {[t for t in now if now[t] != before[t]]}"


def _mcp_answer(result: Any, id_: str) -> tuple[bool, str]:
    """What a caller learns from a tool result naming ``id_``: whether it is an error,
    and the error or the results found, with ``id_`` written as ``<id>``."""
    content = result.structuredContent or {}
    shown = content["error"] if result.isError else content.get("results")
    return result.isError, json.dumps(shown).replace(id_, "<id>")


def _outcome(result: Any, path: tuple[str | int, ...]) -> tuple[str, Any]:
    """("OK", the object) or (the code of the error at ``path``, None)."""
    for error in result.errors or []:
        if tuple(error.path or ()) == path:
            return (error.extensions or {}).get("code"), None
    value: Any = result.data
    for key in path:
        value = value[key]
    assert value is not None, result
    return "OK", value


@pytest.mark.parametrize("case", NODE_CASES, ids=lambda c: c.id)
async def test_node_nodes_and_the_typed_lookup_answer_alike(world: World, case: NodeCase) -> None:
    """R12, R70, R71: every Node type, read by ``node``, by ``nodes`` (beside an id the
    reader may read) and by its typed lookup, answers the same for the same reader: the
    object, or, without the grants of its kind (an output use needs the session's, as
    Execution.uses does) and for what an open turn staged, exactly what an unknown id
    answers (code and message); no error names an id the reader did not send."""
    id_ = node_object(world, case)
    want = read_expected(case.reader, READ_NEEDS[case.type_name][1], case.distance)
    readable = world.lives["A"].agent  # every reader may read agent A
    answers = await _reads(world, case, id_, readable)
    if want != "OK":
        unknown = str(uuid.uuid4())
        as_unknown = await _reads(world, case, unknown, readable)
        for path, (result, _) in answers.items():
            assert answer(result, id_) == answer(as_unknown[path][0], unknown), path
    codes = {path: outcome[0] for path, (_, outcome) in answers.items()}
    assert set(codes.values()) == {want}, codes
    for path, (result, (code, value)) in answers.items():
        assert not unsent_ids(result, {"ids": [readable, id_]}), (path, result.errors)
        if code == "OK":
            assert value["id"] == id_
            assert value["__typename"] == case.type_name.split(" ")[0]


async def _reads(
    world: World, case: NodeCase, id_: str, readable: str
) -> dict[str, tuple[Any, tuple[str, Any]]]:
    """``id_`` read through ``node``, ``nodes`` (after ``readable``) and the typed lookup:
    each answer, and its outcome at the id's place."""
    reader = READERS[case.reader](world)
    shown = "__typename id"
    node = await SCHEMA.execute(
        f"query($id: ID!) {{ node(id: $id) {{ {shown} }} }}",
        variable_values={"id": id_},
        context_value=context_as(world, reader),
    )
    nodes = await SCHEMA.execute(
        f"query($ids: [ID!]!) {{ nodes(ids: $ids) {{ {shown} }} }}",
        variable_values={"ids": [readable, id_]},
        context_value=context_as(world, reader),
    )
    assert _outcome(nodes, ("nodes", 0))[0] == "OK"
    answers = {
        "node": (node, _outcome(node, ("node",))),
        "nodes": (nodes, _outcome(nodes, ("nodes", 1))),
    }
    lookup = LOOKUPS.get(case.type_name)
    if lookup is not None:
        typed = await SCHEMA.execute(
            f"query($id: ID!) {{ {lookup}(id: $id) {{ {shown} }} }}",
            variable_values={"id": id_},
            context_value=context_as(world, reader),
        )
        answers[lookup] = (typed, _outcome(typed, (lookup,)))
    return answers


async def test_an_unknown_anchor_is_refused_before_the_other_ids(
    world: World, baseline: dict[str, dict[str, str]]
) -> None:
    """An anchor that names nothing is NOT_FOUND on its own field before any other id is
    looked at: another agent's record beside an unknown review is never named, and
    nothing changes."""
    b = world.lives["B"]
    review = str(uuid.uuid4())
    variables = {
        "input": {
            "reviewId": review,
            "decisions": [
                {
                    "candidate": {"summary": "c"},
                    "action": "DELETE",
                    "recordId": b.objects[Kind.MEMORY_RECORD],
                }
            ],
        }
    }
    result = await SCHEMA.execute(
        document("Mutation", "applyMemoryReview", variables),
        variable_values=variables,
        context_value=context_as(world, CALLERS["runtime of A"](world)),
    )
    assert result.errors and result.errors[0].extensions == {
        "code": "NOT_FOUND",
        "field": "reviewId",
    }
    assert result.errors[0].message == f"no memory review with id {review}"
    assert await snapshot(world.api) == baseline["rows"]


# --- the ids of nested fields' arguments (Agent.memoryRecords' asOf.turnId, filter.sessionId)


def id_places_of(type_name: str, field_name: str, definition: GraphQLField) -> list[Place]:
    return [
        place
        for arg, a in definition.args.items()
        for place in _places(
            type_name, field_name, a.type, (arg,), f"{type_name}.{field_name}", arg
        )
    ]


def _nested_places() -> list[tuple[str, str, str, Path, Kind]]:
    """Every id-typed place of a nested field's arguments: (object type, field, argument,
    path inside the argument's value, the kind it names), walked from the schema."""
    found = []
    for type_name, type_ in GRAPHQL.type_map.items():
        if type_name in ROOTS or not isinstance(type_, GraphQLObjectType):
            continue
        if type_name.startswith("__"):
            continue
        for field_name, definition in type_.fields.items():
            for slot in slots_of(type_name, field_name, definition):
                assert slot.kind is not None, slot
                for place in id_places_of(type_name, field_name, definition):
                    if (place.owner, place.name) == (slot.owner, slot.name):
                        found.append(
                            (type_name, field_name, place.path[0], place.path[1:], slot.kind)
                        )
    return sorted(set(found), key=str)


NESTED = _nested_places()
_FAR = (OTHER_AGENT, OTHER_NAMESPACE, "nothing")
NESTED_CASES = [
    (place, reader, distance)
    for place in NESTED
    for reader in READERS
    for distance in [*sorted(distances(place[4]) - {PREVIEW, STAGED, OTHER_TURN}), "nothing"]
]


def test_every_nested_id_place_has_an_ownership_rule() -> None:
    """The nested fields that take ids are found from the schema and each has a rule of
    its parent (slots_of raises on a nested id field without one: fail closed)."""
    assert {(t, f, p[-1]) for t, f, _, p, _ in NESTED} >= {
        ("Agent", "memoryRecords", "turnId"),
        ("Agent", "memoryRecords", "sessionId"),
    }


def _nested_expected(reader: str, distance: str) -> str:
    """NOT_FOUND for an id of another agent, as for one naming nothing (R10), and alike
    for one the reader may not read (the session's grant); else the field's own grant,
    the agent's memory (R70, R71): FORBIDDEN without it, as the reader reads the agent."""
    if distance in _FAR or read_expected(reader, {"session"}, OWN) != "OK":
        return "NOT_FOUND"
    return "OK" if read_expected(reader, {"memory"}, OWN) == "OK" else "FORBIDDEN"


@pytest.mark.parametrize(
    "case", NESTED_CASES, ids=lambda c: f"{c[0][0]}.{c[0][1]}.{c[0][2]}:{c[1]}:{c[2]}"
)
async def test_a_nested_foreign_id_is_refused(
    world: World, case: tuple[tuple[str, str, str, Path, Kind], str, str]
) -> None:
    """An id in a nested field's arguments must name an object of the agent the field is
    on that the reader may read; else it is answered as an id naming nothing (NOT_FOUND,
    the same message): another agent's turn never says what that agent knew, nor that it
    exists (R10, R70)."""
    (type_name, _, _, _, kind), reader, distance = case
    named = str(uuid.uuid4()) if distance == "nothing" else world.at[kind][distance]
    result = await _nested(world, case, named)
    want = _nested_expected(reader, distance)
    code = (result.errors[0].extensions or {}).get("code") if result.errors else "OK"
    assert code == want, (result.errors, result.data)
    if want != "OK":
        assert result.data == {"node": None} or result.data is None, result.data
    if want == "NOT_FOUND":
        unknown = str(uuid.uuid4())
        assert answer(result, named) == answer(await _nested(world, case, unknown), unknown)
    assert not unsent_ids(result, {"id": world.at[BY_TYPE[type_name]][OWN], "v": named})


async def _nested(
    world: World, case: tuple[tuple[str, str, str, Path, Kind], str, str], named: str
) -> Any:
    (type_name, field_name, arg, path, _), reader, _ = case
    value: Any = named
    for key in reversed(path):
        value = {key: value}
    arg_type = GRAPHQL.get_type(type_name).fields[field_name].args[arg].type  # type: ignore[union-attr]
    return await SCHEMA.execute(
        f"query($id: ID!, $v: {arg_type}) {{ node(id: $id) {{ ... on {type_name} {{"
        f" {field_name}(first: 5, {arg}: $v) {{ totalCount }} }} }} }}",
        variable_values={"id": world.at[BY_TYPE[type_name]][OWN], "v": value},
        context_value=context_as(world, READERS[reader](world)),
    )


async def test_a_mutation_whose_answer_names_a_foreign_turn_writes_nothing(
    world: World, baseline: dict[str, dict[str, str]]
) -> None:
    """A mutation's answer that asks for another agent's turn in a nested field is
    refused before the write: the session is not opened (R10, R71)."""
    variables = {"agent": world.lives["A"].agent, "t": world.at[Kind.TURN][OTHER_AGENT]}
    result = await SCHEMA.execute(
        "mutation($agent: ID!, $t: ID!) { createSession(input: {agentId: $agent}) {"
        " session { agent { memoryRecords(first: 5, asOf: {turnId: $t}) { totalCount } } } } }",
        variable_values=variables,
        context_value=context_as(world, CALLERS["runtime of A"](world)),
    )
    assert result.errors and (result.errors[0].extensions or {}).get("code") == "NOT_FOUND"
    assert await snapshot(world.api) == baseline["rows"]
