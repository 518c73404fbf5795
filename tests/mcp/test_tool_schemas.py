"""The MCP tools and the GraphQL inputs are one definition (R3-R5, R7, R20, R62): every
argument a tool offers is a field of its mutation's input, with the field's
description and a JSON Schema of its type; the tool's description is the mutation's;
what the configuration does not offer is not there. No server is needed: the tools are
made from the schema and a configuration."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
)

from memory_mcp import prompts, tools
from server.domain.config import HarnessConfig, parse_config
from server.errors import BadInputError

LABELS = {
    "customer_id": {"number": 5, "description": "The customer the memory is about."},
    "ticket": {"number": 6, "description": "The support ticket."},
}


def _config(memory: dict[str, Any] | None = None, *, history: bool = False) -> HarnessConfig:
    harness: dict[str, Any] = {"memory": {"enabled": True, **(memory or {})}}
    if history:
        harness["history"] = {"index": "messages"}
    return parse_config({"harness": harness}, sessionless=False)


EVERYTHING = _config(
    {
        "tools": ["add_memory", "read_memory", "delete_memory"],
        "scope": {"read": ["session", "agent"], "write": ["session", "agent"]},
        "pinned": {"max_tokens": 500},
        "labels": LABELS,
        "kinds": ["fact", "event"],
    },
    history=True,
)


@pytest.fixture(scope="module")
def graphql(schema: Any) -> GraphQLSchema:
    return schema._schema  # type: ignore[no-any-return]


def _named(type_: Any) -> Any:
    while isinstance(type_, GraphQLNonNull | GraphQLList):
        type_ = type_.of_type
    return type_


def _expected_type(type_: Any) -> str:
    """The JSON type a GraphQL input type reads as."""
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    if isinstance(type_, GraphQLList):
        return "array"
    named = _named(type_)
    if isinstance(named, GraphQLEnumType) or named.name in ("String", "ID"):
        return "string"
    return {"Int": "integer", "Boolean": "boolean", "Float": "number"}[named.name]


def test_each_argument_is_its_graphql_field(graphql: GraphQLSchema) -> None:
    """With everything offered, a tool's arguments are its input's fields but the
    call's own (turn, execution, model call, idempotency key), each with the field's
    description and type; required where GraphQL requires it; the tool's description is
    the mutation's."""
    mutation = graphql.mutation_type
    assert isinstance(mutation, GraphQLObjectType)
    defined = {t.name: t for t in tools.definitions(graphql, EVERYTHING)}
    assert list(defined) == list(tools.SPECS)
    for spec in tools.SPECS.values():
        tool = defined[spec.name]
        field = mutation.fields[spec.mutation]
        assert tool.description == field.description
        graphql_input = graphql.get_type(spec.input_type)
        assert isinstance(graphql_input, GraphQLInputObjectType)
        fields = {n: f for n, f in graphql_input.fields.items() if n not in tools.CALL_FIELDS}
        schema = tool.inputSchema
        jsonschema.Draft202012Validator.check_schema(schema)
        assert list(schema["properties"]) == list(fields), spec.name
        for name, f in fields.items():
            prop = schema["properties"][name]
            assert prop["description"] == f.description, (spec.name, name)
            want = "object" if name == "labels" else _expected_type(f.type)
            assert prop["type"] == want, (spec.name, name)
            named = _named(f.type)
            if isinstance(named, GraphQLEnumType):
                assert prop["enum"] == list(named.values)
        required = [n for n, f in fields.items() if isinstance(f.type, GraphQLNonNull)]
        assert schema.get("required", []) == required, spec.name
        assert schema["additionalProperties"] is False


