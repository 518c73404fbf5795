"""Every string a client sends is checked once, at the GraphQL boundary
(resolvers/inputs.py): PostgreSQL text and jsonb hold no NUL and no lone surrogate,
so such an argument, anywhere, is BAD_INPUT naming it, before any SQL is sent.
Names are matched whole: a trailing newline is not a valid name."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    GraphQLSchema,
    get_named_type,
    is_leaf_type,
    is_required_input_field,
    parse,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolvers.inputs import unstorable_argument
from resolvers.schema import build_schema
from tests.api.scenario import CREATE_AGENT, INVOKE, START_EXECUTION, Scenario, memory_config
from tests.conftest import Api

FAIL = """
mutation($turn: ID!, $error: String) {
  failTurn(input: {turnId: $turn, error: $error}) { turn { id status } }
}"""
SESSION = """
mutation($agent: ID!, $external: String) {
  createSession(input: {agentId: $agent, externalId: $external}) { session { id } }
}"""
PUBLISH = """
mutation($agent: ID!, $config: JSON!, $label: String) {
  publishAgentVersion(input: {agentId: $agent, config: $config, label: $label}) {
    agentVersion { id }
  }
}"""


async def _world(api: Api) -> dict[str, str]:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    begun = await s.begin(session)
    return {"agent": agent, "turn": begun["turn"]["id"], "execution": begun["execution"]["id"]}


def _calls(w: dict[str, str]) -> list[tuple[str, dict[str, Any], str]]:
    config = memory_config()
    return [
        (FAIL, {"turn": w["turn"], "error": "bo\x00om"}, "error"),
        (START_EXECUTION, {"turn": w["turn"], "kind": "HELPER", "name": "he\x00lp"}, "name"),
        (INVOKE, {"execution": w["execution"], "purpose": "TURN", "model": "m\x00"}, "model"),
        (SESSION, {"agent": w["agent"], "external": "ext\x00"}, "externalId"),
        (PUBLISH, {"agent": w["agent"], "config": config, "label": "v\x001"}, "label"),
        (
            PUBLISH,
            {"agent": w["agent"], "config": memory_config(kinds=["fact", "no\x00te"])},
            "config.harness.memory.kinds[1]",
        ),
        (
            PUBLISH,
            {"agent": w["agent"], "config": {"harness": {"memory\x00": {}}}},
            "config.harness.memory\\u0000",
        ),
        (PUBLISH, {"agent": w["agent"], "config": config, "label": "v\ud8001"}, "label"),
        (
            'query($after: String) { agents(namespace: "x", first: 2, after: $after) '
            "{ edges { cursor } } }",
            {"after": "c\x00"},
            "after",
        ),
    ]


async def test_nul_or_lone_surrogate_in_any_string_argument_is_bad_input(api: Api) -> None:
    """The fields an outside tester found answering INTERNAL, JSON strings and keys, a
    lone surrogate, a query argument: BAD_INPUT naming the field, and no SQL sent."""
    world = await _world(api)
    for query, variables, field in _calls(world):
        with api.count_statements():
            message, ext = await api.error(query, **variables)
        assert ext == {"code": "BAD_INPUT", "field": field}, (message, field)
        assert api.statements == 0, field
    # nothing changed: the turn is still open and fails normally
    data = await api.ok(FAIL, turn=world["turn"], error="boom")
    assert data["failTurn"]["turn"]["status"] == "FAILED"


async def test_nul_in_a_string_literal_is_bad_input(api: Api) -> None:
    """A document's own literal may spell NUL as an escape; it is checked as well."""
    world = await _world(api)
    query = (
        "mutation($turn: ID!) {"
        ' failTurn(input: {turnId: $turn, error: "a\\u0000b"}) { turn { id } } }'
    )
    _, ext = await api.error(query, turn=world["turn"])
    assert ext == {"code": "BAD_INPUT", "field": "error"}


@pytest.mark.parametrize(
    ("ns", "name", "field"),
    [("ns-ok", "nl\n", "name"), ("bada\n", "agent", "namespace"), ("ns-ok", "a\nb", "name")],
)
async def test_names_ending_in_a_newline_are_refused(
    api: Api, ns: str, name: str, field: str
) -> None:
    """A name is matched whole: ``$`` would let a trailing newline through."""
    _, ext = await api.error(CREATE_AGENT, ns=ns, name=name, sessionless=False)
    assert (ext["code"], ext["field"]) == ("BAD_INPUT", field)


# -- every string input of the schema ----------------------------------------------------

