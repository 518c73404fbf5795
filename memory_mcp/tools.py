"""The tools an agent is offered over MCP, read from the GraphQL schema (R5, R20).

Each native tool is a GraphQL mutation (``search_memory`` is ``searchMemory``, its
arguments ``SearchMemoryInput``). Its MCP definition is made from that mutation: the
tool's description is the mutation's, each argument is a field of its input with the
field's description and a JSON Schema of the field's GraphQL type. So the two cannot
drift apart (tests/mcp/test_tool_schemas.py holds them side by side).

Left out are the fields the call's turn fills in (:data:`CALL_FIELDS`: the turn, the
calling execution, the model call, the idempotency key), and what the agent's
configuration does not offer: ``scope`` unless it writes agent scope (R20), ``pinned``
without a pin budget (R7), ``labels`` when it declares none. Its declared kinds and
labels become the ``kind`` enum and the ``labels`` object, each label with the
description the agent reads (R3, R4); the GraphQL input takes labels as a list of
``{name, value}``, :func:`graphql_input` turns the object into it.

Which tools: ``search_memory`` and the tools ``harness.memory.tools`` names when memory
is enabled (R1, R5), ``search_history`` when ``harness.history`` is on (R62); no more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    Undefined,
)
from mcp import types

from server.domain.config import HarnessConfig
from server.errors import BadInputError

SEARCH_HISTORY = "search_history"
# the fields of a tool's input that the call's turn fills in, never the model
CALL_FIELDS = ("turnId", "executionId", "invocationId", "idempotencyKey")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A native tool and the GraphQL mutation that runs it."""

    name: str  # as harness.memory.tools names it
    mutation: str
    input_type: str


SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("search_memory", "searchMemory", "SearchMemoryInput"),
        ToolSpec("add_memory", "addMemory", "AddMemoryInput"),
        ToolSpec("read_memory", "readMemory", "ReadMemoryInput"),
        ToolSpec("delete_memory", "deleteMemory", "DeleteMemoryInput"),
        ToolSpec(SEARCH_HISTORY, "searchHistory", "SearchHistoryInput"),
    )
}


def offered(config: HarnessConfig) -> list[ToolSpec]:
    """The tools the configuration offers, in :data:`SPECS`' order (R1, R5, R62)."""
    names = set(config.memory.tools)  # empty when memory is disabled
    if config.history is not None:
        names.add(SEARCH_HISTORY)
    return [spec for name, spec in SPECS.items() if name in names]


def _input(schema: GraphQLSchema, spec: ToolSpec) -> GraphQLInputObjectType:
    found = schema.get_type(spec.input_type)
    assert isinstance(found, GraphQLInputObjectType), spec.input_type
    return found


def _unwrapped(type_: Any) -> Any:
    return type_.of_type if isinstance(type_, GraphQLNonNull) else type_


def type_schema(type_: Any) -> dict[str, Any]:
    """The JSON Schema of a GraphQL input type (nullability aside: a field that may be
    null is one that is not required)."""
    type_ = _unwrapped(type_)
    if isinstance(type_, GraphQLList):
        return {"type": "array", "items": type_schema(type_.of_type)}
    if isinstance(type_, GraphQLEnumType):
        return {"type": "string", "enum": list(type_.values)}
    if isinstance(type_, GraphQLInputObjectType):
        return _object(type_.fields)
    assert isinstance(type_, GraphQLScalarType), type_
    scalar = {"String": "string", "Int": "integer", "Float": "number", "Boolean": "boolean"}
    if type_.name in ("ID", "UUID"):
        return {"type": "string", "format": "uuid"}
    return {"type": scalar[type_.name]} if type_.name in scalar else {}


def _required(field: GraphQLInputField) -> bool:
    return isinstance(field.type, GraphQLNonNull) and field.default_value is Undefined


def _object(fields: Mapping[str, GraphQLInputField]) -> dict[str, Any]:
    properties = {
        name: {**type_schema(f.type), **({"description": f.description} if f.description else {})}
        for name, f in fields.items()
    }
    required = [name for name, f in fields.items() if _required(f)]
    return {
        "type": "object",
        "properties": properties,
        **({"required": required} if required else {}),
        "additionalProperties": False,
    }


def _argument_fields(
    schema: GraphQLSchema, spec: ToolSpec, config: HarnessConfig
) -> dict[str, GraphQLInputField]:
    memory = config.memory
    left_out = set(CALL_FIELDS)
    if "agent" not in memory.write_scopes:
        left_out.add("scope")  # R20
    if memory.pinned_max_tokens is None:
        left_out.add("pinned")  # R7
    if not memory.labels:
        left_out.add("labels")
    return {n: f for n, f in _input(schema, spec).fields.items() if n not in left_out}


def input_schema(schema: GraphQLSchema, spec: ToolSpec, config: HarnessConfig) -> dict[str, Any]:
    """The tool's arguments as the agent's configuration offers them (module docstring)."""
    out = _object(_argument_fields(schema, spec, config))
    properties = out["properties"]
    memory = config.memory
    if "kind" in properties:  # R3
        properties["kind"]["enum"] = list(memory.kinds)
    if "labels" in properties:  # R4: by name, each with the description the agent reads
        properties["labels"] = {
            "type": "object",
            "description": properties["labels"]["description"],
            "properties": {
                name: {"type": "string", "description": label.description}
                for name, label in sorted(memory.labels.items(), key=lambda i: i[1].number)
            },
            "additionalProperties": False,
        }
    return out


def definitions(schema: GraphQLSchema, config: HarnessConfig) -> list[types.Tool]:
    """The MCP tools the configuration offers, described as their mutations are."""
    mutation = schema.mutation_type
    assert isinstance(mutation, GraphQLObjectType)
    return [
        types.Tool(
            name=spec.name,
            description=mutation.fields[spec.mutation].description,
            inputSchema=input_schema(schema, spec, config),
        )
        for spec in offered(config)
    ]


def graphql_input(spec: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments as the GraphQL input of its mutation, the turn's fields left for
    the caller to add. The GraphQL path checks everything else, with its own messages
    (an unknown argument, a value of the wrong type, an undeclared label)."""
    for name in CALL_FIELDS:
        if name in arguments:
            raise BadInputError(
                f"{name} is not an argument of {spec.name}: the turn a call runs in is the "
                "host's to name (docs/mcp.md)",
                field=name,
            )
    out = dict(arguments)
    labels = out.get("labels")
    if isinstance(labels, Mapping):  # as LabelInput takes them; a value may be an integer
        out["labels"] = [
            {"name": name, "value": str(v) if isinstance(v, int) and not isinstance(v, bool) else v}
            for name, v in labels.items()
        ]
    return out