def test_kinds_and_labels_are_the_agents_own(graphql: GraphQLSchema) -> None:
    """R3, R4: kind is one of the declared kinds; labels is an object of the declared
    labels, each described as the agent declares it, in their numbers' order."""
    tool = {t.name: t for t in tools.definitions(graphql, EVERYTHING)}
    for name in ("search_memory", "add_memory"):
        props = tool[name].inputSchema["properties"]
        assert props["kind"]["enum"] == ["fact", "event"]
        labels = props["labels"]
        assert list(labels["properties"]) == ["customer_id", "ticket"]
        assert labels["properties"]["ticket"] == {
            "type": "string",
            "description": "The support ticket.",
        }
        assert labels["additionalProperties"] is False
        arguments = {"kind": "fact", "labels": {"customer_id": "C-1"}}
        jsonschema.validate(
            {**arguments, "summary": "s"} if name == "add_memory" else arguments,
            tool[name].inputSchema,
        )


def _arguments(graphql: GraphQLSchema, config: HarnessConfig, name: str) -> list[str]:
    by_name = {t.name: t for t in tools.definitions(graphql, config)}
    return list(by_name[name].inputSchema["properties"])


def test_what_the_configuration_does_not_offer_is_not_there(graphql: GraphQLSchema) -> None:
    """R20: scope only where the agent writes agent scope; R7: pinned only with a pin
    budget; labels only where some are declared."""
    plain = _config({"tools": ["add_memory"]})
    assert _arguments(graphql, plain, "add_memory") == ["summary", "content", "kind", "replaces"]
    assert "labels" not in _arguments(graphql, plain, "search_memory")
    agent_scope = _config({"tools": ["add_memory"], "scope": {"write": ["agent"]}})
    assert "scope" in _arguments(graphql, agent_scope, "add_memory")
    budget = _config({"tools": ["add_memory"], "pinned": {"max_tokens": 100}})
    assert "pinned" in _arguments(graphql, budget, "add_memory")


@pytest.mark.parametrize(
    ("memory", "history", "offered"),
    [
        ({}, False, ["search_memory"]),
        ({"tools": ["read_memory"]}, False, ["search_memory", "read_memory"]),
        (
            {"tools": ["add_memory", "delete_memory"]},
            True,
            ["search_memory", "add_memory", "delete_memory", "search_history"],
        ),
        ({"enabled": False, "tools": ["add_memory"]}, True, ["search_history"]),
        ({"enabled": False}, False, []),
    ],
)
def test_the_tools_offered_are_the_configurations(
    graphql: GraphQLSchema, memory: dict[str, Any], history: bool, offered: list[str]
) -> None:
    """R1, R5, R62: search_memory and harness.memory.tools when memory is enabled,
    search_history when harness.history is on; no more. The recall prompt needs memory."""
    config = _config(memory, history=history)
    assert [t.name for t in tools.definitions(graphql, config)] == offered
    recall = prompts.offered(graphql, config)
    assert [p.name for p in recall] == (["recall"] if config.memory.enabled else [])


def test_recall_prompt_is_the_recall_mutation(graphql: GraphQLSchema) -> None:
    mutation = graphql.mutation_type
    recall_input = graphql.get_type("RecallInput")
    assert isinstance(mutation, GraphQLObjectType)
    assert isinstance(recall_input, GraphQLInputObjectType)
    (prompt,) = prompts.offered(graphql, _config())
    assert prompt.description == mutation.fields["recall"].description
    assert prompt.arguments is not None
    (query,) = prompt.arguments
    assert (query.name, query.description, query.required) == (
        "query",
        recall_input.fields["query"].description,
        True,
    )


def test_a_calls_arguments_become_its_graphql_input() -> None:
    """Labels by name become LabelInputs (an integer value as text, as a stored label
    value is); the turn's fields are the host's, never an argument."""
    spec = tools.SPECS["add_memory"]
    assert tools.graphql_input(spec, {"summary": "s", "labels": {"a": 7, "b": "x"}}) == {
        "summary": "s",
        "labels": [{"name": "a", "value": "7"}, {"name": "b", "value": "x"}],
    }
    for field in tools.CALL_FIELDS:
        with pytest.raises(BadInputError) as refused:
            tools.graphql_input(spec, {"summary": "s", field: "x"})
        assert refused.value.details == {"field": field}