_MINIMAL: dict[str, Any] = {
    "String": "ok",
    "ID": "ok",
    "Int": 1,
    "Float": 1.0,
    "Boolean": False,
    "JSON": {},
    "DateTime": "2026-01-01T00:00:00+00:00",
}


def _minimal(type_: GraphQLInputType) -> Any:
    """The smallest value of a type: required fields only."""
    if isinstance(type_, GraphQLNonNull):
        return _minimal(type_.of_type)
    if isinstance(type_, GraphQLList):
        return [_minimal(type_.of_type)]
    if isinstance(type_, GraphQLEnumType):
        return next(iter(type_.values))
    if isinstance(type_, GraphQLInputObjectType):
        return {
            name: _minimal(field.type)
            for name, field in type_.fields.items()
            if is_required_input_field(field)
        }
    assert isinstance(type_, GraphQLScalarType)
    return _MINIMAL[type_.name]


def _strings(type_: GraphQLInputType, path: str) -> Iterator[tuple[str, Callable[[str], Any]]]:
    """Every place of a value of ``type_`` that holds text: its path, and a function that
    builds the minimal value with that place holding the given text (in a JSON value:
    as a key and as a string)."""
    if isinstance(type_, GraphQLNonNull):
        yield from _strings(type_.of_type, path)
    elif isinstance(type_, GraphQLList):
        for at, build in _strings(type_.of_type, f"{path}[0]"):
            yield at, lambda text, build=build: [build(text)]  # type: ignore[misc]
    elif isinstance(type_, GraphQLInputObjectType):
        base = _minimal(type_)
        for name, field in type_.fields.items():
            here = f"{path}.{name}" if path else name
            for at, build in _strings(field.type, here):
                yield at, lambda text, name=name, build=build: base | {name: build(text)}  # type: ignore[misc]
    elif isinstance(type_, GraphQLScalarType) and type_.name in ("String", "ID"):
        yield path, lambda text: text
    elif isinstance(type_, GraphQLScalarType) and type_.name == "JSON":
        yield f"{path}.k", lambda text: {"k": text}
        yield f"{path}.k\\u0000", lambda text: {"k" + "\x00": text}


def _every_string_argument(schema: GraphQLSchema) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for root in (schema.query_type, schema.mutation_type):
        assert root is not None
        operation = "query" if root is schema.query_type else "mutation"
        for name, field in root.fields.items():
            if not field.args:
                continue
            declared = ", ".join(f"${a}: {arg.type}" for a, arg in field.args.items())
            passed = ", ".join(f"{a}: ${a}" for a in field.args)
            selection = "" if is_leaf_type(get_named_type(field.type)) else " { __typename }"
            document = f"{operation}({declared}) {{ {name}({passed}){selection} }}"
            minimal = {a: _minimal(arg.type) for a, arg in field.args.items()}
            for a, arg in field.args.items():
                for at, build in _strings(arg.type, "" if a == "input" else a):
                    yield document, at, minimal | {a: build}


@cache
def _places() -> tuple[GraphQLSchema, list[tuple[str, str, dict[str, Any]]]]:
    schema = build_schema()._schema
    return schema, list(_every_string_argument(schema))


def test_the_places_holding_text_include_those_found_answering_internal() -> None:
    _, places = _places()
    fields = {(document.split("{ ")[1].split("(")[0], at) for document, at, _ in places}
    for field in [
        ("failTurn", "error"),
        ("startExecution", "name"),
        ("recordInvocation", "model"),
        ("createSession", "externalId"),
        ("publishAgentVersion", "label"),
        ("publishAgentVersion", "config.k"),
        ("publishAgentVersion", "config.k\\u0000"),
        ("recordEvents", "events[0].toolCalls[0].arguments.k"),
    ]:
        assert field in fields
    assert len(places) >= 40


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    bad=st.builds(
        lambda head, bad, tail: head + bad + tail,
        st.text(max_size=5),
        st.sampled_from(["\x00", "\ud800", "\udfff"]),
        st.text(max_size=5),
    )
)
def test_every_string_argument_of_the_schema_is_checked(bad: str) -> None:
    """Every String, ID and JSON argument of every root field, at any depth of its input
    objects and lists: holding a NUL or a lone surrogate, it is found and named. A field
    added later is covered by this test as it is by the check."""
    schema, places = _places()
    for document, at, variables in places:
        built = {k: v(bad) if callable(v) else v for k, v in variables.items()}
        if at.endswith("\\u0000"):  # the key is the bad text; its value is storable
            built = {k: v("ok") if callable(v) else v for k, v in variables.items()}
        found = unstorable_argument(schema, parse(document), built, None, document)
        assert found == at, (document, at, found)
