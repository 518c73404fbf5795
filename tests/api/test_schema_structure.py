"""The schema's structure, as client generators and dashboards read it (issue 16):
one mutation pattern, nullable lookups, Relay's Node, connections with page info."""

from __future__ import annotations

import re

from graphql import (
    GraphQLInputObjectType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    build_schema,
)

from tests.test_schema import SCHEMA_FILE

# the payloads that wrap what their mutation wrote: (field, its type)
WRAPPING = {
    "CreateAgentPayload": ("agent", "Agent!"),
    "PublishAgentVersionPayload": ("agentVersion", "AgentVersion!"),
    "CreateSessionPayload": ("session", "Session!"),
    "CommitTurnPayload": ("turn", "Turn!"),
    "RollbackTurnPayload": ("turn", "Turn!"),
    "FailTurnPayload": ("turn", "Turn!"),
    "StartExecutionPayload": ("execution", "Execution!"),
    "RecordInvocationPayload": ("invocation", "Invocation!"),
    "DeleteAgentMemoryPayload": ("record", "MemoryRecord!"),
}
ADDED = (
    *WRAPPING,
    "Node",
    "CommitTurnInput",
    "RollbackTurnInput",
    "AddMemoryPayload",
    "DeleteMemoryPayload",
    "DeleteMemoryInput",
    "ReadMemoryInput",
    "DeleteAgentMemoryInput",
)


def _schema() -> GraphQLSchema:
    return build_schema(SCHEMA_FILE.read_text())


def _pascal(name: str) -> str:
    return name[0].upper() + name[1:]


def _plain(text: str | None) -> bool:
    """Described, and without rule numbers (those stay in the code)."""
    return bool(text) and not re.search(r"\bR\d+", text or "")


def test_every_mutation_takes_one_input_and_answers_its_own_payload() -> None:
    """``xxx(input: XxxInput!): XxxPayload!``, one payload type per mutation (so each
    can grow without breaking the others)."""
    mutation = _schema().mutation_type
    assert mutation is not None
    payloads: set[str] = set()
    for name, field in mutation.fields.items():
        assert list(field.args) == ["input"], name
        assert str(field.args["input"].type) == f"{_pascal(name)}Input!", name
        assert str(field.type) == f"{_pascal(name)}Payload!", name
        payloads.add(str(field.type))
    assert len(payloads) == len(mutation.fields)


def test_the_payloads_name_what_the_mutation_wrote() -> None:
    schema = _schema()
    for payload, (field, type_) in WRAPPING.items():
        found = schema.type_map[payload]
        assert isinstance(found, GraphQLObjectType)
        assert str(found.fields[field].type) == type_, payload


def test_root_lookups_that_can_fail_are_nullable() -> None:
    query = _schema().query_type
    assert query is not None
    for name in (
        "agent",
        "agentVersion",
        "session",
        "turn",
        "execution",
        "agentMemory",
        "historyEvent",
        "node",
    ):
        assert not isinstance(query.fields[name].type, GraphQLNonNull), name


def test_what_the_structure_adds_is_described_without_rule_numbers() -> None:
    schema = _schema()
    for name in ADDED:
        assert _plain(schema.type_map[name].description), name
    for name, field_name in [
        *((p, f) for p, (f, _) in WRAPPING.items()),
        ("DeleteAgentMemoryInput", "id"),
        ("Node", "id"),
    ]:
        found = schema.type_map[name]
        assert isinstance(found, GraphQLObjectType | GraphQLInputObjectType) or hasattr(
            found, "fields"
        )
        assert _plain(found.fields[field_name].description), (name, field_name)  # type: ignore[attr-defined]
    query = schema.query_type
    assert query is not None
    for root in ("node", "nodes"):
        field = query.fields[root]
        assert _plain(field.description), root
        assert all(_plain(a.description) for a in field.args.values()), root


def _named(type_: object) -> str:
    while hasattr(type_, "of_type"):
        type_ = type_.of_type
    return str(getattr(type_, "name", ""))


def test_a_list_with_a_paginated_twin_is_deprecated_and_names_it() -> None:
    """A list field that can grow without bound and has a connection beside it
    (``transcript`` / ``transcriptConnection``) is @deprecated, its reason naming the
    twin; the twin pages the same items."""
    twins = []
    for type_ in _schema().type_map.values():
        if not isinstance(type_, GraphQLObjectType) or type_.name.startswith("__"):
            continue
        for name, field in type_.fields.items():
            twin = type_.fields.get(f"{name}Connection")
            if twin is None:
                continue
            twins.append(f"{type_.name}.{name}")
            assert field.deprecation_reason, f"{type_.name}.{name} is not deprecated"
            assert f"{name}Connection" in field.deprecation_reason
            assert _named(twin.type).removesuffix("Connection") == _named(field.type)
            assert twin.deprecation_reason is None
    assert sorted(twins) == ["MemoryRecord.versions", "Turn.executions", "Turn.transcript"]


def test_connections_are_described_as_counted() -> None:
    """Every connection offers totalCount, and its description no longer says otherwise."""
    for type_ in _schema().type_map.values():
        if isinstance(type_, GraphQLObjectType) and type_.name.endswith("Connection"):
            assert "totalCount" in type_.fields, type_.name
            assert "no total count" not in (type_.description or ""), type_.name
