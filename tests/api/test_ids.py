"""Ids of one type, in and out: every id the schema takes or gives is an ID (the object's
UUID as text), so what a reader gets goes into any input as it is; a malformed one is
BAD_INPUT naming where it is, and nothing runs (R24)."""

from __future__ import annotations

from graphql import (
    GraphQLInputObjectType,
    GraphQLObjectType,
    GraphQLScalarType,
    build_schema,
    get_named_type,
)

from tests.api.scenario import ADD, Scenario, memory_config
from tests.conftest import Api
from tests.test_schema import SCHEMA_FILE

RECORDS = "query($a: ID!) { agent(id: $a) { memoryRecords(first: 10) { totalCount } } }"


def test_the_schema_has_one_id_type() -> None:
    """No UUID scalar: inputs that name an object and outputs that name one are IDs."""
    schema = build_schema(SCHEMA_FILE.read_text())
    assert "UUID" not in schema.type_map
    named = {
        (t.name, name): get_named_type(f.type).name
        for t in schema.type_map.values()
        if isinstance(t, GraphQLObjectType | GraphQLInputObjectType)
        for name, f in t.fields.items()
        if name == "id" or name.endswith("Id") or name in ("replaces", "restates", "retryOf")
    }
    # the caller's own ids (a session's externalId, a tool call's id) are its text
    own = {"externalId", "toolCallId"} | {name for (t, name) in named if t.startswith("ToolCall")}
    objects = {k: v for k, v in named.items() if k[1] not in own}
    assert len(objects) >= 45
    assert {n for n in objects.values() if n != "ID"} <= {"MemoryRecord", "Turn", "SimilarMemory"}
    scalars = {t.name for t in schema.type_map.values() if isinstance(t, GraphQLScalarType)}
    assert scalars >= {"ID", "String", "DateTime", "JSON"} and "UUID" not in scalars


async def test_an_id_read_is_an_id_written(api: Api) -> None:
    """The id a reader gets (a record's, as text) replaces that record as it is."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    first = await s.committed("Prefers email", session)
    turn = await s.turn(session)
    added = await s.add(turn, "Prefers phone", replaces=first)
    assert [m["recordId"] for m in added["memories"]][1] == first


async def test_a_malformed_id_is_bad_input_and_changes_nothing(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    turn = await s.turn(session)
    before = await api.ok(RECORDS, a=agent)
    for variables, field in (
        ({"turn": turn, "summary": "x", "replaces": "not-an-id"}, "replaces"),
        ({"turn": "12345", "summary": "x"}, "turnId"),
    ):
        result = await api.execute(ADD, **variables)
        assert result.data is None
        [error] = result.errors
        assert error.extensions == {"code": "BAD_INPUT", "field": field}, error
        assert "not an id" in error.message
    literal = (
        f'mutation {{ addMemory(input: {{turnId: "{turn}", summary: "x", replaces: "z"}}) '
        "{ memories { id } } }"
    )
    [error] = (await api.execute(literal)).errors
    assert error.extensions == {"code": "BAD_INPUT", "field": "replaces"}
    assert await api.ok(RECORDS, a=agent) == before
